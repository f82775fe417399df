package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/caravan-sched/caravan/structs"
)

// The DLRover paper's cluster (§6.1, D:232): Intel Xeon E5-2682 @2.5GHz
// machines with 192 GB, pods of at most 32 cores. The core count per
// machine is not given: 64 is assumed (drivers/sim/README.md).
const (
	DLRoverCoreMHz  = 2500
	DLRoverNodeCPU  = 64 * DLRoverCoreMHz
	DLRoverNodeMem  = 192 * 1024
	dlroverPodCores = 32
)

// dlroverShape is one configuration of a DLRover job: counts, and each
// role's cores and memory per task.
type dlroverShape struct {
	ps, workers          int
	psCores, wCores      int
	psMemMB, workerMemMB int
}

// Table 2 (D:244-248), the well-tuned configurations, and the sampling
// shape (Table 1's sample row: one worker and one server at 32 cores),
// which is what the paper's 12 and 6.2 steps/s ran at (finding 4 of the
// brief): the "user's request" of the Table 1 comparison. The sampling
// shape's memory is the role's initial memory.
var (
	wdTable2   = dlroverShape{ps: 8, workers: 24, psCores: 16, wCores: 3, psMemMB: 8192, workerMemMB: 4096}
	xdfmTable2 = dlroverShape{ps: 2, workers: 8, psCores: 16, wCores: 20, psMemMB: 8192, workerMemMB: 8192}
	sampling   = dlroverShape{ps: 1, workers: 1, psCores: dlroverPodCores, wCores: dlroverPodCores}
)

// Initial memory of the roles (the jobspec's memory range's initial,
// DLRover's "default memory", A7 of the brief): enough for a server
// alone to hold the whole model of either job.
const (
	dlroverPSMemMB     = 24 * 1024
	dlroverWorkerMemMB = 8 * 1024
)

// DLRoverJob returns a parameter-server job of model m as the DLRover
// paper runs it: asynchronous, 1 to 64 workers and 1 to 16 servers, CPU
// per task from 1 to 32 cores (2500..80000 MHz) and memory from 1 GB to
// 64 GB, initially 8 GB per worker and 24 GB per server.
func DLRoverJob(id string, m DLRoverModel) *structs.Job {
	role := func(memMB int) *structs.Role {
		return &structs.Role{Driver: "sim", Resources: &structs.Resources{
			CPURange:    &structs.ResourceRange{Min: DLRoverCoreMHz, Max: dlroverPodCores * DLRoverCoreMHz},
			MemoryRange: &structs.ResourceRange{Min: 1024, Max: 64 * 1024, Initial: memMB},
		}}
	}
	j := &structs.Job{
		ID:   id,
		Meta: map[string]string{"model": m.Name},
		Training: &structs.Training{
			Framework: "tensorflow", Architecture: structs.ArchitecturePS, Mode: structs.ModeAsync,
			GlobalBatchSize: 512, StepsPerEpoch: int(m.Steps / 5),
			// The paper's jobs train for 5 epochs (D:234).
			Convergence: &structs.Convergence{Threshold: 1e-6, Patience: 1, MaxEpochs: 5},
		},
		Elastic: &structs.Elastic{
			Workers:          structs.Bounds{Min: 1, Max: 64},
			ParameterServers: &structs.Bounds{Min: 1, Max: 16},
		},
		Worker:          role(dlroverWorkerMemMB),
		ParameterServer: role(dlroverPSMemMB),
	}
	j.Canonicalize()
	return j
}

// dlroverArrival is one job of model m arriving at at, requested at shape
// req, with its truth. With podCPU, the roles' initial CPU (what policies
// that do not size tasks run them at, and where DLRover samples) is req's
// per-task cores instead of C_max.
func dlroverArrival(id string, at float64, m DLRoverModel, req dlroverShape, truth *DLRoverTruth, podCPU bool) Arrival {
	a := Arrival{Time: at, Job: DLRoverJob(id, m), RequestPS: req.ps, RequestWorkers: req.workers, Truth: truth}
	if podCPU {
		a.Job.ParameterServer.Resources.CPURange.Initial = req.psCores * DLRoverCoreMHz
		a.Job.Worker.Resources.CPURange.Initial = req.wCores * DLRoverCoreMHz
	}
	a.RequestPSSize = structs.TaskSize{CPU: req.psCores * DLRoverCoreMHz, MemoryMB: req.psMemMB}
	a.RequestWorkerSize = structs.TaskSize{CPU: req.wCores * DLRoverCoreMHz, MemoryMB: req.workerMemMB}
	return a
}

func dlroverWorkload(name string) *Workload {
	return &Workload{
		Name: name, NodeCPU: DLRoverNodeCPU, NodeMemoryMB: DLRoverNodeMem,
		NodeAttributes: map[string]string{"cpu.frequency": fmt.Sprint(DLRoverCoreMHz)},
	}
}

// DLRoverSlowFactor is the share of its CPU an injected slow task gets:
// "we randomly select a worker or PS and set the CPU cores to 25%"
// (§6.2, D:242).
const DLRoverSlowFactor = 0.25

// DLRoverExperiment returns one of the paper's single-job experiments by
// name, or false:
//
//   - dlrover-wd, dlrover-xdfm: Table 1, a job requested at the sampling
//     shape (the user's request the paper's speed-up is against);
//   - dlrover-wd-slow-worker, dlrover-wd-slow-ps and the same for xdfm:
//     §6.2, a job requested at Table 2's well-tuned shape with one worker
//     or server at 25% of its CPU;
//   - dlrover-wd-table2, dlrover-xdfm-table2: §6.3 (D:254), a job
//     requested at Table 2 whose roles' initial CPU is Table 2's per-pod
//     CPU ("DLRover configures each PS and worker's CPU resources
//     according to Table 2"), so that the baselines that do not size
//     tasks (optimus, drf, autoscale) run Table 2's pods;
//   - any of them with the suffix -static: the data statically sharded
//     over the workers, as the paper's TFJob baseline (D:234).
func DLRoverExperiment(name string) (*Workload, bool) {
	rest, ok := strings.CutPrefix(name, "dlrover-")
	if !ok {
		return nil, false
	}
	rest, static := strings.CutSuffix(rest, "-static")
	model, variant, _ := strings.Cut(rest, "-")
	var m DLRoverModel
	var table2 dlroverShape
	switch model {
	case "wd":
		m, table2 = WideDeep, wdTable2
	case "xdfm":
		m, table2 = XDeepFM, xdfmTable2
	default:
		return nil, false
	}
	truth := &DLRoverTruth{Model: m, CoreMHz: DLRoverCoreMHz, StaticShards: static}
	req, podCPU := table2, false
	switch variant {
	case "":
		req = sampling
	case "table2":
		podCPU = true
	case "slow-worker":
		truth.SlowWorker = DLRoverSlowFactor
	case "slow-ps":
		truth.SlowPS = DLRoverSlowFactor
	default:
		return nil, false
	}
	wl := dlroverWorkload(name)
	wl.Arrivals = []Arrival{dlroverArrival(model, 0, m, req, truth, podCPU)}
	return wl, true
}

// DLRoverWorkload generates n jobs of the DLRover paper's two models,
// Wide&Deep and xDeepFM in turn, arriving as a Poisson process with the
// given mean gap, each requested at its Table 2 configuration (what a
// user who tuned it by hand would ask for) with dynamic sharding, and
// nothing injected. The roles' initial CPU is Table 2's per pod, so that
// policies that do not size tasks (optimus, drf) run Table 2's pods, as
// the paper's baselines do (§6.3, D:254).
func DLRoverWorkload(n int, meanGap float64, seed uint64) *Workload {
	rng := rand.New(rand.NewPCG(seed, 0xd12))
	wl := dlroverWorkload(fmt.Sprintf("dlrover-%d", n))
	at := 0.0
	for i := range n {
		if i > 0 {
			at += rng.ExpFloat64() * meanGap
		}
		m, req := WideDeep, wdTable2
		if i%2 == 1 {
			m, req = XDeepFM, xdfmTable2
		}
		truth := &DLRoverTruth{Model: m, CoreMHz: DLRoverCoreMHz}
		wl.Arrivals = append(wl.Arrivals, dlroverArrival(fmt.Sprintf("%s-%03d", m.Name, i), math.Round(at), m, req, truth, true))
	}
	return wl
}
