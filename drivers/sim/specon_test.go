package sim

import (
	"fmt"
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestContention: the contention model by hand (Contention's doc), on
// the M510's 12.8 usable cores.
func TestContention(t *testing.T) {
	for _, c := range []struct {
		n        int
		p, kappa float64
		want     float64
	}{
		{1, 0.975, 0.5, 1},             // alone
		{0, 0.975, 0.5, 1},             // none training yet
		{2, 1, 0, 2},                   // processor sharing
		{3, 1, 0.1, 3 * 1.2},           // sharing, κ per co-runner
		{2, 0.975, 0, 1.752895752896},  // (0.025 + 0.975/6.4) / (0.025 + 0.975/12.8)
		{3, 0.975, 0, 2.505791505792},  // (0.025 + 0.975·3/12.8) / (0.025 + 0.975/12.8)
		{20, 0.975, 0, 15.44401544402}, // 0.64 cores each: (1/0.64) / (0.025 + 0.975/12.8)
		{2, 0.975, 0.1, 1.752895752896 * 1.1},
	} {
		t.Run(fmt.Sprintf("n=%d p=%g κ=%g", c.n, c.p, c.kappa), func(t *testing.T) {
			truth := &SharedCPUTruth{Parallel: c.p, Interference: c.kappa}
			must.InDelta(t, c.want, truth.Contention(c.n, 12.8), 1e-9)
		})
	}
	// A worker's throughput, n / Contention(n), grows concavely with p < 1,
	// so moving a container from a worker of 3 to one of 1 raises the two
	// workers' throughput: 3/2.506 + 1 < 2 · 2/1.753.
	truth := &SharedCPUTruth{Parallel: speconParallel, Interference: speconInterference}
	tp := func(n int) float64 { return float64(n) / truth.Contention(n, 12.8) }
	must.Greater(t, tp(3)+tp(1), 2*tp(2))
}

// TestSharedCPUTruth_Contention: two containers that each keep a whole
// worker busy share it and train at half speed (processor sharing, p = 1,
// κ = 0); when one finishes, the other trains at full speed; a container
// restarting does not slow the one training beside it until its restart
// ends. With κ = 0.5 two train at a third of their speed.
func TestSharedCPUTruth_Contention(t *testing.T) {
	cfg := testConfig()
	cfg.CPU = speconNodeCPU
	s := New(cfg)
	truth := func(steps float64) *SharedCPUTruth {
		return &SharedCPUTruth{Model: "vae", Alone: 1, Parallel: 1, Steps: steps, B0: 1, B2: 0.1, Tau: 0.1}
	}
	a, b := speconArrival(0, *truth(100), 0), speconArrival(1, *truth(40), 0)
	must.NoError(t, s.Submit(a.Job, a.Truth))
	must.NoError(t, s.Submit(b.Job, b.Truth))
	p := func(id string) *structs.Placement {
		return &structs.Placement{Namespace: "default", JobID: id, NumWorkers: 1, Nodes: []*structs.NodeTasks{{NodeID: "node-00", Workers: 1}}}
	}
	must.NoError(t, s.Enact(&structs.Plan{Placements: []*structs.Placement{p(a.Job.ID)}}))
	s.Advance(10) // a's restart penalty
	s.Advance(20)
	must.Eq(t, 10.0, s.Jobs()[0].Step, must.Sprint("alone: 1 step/s"))
	must.NoError(t, s.Enact(&structs.Plan{Placements: []*structs.Placement{p(a.Job.ID), p(b.Job.ID)}}))
	s.Advance(30) // b restarts until 30: a trains alone
	must.Eq(t, 20.0, s.Jobs()[0].Step)
	s.Advance(50) // both train: half speed each
	must.Eq(t, 30.0, s.Jobs()[0].Step)
	must.Eq(t, 10.0, s.Jobs()[1].Step)
	s.Advance(110) // b's last 30 steps at half speed: it finishes at 110
	must.Eq(t, 60.0, s.Jobs()[0].Step)
	must.Eq(t, 110.0, s.Results()[1].Finish)
	s.Advance(130) // a alone again: full speed
	must.Eq(t, 80.0, s.Jobs()[0].Step)

	s = New(cfg)
	a, b = speconArrival(0, *truth(100), 0), speconArrival(1, *truth(100), 0)
	a.Truth.(*SharedCPUTruth).Interference = 0.5
	b.Truth.(*SharedCPUTruth).Interference = 0.5
	must.NoError(t, s.Submit(a.Job, a.Truth))
	must.NoError(t, s.Submit(b.Job, b.Truth))
	must.NoError(t, s.Enact(&structs.Plan{Placements: []*structs.Placement{p(a.Job.ID), p(b.Job.ID)}}))
	s.Advance(10) // both restart
	s.Advance(40) // 30 s at 2 · 1.5 s a step
	must.Eq(t, 10.0, s.Jobs()[0].Step)
	must.Eq(t, 10.0, s.Jobs()[1].Step)
}

// TestSpeconWorkloads: the fixed schedule is n VAE containers gap seconds
// apart, of 220 steps (200 · 1.1); the random one draws models and times within the span, the same
// for a seed; both run on M510 workers with low sample noise.
func TestSpeconWorkloads(t *testing.T) {
	fixed := SpeconFixedWorkload(20, 50, 1)
	must.SliceLen(t, 20, fixed.Arrivals)
	must.Eq(t, speconNodeCPU, fixed.NodeCPU)
	must.Eq(t, speconNoise, fixed.Noise)
	for i, a := range fixed.Arrivals {
		must.Eq(t, float64(50*i), a.Time)
		must.Eq(t, "vae", a.Truth.(*SharedCPUTruth).Model)
		must.Eq(t, 220.0, a.Truth.(*SharedCPUTruth).Steps)
		must.Eq(t, speconParallel, a.Truth.(*SharedCPUTruth).Parallel)
		must.Eq(t, 1, a.RequestWorkers)
		must.NoError(t, a.Job.Validate())
	}

	r := SpeconRandomWorkload(30, 600, 1)
	must.SliceLen(t, 30, r.Arrivals)
	models := map[string]int{}
	for i, a := range r.Arrivals {
		must.Between(t, 0, a.Time, 600)
		if i > 0 {
			must.LessEq(t, a.Time, r.Arrivals[i-1].Time)
		}
		models[a.Truth.(*SharedCPUTruth).Model]++
		must.NoError(t, a.Job.Validate())
	}
	must.MapLen(t, len(speconModels), models, must.Sprint("30 draws see every model"))
	again := SpeconRandomWorkload(30, 600, 1)
	for i := range r.Arrivals {
		must.Eq(t, r.Arrivals[i].Time, again.Arrivals[i].Time)
		must.Eq(t, r.Arrivals[i].Job.ID, again.Arrivals[i].Job.ID)
	}
	must.NotEq(t, r.Arrivals[0].Time, SpeconRandomWorkload(30, 600, 2).Arrivals[0].Time)
}
