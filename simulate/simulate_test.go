package simulate

import (
	"testing"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/shoenig/test/must"
)

func workload6(t *testing.T, limit int) *sim.Workload {
	wl, err := LoadWorkload("pollux/workloads/workload-6.csv", 1, limit)
	must.NoError(t, err)
	return wl
}

// TestRun_Deterministic checks that the same workload and seed give the
// same results, job by job, and that another seed gives other results.
func TestRun_Deterministic(t *testing.T) {
	wl := workload6(t, 40)
	cfg := sim.DefaultConfig()
	a, err := Run(wl, builtin.Algorithms["optimus"](), Options{Cluster: cfg})
	must.NoError(t, err)
	b, err := Run(wl, builtin.Algorithms["optimus"](), Options{Cluster: cfg})
	must.NoError(t, err)
	must.Eq(t, a.Summary, b.Summary)
	must.Eq(t, a.Jobs, b.Jobs)

	cfg.Seed = 2
	c, err := Run(wl, builtin.Algorithms["optimus"](), Options{Cluster: cfg})
	must.NoError(t, err)
	must.NotEq(t, a.Jobs, c.Jobs, must.Sprint("the seed drives the trainers' noise"))
}

// TestRun_SameAsAgent: the run's server keeps its state in memory; a
// server with its Raft log on disk, as an agent's, makes the same plans
// for the same workload and seed, job by job.
func TestRun_SameAsAgent(t *testing.T) {
	wl := workload6(t, 30)
	cfg := sim.DefaultConfig()
	mem, err := Run(wl, builtin.Algorithms["optimus"](), Options{Cluster: cfg})
	must.NoError(t, err)
	disk, err := Run(wl, builtin.Algorithms["optimus"](), Options{Cluster: cfg, DataDir: t.TempDir()})
	must.NoError(t, err)
	must.Eq(t, mem.Jobs, disk.Jobs)
	must.Eq(t, mem.Allocs, disk.Allocs, must.Sprint("the same placements, at the same times"))
	must.Eq(t, mem.Summary, disk.Summary)
}

// TestRun_AllPolicies checks that every policy finishes every job of a
// workload, and that the reported numbers are consistent.
func TestRun_AllPolicies(t *testing.T) {
	wl := workload6(t, 30)
	for _, name := range builtin.Names() {
		t.Run(name, func(t *testing.T) {
			r, err := Run(wl, builtin.Algorithms[name](), Options{Cluster: sim.DefaultConfig()})
			must.NoError(t, err)
			must.Eq(t, 30, r.Summary.Jobs, must.Sprint("every job finishes"))
			for _, j := range r.Jobs {
				must.GreaterEq(t, j.Arrival, j.Start)
				must.Greater(t, j.Start, j.Finish)
			}
			must.Between(t, 0.05, r.Summary.GPUUtil, 1.0)
			must.LessEq(t, r.Summary.P99JCT, r.Summary.P50JCT)
			for _, u := range r.Usage {
				must.LessEq(t, r.TotalGPUs, u.GPUs, must.Sprint("never more GPUs held than the cluster has"))
			}
			if FixedPolicies[name] {
				must.Eq(t, 0, r.Summary.Rescales)
			}
		})
	}
}

func TestLoadWorkload(t *testing.T) {
	wl, err := LoadWorkload("parametric:12:100", 3, 0)
	must.NoError(t, err)
	must.SliceLen(t, 12, wl.Arrivals)
	wl, err = LoadWorkload("pollux/traces/philly.csv", 1, 50)
	must.NoError(t, err)
	must.SliceLen(t, 50, wl.Arrivals)
	must.Eq(t, 0.0, wl.Arrivals[0].Time)
	_, err = LoadWorkload("parametric:x", 1, 0)
	must.ErrorContains(t, err, `job count "x" is not a positive number`)
	_, err = LoadWorkload("/nonexistent.csv", 1, 0)
	must.Error(t, err)
}

// TestRun_HarmonyAgainstIsolated: on Harmony's workloads, grouping jobs
// with complementary subtasks beats running each alone on a partition of
// the cluster in average JCT, makespan and utilisation.
func TestRun_HarmonyAgainstIsolated(t *testing.T) {
	wl, err := LoadWorkload("harmony:24", 1, 0)
	must.NoError(t, err)
	cfg := sim.DefaultConfig()
	cfg.GPUsPerNode = 0
	results := map[string]*Result{}
	for _, name := range []string{"harmony", "isolated"} {
		alg, ok := Policy(name)
		must.True(t, ok)
		r, err := Run(wl, alg, Options{Cluster: cfg})
		must.NoError(t, err)
		must.Eq(t, 24, r.Summary.Jobs)
		results[name] = r
	}
	h, iso := results["harmony"].Summary, results["isolated"].Summary
	t.Logf("isolated/harmony: avg JCT %.2fx, makespan %.2fx; CPU util %.0f%% vs %.0f%%, network %.0f%% vs %.0f%%",
		iso.AvgJCT/h.AvgJCT, iso.Makespan/h.Makespan, 100*h.CPUUtil, 100*iso.CPUUtil, 100*h.NetUtil, 100*iso.NetUtil)
	must.Greater(t, h.AvgJCT, iso.AvgJCT)
	must.Greater(t, h.Makespan, iso.Makespan)
	must.Greater(t, iso.CPUUtil, h.CPUUtil)
	must.Greater(t, iso.NetUtil, h.NetUtil)
	_, ok := Policy("nope")
	must.False(t, ok)
}
