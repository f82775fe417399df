package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/caravan-sched/caravan/structs"
)

// SubtaskTruth is a job whose every iteration is a computation subtask
// and a communication subtask, Harmony's model: with w workers, each
// computes for CPU1/w seconds of an iteration (a node with k of them for
// k times that), and the job communicates for Net seconds. Alone it takes
// their sum; jobs sharing nodes overlap (see Sim's co-location).
type SubtaskTruth struct {
	// App names the workload the job stands for (MLR, NMF, LDA, Lasso).
	App        string
	CPU1, Net  float64
	Iterations float64
	// B are the loss curve's 1/(B0·k + B1) + B2.
	B [3]float64
}

// Subtasks returns a worker's computation and the job's communication in
// an iteration with workers workers: what its samples report as cpu_s and
// net_s.
func (t *SubtaskTruth) Subtasks(workers int) (cpu, net float64) {
	return t.CPU1 / float64(max(workers, 1)), t.Net
}

// StepTime is an iteration alone: its busiest node's computation, then
// its communication.
func (t *SubtaskTruth) StepTime(_ int, workersPerNode []int) float64 {
	_, workers := shape(workersPerNode)
	if workers == 0 {
		return math.Inf(1)
	}
	cpu, net := t.Subtasks(workers)
	return cpu*float64(slices.Max(workersPerNode)) + net
}

func (t *SubtaskTruth) TotalSteps() float64        { return t.Iterations }
func (t *SubtaskTruth) Epoch(step float64) float64 { return step / 10 }
func (t *SubtaskTruth) Loss(step float64) float64 {
	return 1/(t.B[0]*step+t.B[1]) + t.B[2]
}

// harmonyApps are the dissertation's four workloads as subtask shapes:
// the computation of an iteration on one node and its communication, in
// seconds, and the iterations to train. The dissertation's Table 4.1 was
// not available to us: these are assumptions that span what its text
// describes, from CPU-bound (MLR, balanced at 10 nodes) to network-bound
// (LDA, balanced at 1).
var harmonyApps = []SubtaskTruth{
	{App: "mlr", CPU1: 40, Net: 4, Iterations: 300},
	{App: "lasso", CPU1: 30, Net: 6, Iterations: 300},
	{App: "nmf", CPU1: 12, Net: 6, Iterations: 400},
	{App: "lda", CPU1: 6, Net: 6, Iterations: 400},
}

// HarmonyWorkload returns n jobs of the four Harmony workloads, in turn
// with ±25% drawn around their shapes, arriving with exponential gaps of
// mean meanGap seconds. Each is a PS job of up to 16 workers and servers
// that needs no GPU, sized to share a node with others.
func HarmonyWorkload(n int, meanGap float64, seed uint64) *Workload {
	rng := rand.New(rand.NewPCG(seed, 0x4a12))
	w := &Workload{Name: fmt.Sprintf("harmony-%d", n)}
	at := 0.0
	for i := range n {
		if i > 0 {
			at += rng.ExpFloat64() * meanGap
		}
		jitter := func() float64 { return 0.75 + 0.5*rng.Float64() }
		truth := harmonyApps[i%len(harmonyApps)]
		truth.CPU1 *= jitter()
		truth.Net *= jitter()
		truth.Iterations = math.Round(truth.Iterations * jitter())
		truth.B = [3]float64{0.01, 1, 0.05}
		j := &structs.Job{
			ID:   fmt.Sprintf("%s-%03d", truth.App, i),
			Meta: map[string]string{"application": truth.App},
			Training: &structs.Training{
				Architecture: structs.ArchitecturePS, Mode: structs.ModeSync,
				GlobalBatchSize: 1024, StepsPerEpoch: 10,
				Convergence: &structs.Convergence{MaxEpochs: int(truth.Iterations/10) + 1},
			},
			Elastic: &structs.Elastic{Workers: structs.Bounds{Min: 1, Max: 16}, ParameterServers: &structs.Bounds{Min: 1, Max: 16}},
			Worker:  &structs.Role{Driver: "sim", Resources: &structs.Resources{CPU: 2000, MemoryMB: 4096}},
		}
		j.Canonicalize()
		t := truth
		w.Arrivals = append(w.Arrivals, Arrival{Time: math.Round(at), Job: j, RequestPS: 4, RequestWorkers: 4, Truth: &t})
	}
	return w
}

// subtaskLoad is what subtask jobs put on one node per iteration cycle:
// Σ computation, Σ communication, and the longest single job's own
// computation plus communication.
type subtaskLoad struct {
	cpu, net, own float64
}

// time is the node's cycle: the busier resource, or the longest job's
// own iteration (eq. 4.1 per node).
func (l subtaskLoad) time() float64 { return math.Max(math.Max(l.cpu, l.net), l.own) }

// loads returns every node's subtask load from the jobs training now;
// with restarting, also from those restarting, which hold their nodes
// and will train on them until the next change. It is nil without
// subtask jobs, which is every workload but Harmony's.
func (s *Sim) loads(restarting bool) []subtaskLoad {
	var out []subtaskLoad
	for _, j := range s.live {
		t, ok := j.truth.(*SubtaskTruth)
		if !ok || !j.running() || !restarting && j.restartTo > s.now {
			continue
		}
		if out == nil {
			out = make([]subtaskLoad, len(s.nodes))
		}
		_, workers := shape(j.perNode)
		cpu, net := t.Subtasks(workers)
		for i, w := range j.perNode {
			if w > 0 {
				l := &out[i]
				c := cpu * float64(w)
				l.cpu += c
				l.net += net
				l.own = math.Max(l.own, c+net)
			}
		}
	}
	return out
}

// colocatedStepTime is a subtask job's iteration among the jobs it shares
// nodes with: the slowest of its nodes' cycles, and at least its own
// iteration alone (a job restarting counts in no node's load). On a
// group's nodes this is the group's iteration time, eq. 4.1.
func (s *Sim) colocatedStepTime(j *job, loads []subtaskLoad) float64 {
	t := j.truth.StepTime(j.ps, j.perNode)
	for i, w := range j.perNode {
		if w > 0 && loads != nil {
			t = math.Max(t, loads[i].time())
		}
	}
	if t == 0 {
		return math.Inf(1)
	}
	return t
}

// subtaskUtilisation is the cluster's CPU and network utilisation by
// subtask jobs from now to the next change of placements: per node, Σ
// computation and Σ communication over the node's cycle, averaged over
// every node (idle ones count 0). Jobs restarting count as training.
func (s *Sim) subtaskUtilisation() (cpu, net float64) {
	loads := s.loads(true)
	for _, l := range loads {
		if t := l.time(); t > 0 {
			cpu += l.cpu / t
			net += l.net / t
		}
	}
	n := float64(max(len(s.nodes), 1))
	return cpu / n, net / n
}
