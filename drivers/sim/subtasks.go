package sim

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/caravan-sched/caravan/structs"
)

// SubtaskTruth is a job whose every iteration is a computation subtask
// and a communication subtask, Harmony's model: with w workers, each
// computes for CPU1/w seconds of an iteration (a node with k of them for
// k times that), and the job communicates for Net seconds. Alone it takes
// their sum; jobs sharing nodes overlap (see Sim's co-location).
type SubtaskTruth struct {
	// ID is the job's ID in the workload; App names the application it
	// stands for (mlr, nmf, lda, lasso), Dataset its dataset and Setting
	// its hyper-parameter setting (0–9).
	ID, App, Dataset string
	Setting          int
	CPU1, Net        float64
	// CV is the relative standard deviation of its iterations, its app's
	// in Table 2.1 (see harmonytruth.go).
	CV         float64
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

// HarmonyDoP is the DoP Table 2.1's iteration times are taken to be
// measured at: §4.4.2 measures the workload's statistics "using DoP 16 for
// all jobs" (Figure 4.9), and the table gives no DoP of its own.
const HarmonyDoP = 16

// harmonyApp is one of the dissertation's four applications as the
// workload builds it: its iteration at HarmonyDoP on its first dataset
// (Table 2.1), the share of that iteration spent computing, and its two
// datasets' input and model sizes (Table 4.1).
type harmonyApp struct {
	App string
	// Iteration is Table 2.1's iteration time in seconds, and Std its
	// standard deviation over iterations.
	Iteration, Std float64
	// CPUShare is T_cpu/(T_cpu + T_net) at HarmonyDoP, an assumption that
	// follows the text's orderings (see HarmonyWorkload).
	CPUShare float64
	// Datasets are Table 4.1's (name, input GB, model GB); the first is
	// the one Table 2.1 was measured on.
	Datasets [2]harmonyDataset
}

type harmonyDataset struct {
	Name           string
	InputGB, Model float64
}

// harmonyApps are the dissertation's four applications. Table 4.1 prints
// MLR's and Lasso's synthetic datasets as one cell "78.4, 155.0" / "12.0,
// 24.0"; both apps get both sizes.
var harmonyApps = []harmonyApp{
	{App: "mlr", Iteration: 32.4, Std: 0.7, CPUShare: 0.70, Datasets: [2]harmonyDataset{{"synthetic-78g", 78.4, 12.0}, {"synthetic-155g", 155.0, 24.0}}},
	{App: "nmf", Iteration: 48.3, Std: 1.0, CPUShare: 0.60, Datasets: [2]harmonyDataset{{"netflix64x", 45.6, 1.0}, {"netflix128x", 91.2, 5.0}}},
	{App: "lasso", Iteration: 28.9, Std: 0.5, CPUShare: 0.40, Datasets: [2]harmonyDataset{{"synthetic-78g", 78.4, 12.0}, {"synthetic-155g", 155.0, 24.0}}},
	{App: "lda", Iteration: 94.5, Std: 1.8, CPUShare: 0.30, Datasets: [2]harmonyDataset{{"pubmed", 4.3, 2.1}, {"nytimes", 0.6, 1.1}}},
}

// shape returns the app's subtasks on dataset d before hyper-parameters:
// CPU1 (one node's computation of an iteration, T_cpu·DoP by eq. 4.2) and
// Net. The first dataset gives Table 2.1's iteration at HarmonyDoP; the
// second scales computation by its input size and communication by its
// model size relative to the first.
func (a harmonyApp) shape(d int) (cpu1, net float64) {
	cpu1 = a.Iteration * a.CPUShare * HarmonyDoP
	net = a.Iteration * (1 - a.CPUShare)
	base, ds := a.Datasets[0], a.Datasets[d]
	return cpu1 * ds.InputGB / base.InputGB, net * ds.Model / base.Model
}

// Harmony workload constants (see HarmonyWorkload).
const (
	// harmonySettings is the number of hyper-parameter settings per
	// (application, dataset).
	harmonySettings = 10
	// harmonyIterations is the iterations a job of the median setting
	// needs to reach its convergence threshold.
	harmonyIterations = 100
	// harmonyLossB1, harmonyLossB2 and harmonyThreshold shape the loss
	// curve 1/(B0·k + B1) + B2; a job has converged when its loss is within
	// harmonyThreshold of B2.
	harmonyLossB1, harmonyLossB2, harmonyThreshold = 1.0, 0.05, 0.01
	// m4.2xlarge: 8 vCPUs of 2.3 GHz and 32 GiB (§4.4.2).
	harmonyNodeCPU, harmonyNodeMemoryMB = 8 * 2300, 32768
)

// HarmonyJobs is the size of the dissertation's workload: 4 applications ×
// 2 datasets × 10 hyper-parameter settings (§4.4.2).
const HarmonyJobs = 80

// HarmonyWorkload returns n jobs of the dissertation's evaluation workload
// (§4.4.2): the 80 combinations of 4 applications (MLR, NMF, Lasso, LDA),
// their 2 datasets each (Table 4.1) and 10 hyper-parameter settings, in an
// order shuffled by seed, again with fresh settings when n > 80. meanGap 0
// submits them all at once, as the main experiment does (Figure 4.15: "0
// arrival time means that we submit all jobs at once"); otherwise gaps are
// exponential with that mean. Deterministic for a seed.
//
// Subtask shapes. Table 2.1 gives iteration times (NMF 48.3 s, LDA 94.5 s,
// MLR 32.4 s, Lasso 28.9 s) without a DoP; we take them at HarmonyDoP (16),
// on each app's first dataset. How an iteration splits into computation
// and communication the text gives only as orderings: chapter 3 ranks
// compute intensity MLR > NMF > Lasso > LDA (Table 3.4's optimal worker
// shares, 27, 23, 20 and 18 workers of 32; "MLR is more compute-intensive
// than LDA", §3.1), and §4.1 calls NMF relatively CPU-heavy and Lasso
// relatively network-heavy (Figure 4.3, which runs NMF, MLR and Lasso, not
// LDA). Read together, Lasso is network-bound at DoP 16 and LDA, below it
// in compute intensity, is more so; the two statements conflict only if
// "network-heavy" is read as "the most network-heavy", which Figure 4.3
// cannot say as it has no LDA. So the CPU shares of an iteration at DoP
// 16 are MLR 0.70, NMF 0.60 (CPU-bound), Lasso 0.40, LDA 0.30
// (network-bound): T_cpu = share·T, Net = (1 − share)·T, CPU1 = 16·T_cpu.
//
// Datasets (Table 4.1) scale the first dataset's shape: computation by the
// input size (the algorithms are linear in the data, §3.2.2) and
// communication by the model size (workers pull and push the model).
//
// Hyper-parameters. "Increasing the number of topics makes both computation
// and communication more expensive, but they are affected differently"
// (§3.1): setting k of 10 scales computation by s_k^a and communication by
// s_k^b, with s_k spread geometrically over [1/√2, √2] and a, b drawn in
// [0.5, 1.5] per setting; both factors are normalised so that their
// geometric mean over the 10 settings is 1, so the median setting keeps
// Table 2.1's time. The convergence rate is drawn too: a setting needs
// 100 iterations times a factor log-uniform in [2/3, 3/2].
//
// Convergence. A job's loss follows 1/(B0·k + B1) + B2 over iterations k
// and it stops at the threshold B2 + 0.01 (§4.4.2: trained until the
// objective reaches a predefined threshold); B0 is set so that the
// threshold falls at the setting's iterations.
//
// Resources. One worker and one server on each node of a job's DoP
// (§4.4.2): a worker task reserves one vCPU (2,300 MHz) and 4 GiB, a
// server half that, so up to five jobs share an m4.2xlarge
// (Workload.NodeCPU and NodeMemoryMB). The reservation is what
// Nomad sets aside; how fast an iteration runs comes from the subtask
// model (Sim's co-location), not from it. DoP bounds are 1–32; fixed
// policies run a job at DoP 16.
func HarmonyWorkload(n int, meanGap float64, seed uint64) *Workload {
	rng := rand.New(rand.NewPCG(seed, 0x4a12))
	w := &Workload{Name: fmt.Sprintf("harmony-%d", n), NodeCPU: harmonyNodeCPU, NodeMemoryMB: harmonyNodeMemoryMB}
	var truths []*SubtaskTruth
	for round := 0; len(truths) < n; round++ {
		set := harmonySet(rng, round)
		rng.Shuffle(len(set), func(a, b int) { set[a], set[b] = set[b], set[a] })
		truths = append(truths, set...)
	}
	at := 0.0
	for i, truth := range truths[:n] {
		if i > 0 && meanGap > 0 {
			at += rng.ExpFloat64() * meanGap
		}
		j := &structs.Job{
			ID: truth.ID,
			Meta: map[string]string{
				"application": truth.App, "dataset": truth.Dataset, "hyperparameters": strconv.Itoa(truth.Setting),
			},
			Training: &structs.Training{
				Architecture: structs.ArchitecturePS, Mode: structs.ModeSync,
				GlobalBatchSize: 1024, StepsPerEpoch: 10,
				Convergence: &structs.Convergence{MaxEpochs: int(truth.Iterations/10) + 1},
			},
			Elastic:         &structs.Elastic{Workers: structs.Bounds{Min: 1, Max: 32}, ParameterServers: &structs.Bounds{Min: 1, Max: 32}},
			Worker:          &structs.Role{Driver: "sim", Resources: &structs.Resources{CPU: harmonyNodeCPU / 8, MemoryMB: 4096}},
			ParameterServer: &structs.Role{Driver: "sim", Resources: &structs.Resources{CPU: harmonyNodeCPU / 16, MemoryMB: 2048}},
		}
		j.Canonicalize()
		w.Arrivals = append(w.Arrivals, Arrival{Time: math.Round(at), Job: j, RequestPS: HarmonyDoP, RequestWorkers: HarmonyDoP, Truth: truth})
	}
	return w
}

// harmonySet draws one set of the 80 (application, dataset, setting)
// jobs; round > 0 marks the IDs of further sets.
func harmonySet(rng *rand.Rand, round int) []*SubtaskTruth {
	var out []*SubtaskTruth
	for _, app := range harmonyApps {
		for d := range app.Datasets {
			cpu1, net := app.shape(d)
			var fc, fn, logC, logN [harmonySettings]float64
			for k := range harmonySettings {
				s := math.Pow(2, (float64(k)/(harmonySettings-1) - 0.5))
				fc[k] = math.Pow(s, 0.5+rng.Float64())
				fn[k] = math.Pow(s, 0.5+rng.Float64())
				logC[k], logN[k] = math.Log(fc[k]), math.Log(fn[k])
			}
			gc, gn := math.Exp(mean(logC[:])), math.Exp(mean(logN[:]))
			for k := range harmonySettings {
				iters := math.Round(harmonyIterations * math.Exp(math.Log(1.5)*(2*rng.Float64()-1)))
				t := &SubtaskTruth{
					App: app.App, Dataset: app.Datasets[d].Name, Setting: k,
					CPU1: cpu1 * fc[k] / gc, Net: net * fn[k] / gn, CV: app.Std / app.Iteration, Iterations: iters,
				}
				// 1/(B0·k + B1) + B2 = B2 + threshold at k = iters.
				t.B = [3]float64{(1/harmonyThreshold - harmonyLossB1) / iters, harmonyLossB1, harmonyLossB2}
				t.ID = fmt.Sprintf("%s-d%d-h%d", app.App, d+1, k)
				if round > 0 {
					t.ID += fmt.Sprintf("-r%d", round)
				}
				out = append(out, t)
			}
		}
	}
	return out
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// colocation is how the subtask jobs training now slow each other, from
// one change of placements to the next: each job's iteration and the
// cluster's utilisation, measured by the phase simulation (harmonytruth.go),
// coordinated or not (Config.Uncoordinated). It is nil without subtask
// jobs, which is every workload but Harmony's.
type colocation struct {
	iter map[*job]float64
	// cpu and net are the cluster's utilisation over that span: per node,
	// the share of the time its CPU and network are busy, averaged over
	// every node (idle ones count 0).
	cpu, net float64
}

// colocationKey is what a colocation depends on: the jobs in it and their
// placements.
type colocationKey struct {
	j *job
	p *structs.Placement
}

// subtaskCache keeps the last colocation with and without restarting
// jobs: the simulator asks for the same one at every event until a
// placement changes.
type subtaskCache struct {
	key   [2][]colocationKey
	co    [2]*colocation
	calls uint64
}

// colocation returns how the subtask jobs training now share their nodes;
// with restarting, also those restarting, which hold their nodes and will
// train on them until the next change.
func (s *Sim) colocation(restarting bool) *colocation {
	var jobs []*job
	var key []colocationKey
	for _, j := range s.live {
		if _, ok := j.truth.(*SubtaskTruth); !ok || !j.running() || !restarting && j.restartTo > s.now {
			continue
		}
		jobs = append(jobs, j)
		key = append(key, colocationKey{j, j.placement})
	}
	if len(jobs) == 0 {
		return nil
	}
	slot := 0
	if restarting {
		slot = 1
	}
	cache := &s.subtasks
	if cache.co[slot] != nil && slices.Equal(cache.key[slot], key) {
		return cache.co[slot]
	}
	phases := make([]phaseJob, len(jobs))
	for x, j := range jobs {
		cpu, net := jobSubtasks(j)
		pj := phaseJob{net: net, cv: j.truth.(*SubtaskTruth).CV}
		for i, w := range j.perNode {
			if w > 0 {
				pj.nodes = append(pj.nodes, i)
				pj.cpu = append(pj.cpu, cpu*float64(w))
			}
		}
		phases[x] = pj
	}
	cache.calls++
	rng := rand.New(rand.NewPCG(s.cfg.Seed, 0x5b7a<<32|cache.calls))
	out := simulatePhases(phases, !s.cfg.Uncoordinated, rng)
	c := &colocation{iter: make(map[*job]float64, len(jobs))}
	for x, j := range jobs {
		c.iter[j] = out.iter[x]
	}
	// Summed in node order, so that a seed gives the same sums.
	n := float64(max(len(s.nodes), 1))
	for _, i := range slices.Sorted(maps.Keys(out.cpu)) {
		c.cpu += min(out.cpu[i], 1) / n
	}
	for _, i := range slices.Sorted(maps.Keys(out.net)) {
		c.net += min(out.net[i], 1) / n
	}
	cache.key[slot], cache.co[slot] = key, c
	return c
}

// jobSubtasks is a worker's computation and the job's communication in an
// iteration at j's placement now.
func jobSubtasks(j *job) (cpu, net float64) {
	_, workers := shape(j.perNode)
	return j.truth.(*SubtaskTruth).Subtasks(workers)
}

// NaiveJobsPerNode is the most subtask jobs an uncoordinated node holds:
// §4.1 (Figure 4.3) runs NMF with Lasso and NMF with MLR naively
// co-located, and the three together run out of memory. Coordinated nodes
// are not limited by it: Harmony keeps only the input data of the subtask
// in action in memory and spills the rest (dynamic data reloading,
// §4.3.3), which this simulator does not charge for.
const NaiveJobsPerNode = 2

// ErrOutOfMemory is returned by Enact for a plan that puts more than
// NaiveJobsPerNode subtask jobs on a node of an uncoordinated cluster:
// they would run out of memory (Figure 4.3). The plan is rejected whole,
// as an over-committed one is.
var ErrOutOfMemory = errors.New("plan runs a node out of memory")

// checkNaiveMemory returns ErrOutOfMemory if, with the placements next
// (jobs absent keep theirs), an uncoordinated node would hold more than
// NaiveJobsPerNode subtask jobs.
func (s *Sim) checkNaiveMemory(next map[*job]*structs.Placement) error {
	if !s.cfg.Uncoordinated {
		return nil
	}
	count := map[string]int{}
	for _, j := range s.live {
		if _, ok := j.truth.(*SubtaskTruth); !ok || j.ended() {
			continue
		}
		p, ok := next[j]
		if !ok {
			p = j.placement
		}
		if p == nil || p.Paused() {
			continue
		}
		seen := map[string]bool{}
		for _, nt := range p.Nodes {
			if !seen[nt.NodeID] {
				seen[nt.NodeID] = true
				count[nt.NodeID]++
			}
		}
	}
	for _, n := range s.nodes {
		if count[n.ID] > NaiveJobsPerNode {
			return fmt.Errorf("%w: %s would hold %d naively co-located jobs of at most %d (Figure 4.3)", ErrOutOfMemory, n.ID, count[n.ID], NaiveJobsPerNode)
		}
	}
	return nil
}

// colocatedStepTime is a subtask job's iteration among the jobs it shares
// nodes with, as the phase simulation measured it; a job outside it
// (restarting) iterates as it would alone.
func (s *Sim) colocatedStepTime(j *job, c *colocation) float64 {
	if c != nil {
		if t, ok := c.iter[j]; ok && t > 0 {
			return t
		}
	}
	t := j.truth.StepTime(j.ps, j.perNode)
	if t == 0 {
		return math.Inf(1)
	}
	return t
}

// subtaskUtilisation is the cluster's CPU and network utilisation by
// subtask jobs from now to the next change of placements: per node, the
// share of the time its CPU and its network are busy, averaged over every
// node (idle ones count 0). Jobs restarting count as training.
func (s *Sim) subtaskUtilisation() (cpu, net float64) {
	if c := s.colocation(true); c != nil {
		return c.cpu, c.net
	}
	return 0, 0
}
