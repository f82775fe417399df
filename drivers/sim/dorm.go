package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/caravan-sched/caravan/structs"
)

// DormTruth is an application of Dorm's evaluation (Sun et al.,
// SMARTCOMP'17, Table II): containers of one kind, each a worker of a
// data-parallel job. A step on n containers takes
//
//	Step1 · (1 + Sigma·(n − 1)) / n
//
// seconds: a serial fraction Sigma that no container count speeds up
// (synchronisation), the rest divided among the containers. Where the
// containers run does not matter (Dorm places tasks inside its
// partitions, §III-D).
type DormTruth struct {
	// App names the trained model (lr, mf, caffenet, vgg16, googlenet,
	// alexnet, resnet50).
	App string
	// Step1 is a step's time on one container, seconds.
	Step1, Sigma float64
	// StepsPerEpoch and Epochs fix the training's length.
	StepsPerEpoch, Epochs float64
	// B are the loss curve's 1/(B0·epoch + B1) + B2.
	B [3]float64
}

// StepTime is the step time on the workers given; +Inf without one.
func (t *DormTruth) StepTime(_ int, workersPerNode []int) float64 {
	_, n := shape(workersPerNode)
	if n == 0 {
		return math.Inf(1)
	}
	return t.Step1 * (1 + t.Sigma*float64(n-1)) / float64(n)
}

func (t *DormTruth) TotalSteps() float64        { return t.Epochs * t.StepsPerEpoch }
func (t *DormTruth) Epoch(step float64) float64 { return step / t.StepsPerEpoch }
func (t *DormTruth) Loss(step float64) float64 {
	return 1/(t.B[0]*t.Epoch(step)+t.B[1]) + t.B[2]
}

// DormApp is one row of Dorm's Table II: the container's demand (cores,
// GPUs, GB of RAM), the application's weight, its container bounds, how
// many of the 50 applications train it, the containers Swarm gives it
// statically (§V-A4), and the serial fraction its speed assumes.
type DormApp struct {
	App, System, Dataset string
	Cores, GPUs, RAMGB   int
	Weight               float64
	Max, Min, Num        int
	Swarm                int
	Sigma                float64
}

// DormApps is Table II. The table as extracted lost its cells of 1: the
// weights of LR, VGG-16 and GoogLeNet, every Min, and the Num of the four
// ImageNet models are read as 1, which makes the Nums add up to the 50
// applications §V-A3 states (20 + 20 + 6 + 1 + 1 + 1 + 1). Sigma is
// assumed (the paper gives no speed model): communication-light LR and MF
// scale best, the GPU models worst.
var DormApps = []DormApp{
	{App: "lr", System: "MxNet", Dataset: "Criteo-Log", Cores: 2, GPUs: 0, RAMGB: 8, Weight: 1, Max: 32, Min: 1, Num: 20, Swarm: 8, Sigma: 0.04},
	{App: "mf", System: "TensorFlow", Dataset: "MovieLens", Cores: 2, GPUs: 0, RAMGB: 6, Weight: 2, Max: 32, Min: 1, Num: 20, Swarm: 8, Sigma: 0.04},
	{App: "caffenet", System: "MPI-Caffe", Dataset: "CIFAR-10", Cores: 4, GPUs: 0, RAMGB: 6, Weight: 4, Max: 8, Min: 1, Num: 6, Swarm: 4, Sigma: 0.08},
	{App: "vgg16", System: "MxNet", Dataset: "ImageNet", Cores: 4, GPUs: 1, RAMGB: 32, Weight: 1, Max: 5, Min: 1, Num: 1, Swarm: 2, Sigma: 0.12},
	{App: "googlenet", System: "TensorFlow", Dataset: "ImageNet", Cores: 6, GPUs: 1, RAMGB: 16, Weight: 1, Max: 5, Min: 1, Num: 1, Swarm: 2, Sigma: 0.12},
	{App: "alexnet", System: "Petuum", Dataset: "ImageNet", Cores: 6, GPUs: 1, RAMGB: 16, Weight: 2, Max: 5, Min: 1, Num: 1, Swarm: 2, Sigma: 0.12},
	{App: "resnet50", System: "MPI-Caffe", Dataset: "ImageNet", Cores: 4, GPUs: 1, RAMGB: 32, Weight: 4, Max: 5, Min: 1, Num: 1, Swarm: 3, Sigma: 0.12},
}

// Dorm's testbed (§V-A1): 20 DormSlaves with 240 cores, 5 GPUs and 2.5 TB
// of RAM in all, so 12 cores (1 GHz each in Caravan's MHz) and 128 GB a
// server. Which servers hold the GPUs is not said; the first five hold
// one each.
const (
	dormServers       = 20
	dormNodeCPU       = 12 * 1000
	dormNodeMemory    = 128 * 1024
	dormGPUs          = 5
	dormMinHours      = 4.0
	dormMaxHours      = 12.0
	dormStepsPerEpoch = 100
)

// DormJobs is the number of applications of Dorm's workload.
const DormJobs = 50

// DormWorkload returns n applications of Dorm's evaluation (§V-A3): Table
// II's mix (DormApps, repeated beyond 50), in an order shuffled by the
// seed, arriving with exponential gaps of mean gap seconds (20 minutes in
// the paper) from time 0. Each application is an all-reduce job of 1 to
// Max containers of its Table II demand (workers; a Dorm container is a
// Caravan task), with Table II's weight, requesting Swarm's static
// containers of policies that do not rescale (fifo and tetris, the
// paper's baseline). Its length is assumed: at its Swarm size it would
// train for a time log-uniform in [4 h, 12 h] (Figure 1: about 90% of
// the production cluster's applications run more than 6 hours). The
// workload sets the cluster: 20 servers of 12 cores and 128 GB, the
// first five with one GPU (Workload.NodeGPUs).
func DormWorkload(n int, gap float64, seed uint64) *Workload {
	rng := rand.New(rand.NewPCG(seed, 0xd0e1))
	var mix []DormApp
	for len(mix) < n {
		for _, a := range DormApps {
			for range a.Num {
				mix = append(mix, a)
			}
		}
	}
	mix = mix[:n]
	rng.Shuffle(len(mix), func(i, j int) { mix[i], mix[j] = mix[j], mix[i] })
	gpus := make([]int, dormServers)
	for i := range dormGPUs {
		gpus[i] = 1
	}
	w := &Workload{Name: fmt.Sprintf("dorm-%d", n), NodeCPU: dormNodeCPU, NodeMemoryMB: dormNodeMemory, NodeGPUs: gpus}
	at := 0.0
	for i, a := range mix {
		if i > 0 {
			at += rng.ExpFloat64() * gap
		}
		hours := dormMinHours * math.Pow(dormMaxHours/dormMinHours, rng.Float64())
		truth := &DormTruth{App: a.App, Step1: 10, Sigma: a.Sigma, StepsPerEpoch: dormStepsPerEpoch, B: [3]float64{0.5, 1, 0.05}}
		// Steps to train hours at Swarm's size, in whole epochs.
		steps := hours * 3600 / truth.StepTime(0, []int{a.Swarm})
		truth.Epochs = max(1, math.Round(steps/truth.StepsPerEpoch))
		res := &structs.Resources{CPU: a.Cores * 1000, MemoryMB: a.RAMGB * 1024}
		if a.GPUs > 0 {
			res.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: a.GPUs}}
		}
		j := &structs.Job{
			ID:     fmt.Sprintf("%s-%02d", a.App, i),
			Weight: a.Weight,
			Meta:   map[string]string{"application": a.App, "system": a.System, "dataset": a.Dataset},
			Training: &structs.Training{
				Architecture: structs.ArchitectureAllReduce, Mode: structs.ModeSync,
				GlobalBatchSize: 32 * a.Max * a.Swarm, StepsPerEpoch: int(truth.StepsPerEpoch),
				Convergence: &structs.Convergence{MaxEpochs: int(truth.Epochs)},
			},
			Elastic: &structs.Elastic{Workers: structs.Bounds{Min: a.Min, Max: a.Max}},
			Worker:  &structs.Role{Driver: "sim", Resources: res},
		}
		j.Canonicalize()
		w.Arrivals = append(w.Arrivals, Arrival{Time: math.Round(at), Job: j, RequestWorkers: a.Swarm, Truth: truth})
	}
	return w
}
