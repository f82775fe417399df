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
	// speconDemand is the CPU a training container keeps busy when it
	// runs alone: the whole worker (assumed: PyTorch and TensorFlow run as
	// many intra-op threads as there are cores), so that two containers
	// on a worker each train at half speed.
	speconDemand = speconNodeCPU
	// speconNoise is the relative noise of the progress trainers report
	// in this workload (assumed; see SpeconFixedWorkload).
	speconNoise = 0.001
)

// SharedCPUTruth is a one-container training job whose container shares
// its node's CPU with the others there, as the containers of SpeCon's
// evaluation do: alone it takes StepTime per step and keeps Demand MHz
// busy; with others on its node, each step takes Alone · max(1,
// Σ Demand / node CPU) (processor sharing), counting the jobs that train
// there now (not those restarting). Its loss falls exponentially over its
// progress x = step / Steps: B2 + B0 · exp(−x / Tau).
type SharedCPUTruth struct {
	Model  string
	Alone  float64
	Demand int
	Steps  float64
	B0, B2 float64
	Tau    float64
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

// sharedStepTime is a SharedCPUTruth job's step time among the jobs that
// train on its node now.
func (s *Sim) sharedStepTime(j *job, t *SharedCPUTruth) float64 {
	node := slices.IndexFunc(j.perNode, func(w int) bool { return w > 0 })
	demand := 0
	for _, o := range s.live {
		ot, ok := o.truth.(*SharedCPUTruth)
		if !ok || !o.running() || o.restartTo > s.now || node >= len(o.perNode) || o.perNode[node] == 0 {
			continue
		}
		demand += ot.Demand
	}
	if j.restartTo > s.now {
		demand += t.Demand // a restarting job will train among them
	}
	return t.Alone * max(1, float64(demand)/float64(max(s.cfg.CPU, 1)))
}

// speconModels are Table II's five models. The paper gives no per-model
// times; the step counts (1 s steps alone) are assumed: the VAE's so that
// the fixed schedule's average completion time under fifo is near the
// paper's DS (275 s, §VI-B), the others so that the average work (232 s)
// fits the random schedules' makespans (1421 s for 20 jobs and 1760 s for
// 30 on 4 workers, 2070 s for 50 on 8, §VI-C2). Loss curves are assumed
// too (the paper plots none): they flatten within the first half of a
// job, so that Algorithm 1 finds them converged while they still run.
var speconModels = []SharedCPUTruth{
	{Model: "vae", Alone: 1, Demand: speconDemand, Steps: 200, B0: 0.8, B2: 0.2, Tau: 0.08},
	{Model: "gru", Alone: 1, Demand: speconDemand, Steps: 260, B0: 0.9, B2: 0.1, Tau: 0.1},
	{Model: "birnn", Alone: 1, Demand: speconDemand, Steps: 300, B0: 1.5, B2: 0.3, Tau: 0.1},
	{Model: "rnn", Alone: 1, Demand: speconDemand, Steps: 180, B0: 1.2, B2: 0.3, Tau: 0.08},
	{Model: "dynamic-rnn", Alone: 1, Demand: speconDemand, Steps: 220, B0: 1.0, B2: 0.25, Tau: 0.09},
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
// (§VI-C2): n containers of models drawn uniformly from Table II,
// submitted at times drawn uniformly from [0, span] (20 in [0, 300] and
// 30 in [0, 600] on 4 workers; 50 on 8 workers, whose span the paper does
// not give: 600 assumed). Models and times are drawn from seed.
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
