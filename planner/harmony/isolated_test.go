package harmony

import (
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/shoenig/test/must"
)

// TestIsolatedDoP: the largest DoP at which T_cpu = CPU1/m ≥ T_net.
func TestIsolatedDoP(t *testing.T) {
	cases := []struct {
		job   Job
		limit int
		want  int
	}{
		{Job{CPU1: 8, Net: 2}, 100, 4}, // 8/4 = 2 = T_net
		{Job{CPU1: 9, Net: 2}, 100, 4}, // 9/4 = 2.25 ≥ 2 > 9/5
		{Job{CPU1: 1, Net: 3}, 100, 1}, // network-bound even alone
		{Job{CPU1: 5, Net: 0}, 7, 7},   // no communication: every machine
		{Job{CPU1: 80, Net: 1}, 16, 16},
	}
	for _, tc := range cases {
		must.Eq(t, tc.want, IsolatedDoP(tc.job, tc.limit), must.Sprintf("%+v", tc.job))
	}
}

// TestBaselines: isolated runs each job on machines of its own at its
// DoP, first come, first served; colocated runs them at the same DoP on
// shared machines.
func TestBaselines(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 10, 16000, 65536, 0)
	jobWith(h, "j1", 1, 8, 2) // DoP 4
	jobWith(h, "j2", 2, 6, 1) // DoP 6
	jobWith(h, "j3", 3, 1, 3) // DoP 1
	jobWith(h, "j4", 4, 0, 0) // not profiled: its minimum, 1

	iso := planRound(t, h, NewIsolated())
	must.Eq(t, 4, iso["j1"].NumWorkers)
	must.Eq(t, 4, iso["j1"].NumPS)
	must.Eq(t, 6, iso["j2"].NumWorkers)
	seen := map[string]bool{}
	for _, id := range []string{"j1", "j2"} {
		for _, n := range nodeSet(iso[id]) {
			must.False(t, seen[n], must.Sprintf("node %s shared", n))
			seen[n] = true
		}
	}
	must.True(t, iso["j3"].Paused(), must.Sprint("all 10 nodes are taken"))
	must.True(t, iso["j4"].Paused(), must.Sprint("first come, first served"))
	must.StrContains(t, iso["j4"].Reason, "first come, first served")
	// Running jobs stay; j1 finishes and j3 starts on its nodes.
	again := planRound(t, h, NewIsolated())
	must.Eq(t, iso["j2"].Nodes, again["j2"].Nodes)
	h.Jobs = h.Jobs[1:]
	after := planRound(t, h, NewIsolated())
	must.Eq(t, 1, after["j3"].NumWorkers)
	must.Eq(t, 1, after["j4"].NumWorkers)

	h2 := planner.NewHarness(t)
	h2.AddNodes("n", 10, 16000, 65536, 0)
	jobWith(h2, "j1", 1, 8, 2)
	jobWith(h2, "j2", 2, 6, 1)
	jobWith(h2, "j3", 3, 1, 3)
	co := planRound(t, h2, NewColocated())
	must.Eq(t, 4, co["j1"].NumWorkers)
	must.Eq(t, 6, co["j2"].NumWorkers)
	must.Eq(t, 1, co["j3"].NumWorkers, must.Sprint("shares a node"))
	must.Eq(t, ColocatedName, NewColocated().Name())
	must.Eq(t, IsolatedName, NewIsolated().Name())
}

// TestIsolated_ResizesOnceProfiled: a job started at its minimum before it
// was profiled moves to its DoP when that fits.
func TestIsolated_ResizesOnceProfiled(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 6, 16000, 65536, 0)
	j := jobWith(h, "j", 1, 0, 0)
	first := planRound(t, h, NewIsolated())
	must.Eq(t, 1, first["j"].NumWorkers)
	j.Subtasks = &planner.Subtasks{CPU: 8, Net: 2, PS: 1, Workers: 1} // DoP 4
	again := planRound(t, h, NewIsolated())
	must.Eq(t, 4, again["j"].NumWorkers)
	must.Eq(t, 4, again["j"].NumPS)

	// Noisy samples that now give DoP 5 (CPU1/Net = 5.2) move it no more:
	// only a job at its minimum is resized.
	j.Subtasks = &planner.Subtasks{CPU: 10.4 / 4, Net: 2, PS: 4, Workers: 4}
	for _, a := range []planner.Algorithm{NewIsolated(), NewColocated()} {
		kept := planRound(t, h, a)
		must.Eq(t, 4, kept["j"].NumWorkers, must.Sprint(a.Name()))
	}
}

// TestColocated_Orders: the co-located baseline puts at most
// NaiveJobsPerNode jobs on a machine; best pairs a CPU-heavy job with a
// network-heavy one, worst pairs alike jobs.
func TestColocated_Orders(t *testing.T) {
	for _, tc := range []struct {
		order           string
		together, apart [2]string
	}{
		{OrderBest, [2]string{"a", "b"}, [2]string{"a", "a2"}},
		{OrderWorst, [2]string{"a", "a2"}, [2]string{"a", "b"}},
	} {
		t.Run(tc.order, func(t *testing.T) {
			h := planner.NewHarness(t)
			h.AddNodes("n", 2, 16000, 65536, 0)
			jobWith(h, "a", 1, 1.8, 1) // DoP 1, T_diff 0.8
			jobWith(h, "b", 2, 1, 3)   // DoP 1, T_diff −2
			jobWith(h, "a2", 3, 1.8, 1)
			jobWith(h, "b2", 4, 1, 3)
			jobWith(h, "c", 5, 1, 3)
			alg := NewColocated()
			must.NoError(t, alg.(planner.Configurable).SetConfig(map[string]string{"order": tc.order}))
			got := planRound(t, h, alg)
			must.Eq(t, nodeSet(got[tc.together[0]]), nodeSet(got[tc.together[1]]))
			must.NotEq(t, nodeSet(got[tc.apart[0]]), nodeSet(got[tc.apart[1]]))
			must.True(t, got["c"].Paused(), must.Sprint("two jobs on each machine already"))
		})
	}
	must.Error(t, NewColocated().(planner.Configurable).SetConfig(map[string]string{"order": "random"}))
	must.Error(t, NewColocated().(planner.Configurable).SetConfig(map[string]string{"pairs": "best"}))
}

// TestIsolated_ResizeKeepsOthersMachines: a job resized to its DoP does
// not take the machine of another job that waits to be resized and is
// kept where it is (they shared a machine before the fix).
func TestIsolated_ResizeKeepsOthersMachines(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 4, 16000, 65536, 0)
	j1 := jobWith(h, "j1", 1, 0, 0)
	j2 := jobWith(h, "j2", 2, 0, 0)
	first := planRound(t, h, NewIsolated())
	must.Eq(t, 1, first["j1"].NumWorkers)
	must.Eq(t, 1, first["j2"].NumWorkers)
	j1.Subtasks = &planner.Subtasks{CPU: 4, Net: 2, PS: 1, Workers: 1} // DoP 2
	j2.Subtasks = &planner.Subtasks{CPU: 6, Net: 2, PS: 1, Workers: 1} // DoP 3: does not fit
	got := planRound(t, h, NewIsolated())
	must.Eq(t, 2, got["j1"].NumWorkers)
	must.Eq(t, first["j2"].Nodes, got["j2"].Nodes)
	for _, n := range nodeSet(got["j1"]) {
		must.SliceNotContains(t, nodeSet(got["j2"]), n)
	}
}
