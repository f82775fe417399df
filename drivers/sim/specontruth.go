package sim

import (
	"math"
	"slices"
)

// The contention of SpeCon's containers, a first-principles model with
// its constants from the paper's testbed and from its baseline's
// measurements (README.md, "SpeCon's containers"). It knows nothing of
// SpeCon's categories or scores.
const (
	// speconCoreMHz is a core of the M510's Xeon D-1548, 2.0 GHz
	// (§VI-A1); a node of speconNodeCPU MHz has 16.
	speconCoreMHz = 2000
	// speconUsable is the share of a worker's CPU the containers get
	// together: "the resource usage tops at around 80% since Kubernetes
	// reserves part of them for the system itself" (§VI-C2, Figs. 10–11).
	speconUsable = 0.8
	// speconParallel is the parallel fraction p of a container's step
	// (Amdahl): fitted to the default scheduler's measurements
	// (testdata/specon-fit.py).
	speconParallel = 0.975
	// speconInterference is κ, the slowdown each co-running container
	// adds through the caches and memory bandwidth they share: fitted
	// with speconParallel; the fit finds none.
	speconInterference = 0.0
)

// SharedCPUTruth is a one-container training job whose container shares
// its worker with the other containers there, as the containers of
// SpeCon's evaluation do (no CPU limits). Alone on a worker it takes Alone
// seconds a step on all the worker's usable cores. Among n containers
// training on the worker it takes Alone · Contention(n, P) (see there), P
// the worker's usable cores. Its loss falls exponentially over its
// progress x = step / Steps: B2 + B0 · exp(−x / Tau).
type SharedCPUTruth struct {
	Model string
	Alone float64
	Steps float64
	// Parallel is the parallel fraction of a step, in (0, 1]; 0 means 1.
	Parallel float64
	// Interference is κ ≥ 0, the slowdown each co-runner adds.
	Interference float64
	B0, B2       float64
	Tau          float64
}

// StepTime is the step time alone; the simulator applies the contention.
func (t *SharedCPUTruth) StepTime(int, []int) float64 { return t.Alone }

// TotalSteps is Steps.
func (t *SharedCPUTruth) TotalSteps() float64 { return t.Steps }

// Epoch counts a tenth of the job as an epoch.
func (t *SharedCPUTruth) Epoch(step float64) float64 { return 10 * step / t.Steps }

// Loss is B2 + B0 · exp(−x / Tau).
func (t *SharedCPUTruth) Loss(step float64) float64 {
	return t.B2 + t.B0*math.Exp(-step/t.Steps/t.Tau)
}

// Contention is how many times longer a step takes among n containers
// training on a worker of cores usable cores than alone there:
//
//   - CPU: the kernel shares the cores equally among the containers'
//     threads (CFS, no limits), so each container runs on c = cores / n;
//   - Amdahl: a step on c ≥ 1 cores takes (1 − p) + p / c of its one-core
//     time; below one core it time-slices one core, 1 / c. So alone it
//     takes (1 − p) + p / cores, and co-runners slow it by less than n
//     when p < 1: a worker's throughput grows with n, concavely;
//   - shared caches and memory bandwidth: each co-runner evicts lines the
//     others reuse and takes memory bandwidth, a factor 1 + κ (n − 1)
//     (linear in the co-runners, the first-order model).
//
// It is 1 for n ≤ 1. With p = 1 and κ = 0 it is n, processor sharing.
func (t *SharedCPUTruth) Contention(n int, cores float64) float64 {
	if n <= 1 {
		return 1
	}
	p := t.Parallel
	if p <= 0 || p > 1 {
		p = 1
	}
	work := func(c float64) float64 {
		if c < 1 {
			return 1 / c
		}
		return (1 - p) + p/c
	}
	return work(cores/float64(n)) / work(max(cores, 1)) * (1 + t.Interference*float64(n-1))
}

// sharedStepTime is a SharedCPUTruth job's step time among the
// SharedCPUTruth jobs that train on its node now (not those restarting;
// a restarting job counts itself, as it will train among them).
func (s *Sim) sharedStepTime(j *job, t *SharedCPUTruth) float64 {
	node := slices.IndexFunc(j.perNode, func(w int) bool { return w > 0 })
	n := 0
	for _, o := range s.live {
		if _, ok := o.truth.(*SharedCPUTruth); !ok || !o.running() || o.restartTo > s.now || node >= len(o.perNode) || o.perNode[node] == 0 {
			continue
		}
		n++
	}
	if j.restartTo > s.now {
		n++
	}
	cores := float64(s.cfg.CPU) / speconCoreMHz * speconUsable
	return t.Alone * t.Contention(n, cores)
}
