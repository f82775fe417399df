package sim

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/caravan-sched/caravan/structs"
)

// SpeCon's testbed (§VI-A1 of ../shared/papers/004_4e1d1f6c0cd4448a.txt):
// CloudLab M510 workers, "two 8-core Intel Xeon D-1548 at 2.0 GHz" (16
// cores) and 64 GB each.
const (
	speconNodeCPU      = 16 * 2000
	speconNodeMemoryMB = 65536
	// speconTaskCPU is what a container reserves: little, as the paper's
	// containers set no limit, so that reservations never keep a job off
	// a worker and contention decides speed (SharedCPUTruth).
	speconTaskCPU = 500
	// speconNoise is the relative noise of the progress trainers report
	// in this workload (assumed; see SpeconFixedWorkload).
	speconNoise = 0.001
)

// speconModels are Table II's five models. The paper gives no per-model
// times. The relative lengths (steps of 1 s alone) are assumed: VAE 200,
// GRU 260, Bidirectional-RNN 300, RNN 180, Dynamic RNN 220; the scale
// (speconScale) and the contention constants (speconParallel,
// speconInterference) are fitted to the paper's measurements of its
// baseline, the default scheduler, never to SpeCon's
// (testdata/specon-fit.py; README.md). Loss curves are assumed too (the
// paper plots none): they flatten within the first half of a job, so that
// Algorithm 1 finds them converged while they still run.
var speconModels = []SharedCPUTruth{
	speconModel("vae", 200, 0.8, 0.2, 0.08),
	speconModel("gru", 260, 0.9, 0.1, 0.1),
	speconModel("birnn", 300, 1.5, 0.3, 0.1),
	speconModel("rnn", 180, 1.2, 0.3, 0.08),
	speconModel("dynamic-rnn", 220, 1.0, 0.25, 0.09),
}

// speconScale multiplies the models' relative lengths (fitted).
const speconScale = 1.1

// speconModel is a model of steps·speconScale steps of 1 s alone, with
// the fitted contention and the loss B2 + B0·exp(−x/tau).
func speconModel(name string, steps, b0, b2, tau float64) SharedCPUTruth {
	return SharedCPUTruth{Model: name, Alone: 1, Steps: math.Round(steps * speconScale), B0: b0, B2: b2, Tau: tau,
		Parallel: speconParallel, Interference: speconInterference}
}

// speconArrival is a container of model m, the i-th job, arriving at at.
func speconArrival(i int, m SharedCPUTruth, at float64) Arrival {
	truth := m
	j := &structs.Job{
		ID:   fmt.Sprintf("%s-%02d", m.Model, i),
		Meta: map[string]string{"model": m.Model},
		Training: &structs.Training{
			Architecture: structs.ArchitectureAllReduce, Mode: structs.ModeSync,
			GlobalBatchSize: 128, StepsPerEpoch: int(m.Steps / 10),
			Convergence: &structs.Convergence{MaxEpochs: 10},
		},
		Elastic: &structs.Elastic{Workers: structs.Bounds{Min: 1, Max: 1}},
		Worker:  &structs.Role{Driver: "sim", Resources: &structs.Resources{CPU: speconTaskCPU, MemoryMB: 2048}},
	}
	j.Canonicalize()
	return Arrival{Time: at, Job: j, RequestWorkers: 1, Truth: &truth}
}

// SpeconFixedWorkload is SpeCon's fixed schedule (§VI-B): n VAE
// containers (20 in the paper) submitted one every gap seconds (50), on
// M510 workers (run it on -cluster 4x0, the paper's Cluster 1). Each
// container is one worker task; trainers report their loss with 0.1%
// noise (assumed: at the simulator's default 5%, the 1% gain threshold
// of Algorithm 1 would see only noise).
func SpeconFixedWorkload(n int, gap float64, _ uint64) *Workload {
	w := &Workload{Name: fmt.Sprintf("specon-fixed-%d", n), NodeCPU: speconNodeCPU, NodeMemoryMB: speconNodeMemoryMB, Noise: speconNoise}
	for i := range n {
		w.Arrivals = append(w.Arrivals, speconArrival(i, speconModels[0], float64(i)*gap))
	}
	return w
}

// SpeconRandomWorkload is SpeCon's random schedule with multiple models
// (§VI-C2, §VI-D): n containers of models drawn uniformly from Table II,
// submitted at times drawn uniformly from [0, span] (20 in [0, 300] and
// 30 in [0, 600] on 4 workers; 50 in [0, 1200] on 8 workers, Fig. 12).
// Models and times are drawn from seed.
func SpeconRandomWorkload(n int, span float64, seed uint64) *Workload {
	rng := rand.New(rand.NewPCG(seed, 0x5bec))
	w := &Workload{Name: fmt.Sprintf("specon-random-%d", n), NodeCPU: speconNodeCPU, NodeMemoryMB: speconNodeMemoryMB, Noise: speconNoise}
	type draw struct {
		at float64
		m  int
	}
	draws := make([]draw, n)
	for i := range draws {
		draws[i] = draw{at: math.Round(rng.Float64() * span), m: rng.IntN(len(speconModels))}
	}
	slices.SortStableFunc(draws, func(a, b draw) int { return cmp.Compare(a.at, b.at) })
	for i, d := range draws {
		w.Arrivals = append(w.Arrivals, speconArrival(i, speconModels[d.m], d.at))
	}
	return w
}
