package simulate

import (
	"testing"
	"time"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/shoenig/test/must"
)

func TestLoadWorkload_Sia(t *testing.T) {
	for _, tc := range []struct {
		name string
		jobs int
	}{
		{"sia/saturn/2", 160},
		{"sia/philly/1", 160},
		{"sia/newtrace/4", 960},
		{"sia/scale/rate_10-workload-2", 80},
		{"sia/workloads/saturn/workload-4.csv", 160},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wl, err := LoadWorkload(tc.name, 1, 0)
			must.NoError(t, err)
			must.SliceLen(t, tc.jobs, wl.Arrivals)
			for _, a := range wl.Arrivals {
				tr, ok := a.Truth.(*sim.PolluxTruth)
				must.True(t, ok)
				must.MapLen(t, 4, tr.Types, must.Sprintf("%s trains at each type's speed", a.Job.ID))
				must.MapLen(t, 4, a.AdaptiveTruth.(*sim.PolluxTruth).Types)
			}
		})
	}
	_, err := LoadWorkload("sia/saturn/3", 1, 0)
	must.ErrorContains(t, err, "sia/workloads/saturn/workload-3.csv is not in the embedded data")
}

// TestSiaArtifact_Assumptions checks what -assume sia-artifact sets, and
// a job alone under it: seen at the 60 s round after its arrival, it
// waits its model's checkpoint-restore delay, then trains its steps at
// its GPU type's step time times its model's calibration factor.
func TestSiaArtifact_Assumptions(t *testing.T) {
	p, err := Prepare(Setup{Workload: "sia/philly/1", Policies: []string{"tiresias"}, Seed: 1, Limit: 1, Assume: AssumeSia,
		Interval: 5 * time.Minute, RestartPenalty: 30 * time.Second})
	must.NoError(t, err)
	must.Eq(t, SiaCluster, p.Cluster)
	cfg := p.Options.Cluster
	must.Eq(t, 64, cfg.TotalGPUs())
	must.Eq(t, "Tesla T4", cfg.GPUModel(0).Name)
	must.Eq(t, "GeForce RTX 2080 Ti", cfg.GPUModel(6).Name)
	must.Eq(t, "A100-SXM4-40GB", cfg.GPUModel(10).Name)
	must.Eq(t, 5*time.Minute, p.Options.Interval, must.Sprint("the caller's: Gavel runs at 360 s"))
	must.True(t, p.Options.PeriodicRounds)
	must.Eq(t, 120*time.Second, cfg.ModelRestartPenalty["bert"])
	must.Eq(t, 0, cfg.TypeProfileSteps)
	tr := p.Workload.Arrivals[0].Truth.(*sim.PolluxTruth)
	must.Eq(t, "cifar10", tr.Profile.Name)
	must.Eq(t, 1.8, tr.Slowdown)

	p, err = Prepare(Setup{Workload: "sia/philly/1", Cluster: "2xrtx", Policies: []string{"tiresias"}, Seed: 1, Limit: 1,
		Assume: AssumeSia, Interval: time.Minute})
	must.NoError(t, err)
	must.Eq(t, "2xrtx", p.Cluster, must.Sprint("the user's cluster stays"))
	res, err := Run(p.Workload, builtin.Algorithms["tiresias"](), p.Options)
	must.NoError(t, err)
	// cifar10-0 arrives at 107 s with a batch of 2048 on 6 GPUs, the
	// workload's num_replicas (LoadSiaWorkload): 2046 on one rtx node,
	// 341 a GPU.
	tr = p.Workload.Arrivals[0].Truth.(*sim.PolluxTruth)
	must.Eq(t, 6, p.Workload.Arrivals[0].RequestWorkers)
	must.Eq(t, 2046, p.Workload.Arrivals[0].RequestBatch)
	it, model, ok := tr.IterationOn([]int{6}, []string{"GeForce RTX 2080 Ti"})
	must.True(t, ok)
	must.Eq(t, "GeForce RTX 2080 Ti", model)
	step, _ := tr.Types[model].StepSync([]int{6}, 341)
	must.Eq(t, step*1.8, it.Seconds)
	job := res.Jobs[0]
	must.Eq(t, 107, job.Arrival)
	must.Between(t, 120, job.Start, 120.001)
	want := 120 + 50 + tr.TotalSteps()*it.Seconds
	must.Between(t, want-0.01, job.Finish, want+0.01)
}
