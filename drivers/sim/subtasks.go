package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/caravan-sched/caravan/structs"
)

// SubtaskTruth is a job whose every iteration is a computation subtask
// and a communication subtask, Harmony's model: on m nodes, each with one
// worker and one server of the job, an iteration computes for CPU1/m
// seconds and communicates for Net seconds. Alone it takes their sum;
// jobs sharing nodes overlap (see Sim's co-location).
type SubtaskTruth struct {
	// App names the workload the job stands for (MLR, NMF, LDA, Lasso).
	App        string
	CPU1, Net  float64
	Iterations float64
	// B are the loss curve's 1/(B0·k + B1) + B2.
	B [3]float64
}

// Subtasks returns the computation and communication of an iteration on
// m nodes.
func (t *SubtaskTruth) Subtasks(m int) (cpu, net float64) {
	return t.CPU1 / float64(max(m, 1)), t.Net
}

// StepTime is an iteration alone on the nodes that hold workers.
func (t *SubtaskTruth) StepTime(_ int, workersPerNode []int) float64 {
	m := 0
	for _, w := range workersPerNode {
		if w > 0 {
			m++
		}
	}
	if m == 0 {
		return math.Inf(1)
	}
	cpu, net := t.Subtasks(m)
	return cpu + net
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

// loads returns every node's subtask load from the jobs running now.
func (s *Sim) loads() []subtaskLoad {
	out := make([]subtaskLoad, len(s.nodes))
	for _, j := range s.live {
		t, ok := j.truth.(*SubtaskTruth)
		if !ok || !j.running() {
			continue
		}
		cpu, net := t.Subtasks(workerNodes(j.perNode))
		for i, w := range j.perNode {
			if w > 0 {
				l := &out[i]
				l.cpu += cpu
				l.net += net
				l.own = math.Max(l.own, cpu+net)
			}
		}
	}
	return out
}

func workerNodes(perNode []int) int {
	m := 0
	for _, w := range perNode {
		if w > 0 {
			m++
		}
	}
	return m
}

// colocatedStepTime is a subtask job's iteration among the jobs it shares
// nodes with: the slowest of its nodes' cycles. On a group's nodes this is
// the group's iteration time, eq. 4.1.
func (s *Sim) colocatedStepTime(j *job, loads []subtaskLoad) float64 {
	t := 0.0
	for i, w := range j.perNode {
		if w > 0 {
			t = math.Max(t, loads[i].time())
		}
	}
	if t == 0 {
		return math.Inf(1)
	}
	return t
}

// subtaskUtilisation is the cluster's CPU and network utilisation by
// subtask jobs now: per node, Σ computation and Σ communication over the
// node's cycle, averaged over every node (idle ones count 0).
func (s *Sim) subtaskUtilisation() (cpu, net float64) {
	loads := s.loads()
	for _, l := range loads {
		if t := l.time(); t > 0 {
			cpu += l.cpu / t
			net += l.net / t
		}
	}
	n := float64(max(len(loads), 1))
	return cpu / n, net / n
}
