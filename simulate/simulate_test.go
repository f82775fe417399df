package simulate

import (
	"testing"
	"time"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/structs"
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
			alg := builtin.Algorithms[name]()
			r, err := Run(wl, alg, Options{Cluster: sim.DefaultConfig()})
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
			if planner.CapabilitiesOf(alg).FixedSize {
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
	// Harmony's 80 jobs all at once by default, or with gaps.
	wl, err = LoadWorkload("harmony", 1, 0)
	must.NoError(t, err)
	must.SliceLen(t, 80, wl.Arrivals)
	must.Eq(t, 0.0, wl.Arrivals[79].Time)
	wl, err = LoadWorkload("harmony:10:120", 1, 0)
	must.NoError(t, err)
	must.Greater(t, 0.0, wl.Arrivals[9].Time)
	_, err = LoadWorkload("parametric:5:0", 1, 0)
	must.ErrorContains(t, err, `gap "0" is not a positive number`)
	// SpeCon's fixed schedule, 20 VAE containers 50 s apart, and its
	// random one, 20 in [0, 300] s by default.
	wl, err = LoadWorkload("specon", 1, 0)
	must.NoError(t, err)
	must.SliceLen(t, 20, wl.Arrivals)
	must.Eq(t, 950.0, wl.Arrivals[19].Time)
	wl, err = LoadWorkload("specon-random:30:600", 1, 0)
	must.NoError(t, err)
	must.SliceLen(t, 30, wl.Arrivals)
	must.LessEq(t, 600.0, wl.Arrivals[29].Time)
}

// TestRun_Specon: on SpeCon's random schedule (30 containers in [0, 600] s
// on 4 workers), specon over fifo finishes every job, migrates some (fifo
// never moves one), and no job is moved more than twice (once by
// Algorithm 2, once by Algorithm 3).
func TestRun_Specon(t *testing.T) {
	wl, err := LoadWorkload("specon-random:30:600", 1, 0)
	must.NoError(t, err)
	cfg := sim.DefaultConfig()
	cfg.Nodes, cfg.GPUsPerNode = 4, 0
	opts := Options{Cluster: cfg, Interval: 30 * time.Second}
	spec, err := Run(wl, builtin.Algorithms["specon"](), opts)
	must.NoError(t, err)
	base, err := Run(wl, builtin.Algorithms["fifo"](), opts)
	must.NoError(t, err)
	must.Eq(t, 30, spec.Summary.Jobs)
	must.Eq(t, 30, base.Summary.Jobs)
	must.Eq(t, 0, base.Summary.Rescales)
	must.Positive(t, spec.Summary.Rescales)
	for _, j := range spec.Jobs {
		must.LessEq(t, 2, j.Rescales, must.Sprint(j.JobID))
	}
}

// TestRun_HarmonyBaselines: on the dissertation's Harmony workload (24 of
// its jobs on 16 m4.2xlarge nodes), harmony, isolated and colocated all
// finish every job and report JCT, makespan, utilisation, the regrouping
// overhead and the speedups; grouping jobs with complementary subtasks
// beats running each alone in average JCT, makespan and utilisation.
func TestRun_HarmonyBaselines(t *testing.T) {
	wl, err := LoadWorkload("harmony:24", 1, 0)
	must.NoError(t, err)
	must.Eq(t, 0.0, wl.Arrivals[23].Time, must.Sprint("all at once by default"))
	cfg := sim.DefaultConfig()
	cfg.Nodes, cfg.GPUsPerNode = 16, 0
	var results []*Result
	for _, name := range []string{"harmony", "isolated", "colocated"} {
		alg, ok := Policy(name)
		must.True(t, ok)
		r, err := Run(wl, alg, Options{Cluster: cfg})
		must.NoError(t, err)
		must.Eq(t, 24, r.Summary.Jobs)
		must.Positive(t, r.Summary.CPUUtil)
		must.Positive(t, r.Summary.NetUtil)
		must.LessEq(t, 1, r.Summary.CPUUtil)
		must.Between(t, 0, r.Summary.RegroupShare, 0.5)
		// Every rescale restarts the job; resumes after a pause do too.
		must.GreaterEq(t, 30*float64(r.Summary.Rescales), r.Summary.RegroupS)
		results = append(results, r)
	}
	report := NewReport("harmony:24", "16x0", 1, results)
	must.SliceLen(t, 4, report.Speedups, must.Sprint("harmony and colocated against isolated, harmony and isolated against colocated"))
	for _, sp := range report.Speedups {
		t.Logf("%s vs %s: avg JCT %.2fx, makespan %.2fx", sp.Policy, sp.Baseline, sp.JCT, sp.Makespan)
		b, p := report.Policies[sp.Baseline], report.Policies[sp.Policy]
		must.Eq(t, b.AvgJCT/p.AvgJCT, sp.JCT)
	}
	h, iso, col := results[0].Summary, results[1].Summary, results[2].Summary
	t.Logf("CPU util %.0f%% / %.0f%% / %.0f%%, network %.0f%% / %.0f%% / %.0f%%, regrouping %.2f%% / %.2f%% / %.2f%%",
		100*h.CPUUtil, 100*iso.CPUUtil, 100*col.CPUUtil, 100*h.NetUtil, 100*iso.NetUtil, 100*col.NetUtil,
		100*h.RegroupShare, 100*iso.RegroupShare, 100*col.RegroupShare)
	must.Greater(t, h.AvgJCT, iso.AvgJCT)
	must.Greater(t, h.Makespan, iso.Makespan)
	must.Greater(t, iso.CPUUtil, h.CPUUtil)
	must.Greater(t, iso.NetUtil, h.NetUtil)
	// Coordinated groups beat naive co-location in makespan and CPU.
	must.Greater(t, h.Makespan, col.Makespan)
	must.Greater(t, col.CPUUtil, h.CPUUtil)
	_, ok := Policy("nope")
	must.False(t, ok)
}

// TestFit: a policy that plans from what a workload lacks is named, and
// one that fits is not.
func TestFit(t *testing.T) {
	pollux, err := LoadWorkload("pollux/workloads/workload-1.csv", 1, 5)
	must.NoError(t, err)
	harmony, err := LoadWorkload("harmony:4", 1, 0)
	must.NoError(t, err)
	dlrover, err := LoadWorkload("dlrover:2", 1, 0)
	must.NoError(t, err)
	policy := func(name string, options map[string]string) planner.Algorithm {
		alg, ok := Policy(name)
		must.True(t, ok)
		must.NoError(t, passConfig(alg, options))
		return alg
	}
	must.StrContains(t, Fit(policy("harmony", nil), pollux), "harmony groups jobs by their computation and communication subtask times, and no job of the workload reports them")
	must.StrContains(t, Fit(policy("cruise", nil), pollux), "no job of the workload reports them")
	must.StrContains(t, Fit(policy("colocated", nil), pollux), "colocated plans from the jobs' computation and communication subtask times")
	must.StrContains(t, Fit(policy("drf", map[string]string{"split": "cruise"}), pollux), "no job of the workload reports them")
	must.Eq(t, "", Fit(policy("drf", nil), pollux), must.Sprint("drf reads subtasks only to split by them"))
	must.Eq(t, "", Fit(policy("harmony", nil), harmony))
	must.StrContains(t, Fit(policy("dlrover", nil), pollux), "no job of the workload has one")
	must.Eq(t, "", Fit(policy("dlrover", nil), dlrover))
	must.Eq(t, "", Fit(policy("fifo", nil), pollux))
	must.Eq(t, "", Fit(policy("pollux", nil), pollux), must.Sprint("a Pollux model's jobs adapt"))
	must.StrContains(t, Fit(policy("goodput-las", nil), dlrover), "the workload has neither")
	must.StrContains(t, Fit(policy("specon", map[string]string{"base": "pollux"}), dlrover), "specon adapts batch sizes")
}

// TestLoadWorkload_Unknown: a name that is neither a file nor built in
// lists the built-in workloads.
func TestLoadWorkload_Unknown(t *testing.T) {
	_, err := LoadWorkload("pollux/workloads/nope.csv", 1, 0)
	must.ErrorContains(t, err, `workload "pollux/workloads/nope.csv" is neither a file nor a built-in workload; the built-in ones are parametric[:jobs[:gap]], harmony[:jobs]`)
	must.ErrorContains(t, err, "dlrover-xdfm-slow-ps[-static]")
	must.ErrorContains(t, err, "pollux/workloads-0.5/*.csv (8)")
	must.ErrorContains(t, err, "pollux/traces/*.csv (1)")
}

// TestRun_NeverStarts: a job whose minimum the cluster cannot hold ends
// the run with an error after maxIdleSteps steps, rather than holding it
// forever, as a queue whose quota is below a job's minimum would.
func TestRun_NeverStarts(t *testing.T) {
	wl := sim.ParametricWorkload(2, 10, 1)
	wl.Arrivals[1].Job.Elastic.Workers = structs.Bounds{Min: 8, Max: 8}
	cfg := sim.DefaultConfig()
	cfg.Nodes, cfg.GPUsPerNode = 1, 4
	alg, _ := Policy("drf")
	_, err := Run(wl, alg, Options{Cluster: cfg})
	must.ErrorContains(t, err, "1 of 2 jobs still wait")
	must.ErrorContains(t, err, "nothing has run for 1000 steps")
}
