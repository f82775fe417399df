package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/caravan-sched/caravan/structs"
)

// OptimusModel is one of the nine jobs of the Optimus paper's Table 1 (Peng
// et al., EuroSys'18): a model, its size and its dataset's size.
type OptimusModel struct {
	Name     string
	Params   float64 // millions of parameters (Table 1)
	Examples int     // examples in its dataset (Table 1)
	// Blocks are the sizes of the model's parameter blocks, nil where
	// the paper does not give them (every model but ResNet-50, whose
	// blocks are its architecture's, ResNet50Blocks). Read-only.
	Blocks []ParamBlock
}

// OptimusModels are Table 1's jobs, in the table's order.
var OptimusModels = []OptimusModel{
	{"resnext-110", 1.7, 60000, nil},
	{"resnet-50", 25, 1313788, ResNet50Blocks()},
	{"inception-bn", 11.3, 30607, nil},
	{"kaggle", 1.4, 37920, nil},
	{"cnn-rand", 6, 10662, nil},
	{"dssm", 1.5, 214288, nil},
	{"rnn-lstm-dropout", 4.7, 1002000, nil},
	{"seq2seq", 9.1, 1000000, nil},
	{"deepspeech2", 38, 45000, nil},
}

// Table 2 of the Optimus paper: the coefficients of the speed functions it
// measured for ResNet-50 (Fig. 9, a cluster of 40 containers). Its columns
// θ1…θ5 are the θ0…θ4 of eqs. 3 and 4, in that order.
var (
	// OptimusTable2Async are eq. 3's θ0…θ3 for asynchronous training: a
	// worker's step takes θ0 + θ1·w/p + θ2·w + θ3·p seconds.
	OptimusTable2Async = [4]float64{2.83, 3.92, 0.00, 0.11}
	// OptimusTable2Sync are eq. 4's θ0…θ4 for synchronous training: a
	// step takes θ0·M/w + θ1 + θ2·w/p + θ3·w + θ4·p seconds.
	OptimusTable2Sync = [5]float64{1.02, 2.78, 4.92, 0.00, 0.02}
)

// Constants of the Optimus truth; OptimusTruth says where each comes from.
const (
	// optimusTable2Params is the size of the model Table 2 measured
	// (ResNet-50, Table 1), in millions of parameters.
	optimusTable2Params = 25
	// OptimusTable2M is the global batch M of eq. 4 in the unit of Table
	// 2's fit. The paper does not state it; Fig. 4(a)'s measured optimum
	// of ResNet-50, sync, over 20 containers (8 workers and 12 parameter
	// servers, §2.3) holds under Table 2's sync θ for M in [33.6, 51.2],
	// and M = 41.6 puts the continuous optimum at exactly 8 workers.
	OptimusTable2M = 41.6
	// OptimusMiniBatch is an async worker's mini-batch in examples, and
	// OptimusSyncBatch a sync job's global batch (M), for the steps of
	// an epoch. Not given by the paper; see OptimusTruth.
	OptimusMiniBatch = 32
	OptimusSyncBatch = 256
	// OptimusDatasetCap is the most examples a dataset keeps: §6.1
	// downscales the large datasets "so that the experiment can be
	// finished in a reasonable amount of time"; by how much it does not
	// say.
	OptimusDatasetCap = 5000
)

// OptimusLoss is the loss curve of eq. 1 the paper fitted to Seq2Seq
// (Fig. 7: β0 = 0.21, β1 = 1.07, β2 = 0.07), over epochs: the only fitted
// curve whose coefficients the paper gives.
var OptimusLoss = [3]float64{0.21, 1.07, 0.07}

// OptimusTruth is a parameter-server job of the Optimus paper's evaluation
// (§6.1): one of Table 1's models, trained asynchronously or synchronously,
// with the step times the paper measured. It is the simulator's ground
// truth for the "optimus" workload, taken from the paper's measurements and
// not from Caravan's planner:
//
//   - Step time. Table 2 gives eq. 3's and eq. 4's coefficients as fitted
//     to ResNet-50's measured speeds; for ResNet-50 the truth is exactly
//     those functions. For another model of S million parameters, eq. 2
//     says which terms grow with the model: the transfer and update time
//     (the w/p term, 2·(S/p)/(B/w') + T_update·w'/p) is proportional to S,
//     and the forward and backward time (θ0 async, θ0 and θ1 sync) is
//     scaled by S too, for lack of a per-model compute measurement in the
//     paper (a proxy: more parameters, more multiply-adds per example);
//     the connection overhead terms δ·w + δ'·p (θ2, θ3 async; θ3, θ4 sync)
//     handle TCP connections and control messages and do not depend on
//     the model, so they stay as measured. Each scaled coefficient is
//     Table 2's times S/25.
//
//   - Units. An async step is one worker's mini-batch of OptimusMiniBatch
//     examples, and the job's speed is w steps per step time (eq. 3); a
//     sync step is the global batch of OptimusSyncBatch examples, M =
//     OptimusTable2M in eq. 4's unit (from Fig. 4(a)).
//
//   - Loss and convergence. The loss per epoch follows eq. 1 with Fig.
//     7's coefficients (OptimusLoss) for every model; a job converges when
//     its loss decreases by less than Threshold (1% to 5%, §6.1) of itself
//     per epoch for Patience epochs (§2.1). Epochs have Examples / batch
//     steps, over the dataset downscaled to OptimusDatasetCap examples.
//
//   - Parameter servers' balance. Eq. 2 takes the step's transfer and
//     update time at the slowest server (its max over servers), and
//     Table 2's fit assumes parameters "evenly distributed" (§3.2). With
//     the parameter blocks split as an assignment splits them, the w/p
//     term (which carries S/p) is multiplied by the largest load over the
//     mean load, S_max/(S/p) ≥ 1. The assignment is MXNet's default
//     (MXNetLoads: blocks under 10^6 parameters to a random server,
//     larger ones sliced evenly), the baselines' (§6.1: DRF and Tetris
//     run on plain MXNet), or the one a workload is given
//     (OptimusWorkloadAssigned: `caravan sim`'s optimus-paa passes PAA,
//     planner/optimus.AssignParameters, which the Optimus system runs);
//     the truth only turns loads into time, and runs no scheduler's code.
//     Only ResNet-50's blocks are known (Table 3; OptimusModel.Blocks);
//     the other models are taken as evenly split under every assignment.
//
// StepTime ignores placement: Table 2's fit is over configurations, not
// placements, and the paper gives no measurement of how a placement
// changes a step.
type OptimusTruth struct {
	Model OptimusModel
	Async bool
	// Imbalance[p] is the largest over the mean load of p servers
	// (1 ≤ p ≤ optimusMaxTasks), by the job's assignment.
	Imbalance []float64
	// Theta are the truth's eq. 3 (first four) or eq. 4 coefficients.
	Theta         [5]float64
	StepsPerEpoch float64
	Threshold     float64
	Patience      int
	total         float64
}

// NewOptimusTruth returns the truth of model m trained async or sync until
// its loss decreases by less than threshold per epoch for patience epochs,
// with its parameters assigned by assign, or by MXNet's default (its
// random choices drawn from seed) when assign is nil.
func NewOptimusTruth(m OptimusModel, async bool, threshold float64, patience int, assign Assignment, seed uint64) *OptimusTruth {
	k := m.Params / optimusTable2Params
	t := &OptimusTruth{Model: m, Async: async, Threshold: threshold, Patience: patience}
	t.Imbalance = psImbalance(m, assign, seed)
	examples := float64(min(m.Examples, OptimusDatasetCap))
	if async {
		a := OptimusTable2Async
		t.Theta = [5]float64{a[0] * k, a[1] * k, a[2], a[3]}
		t.StepsPerEpoch = math.Ceil(examples / OptimusMiniBatch)
	} else {
		s := OptimusTable2Sync
		t.Theta = [5]float64{s[0] * k, s[1] * k, s[2] * k, s[3], s[4]}
		t.StepsPerEpoch = math.Ceil(examples / OptimusSyncBatch)
	}
	pt := ParametricTruth{B: OptimusLoss, StepsPerEpoch: t.StepsPerEpoch, Threshold: threshold, Patience: patience}
	t.total = pt.Init().total
	return t
}

// StepSeconds is the time of one step of the job's model with p parameter
// servers and w workers: for async a worker's step (eq. 3's denominator),
// for sync the synchronised step (eq. 4's denominator).
func (t *OptimusTruth) StepSeconds(p, w int) float64 {
	pf, wf := float64(max(p, 1)), float64(max(w, 1))
	th := t.Theta
	imb := 1.0
	if p >= 1 && p < len(t.Imbalance) {
		imb = t.Imbalance[p]
	}
	if t.Async {
		return th[0] + th[1]*imb*wf/pf + th[2]*wf + th[3]*pf
	}
	return th[0]*OptimusTable2M/wf + th[1] + th[2]*imb*wf/pf + th[3]*wf + th[4]*pf
}

// ParamBlock is one block of a model's parameters (a layer's weights), of
// Size parameters.
type ParamBlock struct {
	Name string
	Size int64
}

// Assignment returns the parameters each of servers parameter servers
// holds when blocks are assigned to them, one load per server.
type Assignment func(blocks []ParamBlock, servers int) []int64

// MXNetThreshold is MXNet's default size (10^6 parameters) below which a
// block goes to one server whole (Optimus §5.3).
const MXNetThreshold = 1_000_000

// MXNetLoads assigns blocks as MXNet does by default, the assignment PAA
// replaces (§5.3): a block under MXNetThreshold goes whole to a server
// drawn from rng, and a larger one is sliced evenly over all servers. It
// returns each server's load and the update requests in all (one per
// block or slice).
func MXNetLoads(blocks []ParamBlock, servers int, rng *rand.Rand) (loads []int64, requests int) {
	loads = make([]int64, servers)
	for _, b := range blocks {
		if b.Size < MXNetThreshold {
			loads[rng.IntN(servers)] += b.Size
			requests++
			continue
		}
		n := int64(servers)
		for k := range n {
			loads[k] += b.Size*(k+1)/n - b.Size*k/n
		}
		requests += servers
	}
	return loads, requests
}

// psImbalance is the largest over the mean load of 1 to optimusMaxTasks
// servers holding m's blocks as assign (nil: MXNetLoads, from seed)
// assigns them; all 1 for a model without blocks.
func psImbalance(m OptimusModel, assign Assignment, seed uint64) []float64 {
	out := make([]float64, optimusMaxTasks+1)
	var total int64
	for _, b := range m.Blocks {
		total += b.Size
	}
	for p := 1; p <= optimusMaxTasks; p++ {
		out[p] = 1
		if total == 0 {
			continue
		}
		var loads []int64
		if assign != nil {
			loads = assign(m.Blocks, p)
		} else {
			loads, _ = MXNetLoads(m.Blocks, p, rand.New(rand.NewPCG(seed, uint64(p))))
		}
		out[p] = float64(slices.Max(loads)) * float64(p) / float64(total)
	}
	return out
}

// ResNet50Blocks returns the parameter blocks of MXNet's ResNet-50 (its
// symbols/resnet.py, version 2, bottleneck units of 3, 4, 6 and 3 over
// filters 256, 512, 1024 and 2048, 1000 classes): 157 blocks of 25.6
// million parameters in all, the model of Optimus Table 3 ("25 million
// parameters formed into 157 parameter blocks"). Each call returns a new
// slice.
func ResNet50Blocks() []ParamBlock {
	var bs []ParamBlock
	add := func(name string, size int64) { bs = append(bs, ParamBlock{Name: name, Size: size}) }
	bn := func(name string, c int64) { add(name+"_gamma", c); add(name+"_beta", c) }
	bn("bn_data", 3)
	add("conv0_weight", 7*7*3*64)
	bn("bn0", 64)
	in := int64(64)
	for stage, units := range []int{3, 4, 6, 3} {
		out := int64(256) << stage
		for u := range units {
			name := fmt.Sprintf("stage%d_unit%d", stage+1, u+1)
			bn(name+"_bn1", in)
			add(name+"_conv1_weight", in*out/4)
			bn(name+"_bn2", out/4)
			add(name+"_conv2_weight", 3*3*(out/4)*(out/4))
			bn(name+"_bn3", out/4)
			add(name+"_conv3_weight", out/4*out)
			if u == 0 {
				add(name+"_sc_weight", in*out)
			}
			in = out
		}
	}
	bn("bn1", 2048)
	add("fc1_weight", 2048*1000)
	add("fc1_bias", 1000)
	return bs
}

// Speed is the job's training speed in steps per second (eqs. 3 and 4).
func (t *OptimusTruth) Speed(p, w int) float64 {
	if t.Async {
		return float64(max(w, 1)) / t.StepSeconds(p, w)
	}
	return 1 / t.StepSeconds(p, w)
}

// StepTime is the seconds per step of the job: the inverse of Speed.
func (t *OptimusTruth) StepTime(ps int, workersPerNode []int) float64 {
	_, w := shape(workersPerNode)
	return 1 / t.Speed(ps, w)
}

func (t *OptimusTruth) TotalSteps() float64        { return t.total }
func (t *OptimusTruth) Epoch(step float64) float64 { return step / t.StepsPerEpoch }
func (t *OptimusTruth) Loss(step float64) float64 {
	b := OptimusLoss
	return 1/(b[0]*t.Epoch(step)+b[1]) + b[2]
}

// Optimus testbed (§6.1): 7 CPU servers of 16 cores and 80 GB and 6 GPU
// servers of 8 cores and 48 GB, 160 cores in all. Nodes here are alike, so
// the testbed is 13 nodes of 12 cores (each holds two of the paper's
// 5-core containers: 26 tasks, where the paper's servers hold 7·3 + 6·1 =
// 27) and 48 GB. Tasks use no GPU: Table 2 was measured on 40 containers,
// more than the testbed's 12 GPUs.
const (
	optimusNodes    = 13
	optimusNodeCPU  = 12000
	optimusNodeMem  = 48 * 1024
	optimusTaskCPU  = 5000
	optimusTaskMem  = 10 * 1024
	optimusMaxTasks = 16
)

// OptimusWorkload is the Optimus paper's evaluation workload (§6.1): n jobs
// arriving at times drawn uniformly from [0, span] seconds (the paper:
// [0, 12000]), each one of Table 1's models drawn at random and trained
// async or sync at random, with a convergence threshold drawn from [1%,
// 5%], and patience 2. Its truths are OptimusTruth, with MXNet's default
// assignment of parameters (OptimusWorkloadAssigned gives another). Every job may run
// 1 to 16 parameter servers and workers of 5 cores and 10 GB each (§2.3's
// containers); a user would request 2 of each, the 1:1 ratio the paper
// gives the baselines (the paper does not give the request's size). It
// runs on the testbed (13 nodes of 12 cores, no GPUs), which replaces the
// cluster.
func OptimusWorkload(n int, span float64, seed uint64) *Workload {
	return OptimusWorkloadAssigned(n, span, seed, "optimus", nil)
}

// OptimusWorkloadAssigned is OptimusWorkload, the same jobs, with every
// job's parameters assigned by assign (nil: MXNet's default), named name.
func OptimusWorkloadAssigned(n int, span float64, seed uint64, name string, assign Assignment) *Workload {
	rng := rand.New(rand.NewPCG(seed, 0x0e5f))
	w := &Workload{Name: fmt.Sprintf("%s-%d", name, n), NodeCPU: optimusNodeCPU, NodeMemoryMB: optimusNodeMem,
		NodeGPUs: make([]int, optimusNodes)}
	times := make([]float64, n)
	for i := range times {
		times[i] = math.Round(rng.Float64() * span)
	}
	slices.Sort(times)
	for i := range n {
		m := OptimusModels[rng.IntN(len(OptimusModels))]
		async := rng.IntN(2) == 0
		threshold := math.Round((0.01+rng.Float64()*0.04)*1000) / 1000
		truth := NewOptimusTruth(m, async, threshold, 2, assign, seed<<16|uint64(i))
		tr := &structs.Training{
			Architecture: structs.ArchitecturePS, Mode: structs.ModeSync, GlobalBatchSize: OptimusSyncBatch,
			StepsPerEpoch: int(truth.StepsPerEpoch),
			Convergence:   &structs.Convergence{Threshold: threshold, Patience: 2, MaxEpochs: 200},
		}
		if async {
			tr.Mode, tr.GlobalBatchSize = structs.ModeAsync, OptimusMiniBatch
		}
		j := &structs.Job{
			ID:       fmt.Sprintf("%s-%s-%03d", m.Name, tr.Mode, i),
			Training: tr,
			Elastic: &structs.Elastic{Workers: structs.Bounds{Min: 1, Max: optimusMaxTasks},
				ParameterServers: &structs.Bounds{Min: 1, Max: optimusMaxTasks}},
			Worker:          &structs.Role{Driver: "sim", Resources: &structs.Resources{CPU: optimusTaskCPU, MemoryMB: optimusTaskMem}},
			ParameterServer: &structs.Role{Driver: "sim", Resources: &structs.Resources{CPU: optimusTaskCPU, MemoryMB: optimusTaskMem}},
		}
		j.Canonicalize()
		w.Arrivals = append(w.Arrivals, Arrival{Time: times[i], Job: j, RequestPS: 2, RequestWorkers: 2, Truth: truth})
	}
	return w
}
