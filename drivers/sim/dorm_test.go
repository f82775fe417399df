package sim

import (
	"math"
	"testing"

	"github.com/shoenig/test/must"
)

// TestDormWorkload: Table II's mix of 50 applications, 20 minutes apart on
// average, on a testbed of 20 servers with 240 cores, 5 GPUs and 2.5 TB,
// each job asking for Table II's container and weight within its bounds
// and for Swarm's containers when it cannot rescale.
func TestDormWorkload(t *testing.T) {
	w := DormWorkload(DormJobs, 1200, 1)
	must.SliceLen(t, DormJobs, w.Arrivals)

	cfg := DefaultConfig()
	cfg.CPU, cfg.MemoryMB, cfg.NodeGPUs = w.NodeCPU, w.NodeMemoryMB, w.NodeGPUs
	must.Eq(t, 20, cfg.NodeCount())
	must.Eq(t, 240*1000, cfg.NodeCount()*cfg.CPU)
	must.Eq(t, 5, cfg.TotalGPUs())
	must.Eq(t, 2560*1024, cfg.NodeCount()*cfg.MemoryMB)
	s := New(cfg)
	gpus := 0
	for _, n := range s.Nodes() {
		for _, d := range n.Devices {
			gpus += len(d.Instances)
		}
	}
	must.Eq(t, 5, gpus)

	byApp := map[string]int{}
	apps := map[string]DormApp{}
	for _, a := range DormApps {
		apps[a.App] = a
	}
	last := 0.0
	for i, a := range w.Arrivals {
		must.NoError(t, a.Job.Validate())
		app := apps[a.Job.Meta["application"]]
		byApp[app.App]++
		must.Eq(t, app.Weight, a.Job.Weight)
		must.Eq(t, app.Max, a.Job.Elastic.Workers.Max)
		must.Eq(t, app.Swarm, a.RequestWorkers)
		must.Eq(t, app.Cores*1000, a.Job.Worker.Resources.CPU)
		must.Eq(t, app.RAMGB*1024, a.Job.Worker.Resources.MemoryMB)
		wr, _ := TaskResources(a.Job)
		must.Eq(t, app.GPUs, wr.GPUs)
		must.NoError(t, a.FixedJob().Validate())
		must.GreaterEq(t, last, a.Time, must.Sprintf("arrival %d in time order", i))
		last = a.Time
		// At Swarm's size the job trains 4 to 12 hours (whole epochs).
		tr := a.Truth.(*DormTruth)
		hours := tr.TotalSteps() * tr.StepTime(0, []int{app.Swarm}) / 3600
		must.Between(t, 3.9, hours, 12.1)
	}
	must.Eq(t, map[string]int{"lr": 20, "mf": 20, "caffenet": 6, "vgg16": 1, "googlenet": 1, "alexnet": 1, "resnet50": 1}, byApp)
	gap := last / float64(DormJobs-1)
	must.Between(t, 800, gap, 1600, must.Sprintf("mean gap %.0f s", gap))
	must.Eq(t, w.Arrivals, DormWorkload(DormJobs, 1200, 1).Arrivals, must.Sprint("the same seed gives the same workload"))
}

// TestDormTruth_StepTime: a serial fraction σ of a step no container
// count speeds up.
func TestDormTruth_StepTime(t *testing.T) {
	tr := &DormTruth{Step1: 10, Sigma: 0.1}
	must.Eq(t, 10.0, tr.StepTime(0, []int{1}))
	must.InDelta(t, 10*(1+0.1*7)/8, tr.StepTime(0, []int{3, 0, 5}), 1e-12)
	must.True(t, math.IsInf(tr.StepTime(0, nil), 1))
}
