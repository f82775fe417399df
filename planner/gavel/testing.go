package gavel

import (
	"fmt"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/structs"
)

// Type names of the mixed cluster of Sia's evaluation (§4.3: 6 t4, 3 rtx
// and 2 a100 nodes), as Nomad's device fingerprint names them.
const (
	T4   = "Tesla T4"
	RTX  = "GeForce RTX 2080 Ti"
	A100 = "A100-SXM4-40GB"
)

// TypedNodes returns n ready nodes named prefix-0, prefix-1, … each with
// gpus GPUs of model name, 32 cores and 256 GB.
func TypedNodes(prefix, name string, n, gpus int) []*structs.Node {
	var out []*structs.Node
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		d := &structs.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: name}
		for g := range gpus {
			d.Instances = append(d.Instances, &structs.NodeDevice{ID: fmt.Sprintf("%s-gpu-%d", id, g), Healthy: true})
		}
		out = append(out, &structs.Node{
			ID: id, Name: id, Datacenter: "dc1", NodeClass: "gpu", Status: structs.NodeStatusReady, Eligible: true,
			CPU: 32000, MemoryMB: 262144, Attributes: map[string]string{"kernel.name": "linux"},
			Devices: []*structs.NodeDeviceResource{d},
		})
	}
	return out
}

// SiaCluster returns the heterogeneous cluster of Sia's evaluation
// (§4.3): 6 nodes of 4 T4, 3 of 8 RTX 2080 Ti and 2 of 8 A100, 64 GPUs.
func SiaCluster() []*structs.Node {
	nodes := TypedNodes("t4", T4, 6, 4)
	nodes = append(nodes, TypedNodes("rtx", RTX, 3, 8)...)
	return append(nodes, TypedNodes("a100", A100, 2, 8)...)
}

// RigidJob returns a job of workers one-GPU workers at a fixed global
// batch, submitted at submit, whose optimizer step takes step[type]
// seconds on each GPU type named (its compute time; the network time is
// next to nothing), through a throughput model per type.
func RigidJob(id string, workers, batch int, submit time.Duration, step map[string]float64) *planner.Job {
	j := planner.MockAllReduceJob(id, structs.Bounds{Min: workers, Max: workers}, nil)
	j.Training.GlobalBatchSize = batch
	j.SubmitTime = int64(submit)
	v := &planner.Job{Job: j, PerfByType: map[string]*goodput.Fit{}}
	for t, s := range step {
		v.PerfByType[t] = &goodput.Fit{Params: goodput.PerfParams{AlphaC: s, BetaC: 1e-12, AlphaN: 1e-8, BetaN: 1e-8, AlphaR: 1e-8, BetaR: 1e-8, Gamma: 1}, Points: 4, MaxReplicas: workers}
	}
	return v
}

// WorkloadRequest is a round of jobs on SiaCluster for benchmarks: jobs
// of 1, 2, 4 and 8 workers in turn, submitted a minute apart, each
// faster on RTX than on T4 and fastest on A100 by ratios that vary with
// the job, the first half running on T4 and RTX nodes where they fit.
func WorkloadRequest(jobs int) *planner.Request {
	req := &planner.Request{Nodes: SiaCluster(), Now: int64(jobs+60) * int64(time.Minute)}
	c := planner.NewCluster(req.Nodes)
	for k := range jobs {
		w := []int{1, 2, 4, 8}[k%4]
		base := 0.1 + 0.05*float64(k%7)
		v := RigidJob(fmt.Sprintf("job-%04d", k), w, 64*w, time.Duration(k)*time.Minute, map[string]float64{
			T4: base, RTX: base / (1.5 + 0.25*float64(k%3)), A100: base / (2.5 + 0.5*float64(k%5)),
		})
		if k < jobs/2 {
			tasks := c.JobTasks(v)
			for i, n := range req.Nodes {
				if n.GPUType() != A100 && c.Fits(i, tasks.Worker, w) {
					c.Take(i, tasks.Worker, w)
					v.Current = &structs.Placement{Namespace: v.Job.Namespace, JobID: v.Job.ID, NumWorkers: w,
						Nodes: []*structs.NodeTasks{{NodeID: n.ID, Workers: w}}}
					v.Job.Status = structs.JobStatusRunning
					break
				}
			}
		}
		req.Jobs = append(req.Jobs, v)
	}
	return req
}
