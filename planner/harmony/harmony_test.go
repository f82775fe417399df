package harmony

import (
	"fmt"
	"slices"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// jobWith is a PS job of up to 8 workers and servers with subtasks
// measured at one worker: cpu of computation, net of communication; not
// measured when both are zero.
func jobWith(h *planner.Harness, id string, submit int64, cpu, net float64) *planner.Job {
	j := planner.MockJob(id, structs.Bounds{Min: 1, Max: 8}, structs.Bounds{Min: 1, Max: 8})
	j.SubmitTime = submit
	v := h.AddJob(j, nil)
	if cpu+net > 0 {
		v.Subtasks = &planner.Subtasks{CPU: cpu, Net: net, PS: 1, Workers: 1}
	}
	return v
}

func byID(dec *planner.Decision) map[string]*structs.Placement {
	out := map[string]*structs.Placement{}
	for _, p := range dec.Placements {
		out[p.JobID] = p
	}
	return out
}

func nodeSet(p *structs.Placement) []string {
	var ids []string
	for _, nt := range p.Nodes {
		ids = append(ids, nt.NodeID)
	}
	slices.Sort(ids)
	return ids
}

// planRound runs Harmony on the harness's request, checks the decision, and
// makes it every job's current placement for the next round.
func planRound(t *testing.T, h *planner.Harness, alg planner.Algorithm) map[string]*structs.Placement {
	t.Helper()
	req := h.Request()
	dec, err := alg.Plan(req)
	must.NoError(t, err)
	must.NoError(t, planner.CheckDecision(req, dec))
	got := byID(dec)
	for _, j := range req.Jobs {
		j.Current = got[j.Job.ID]
	}
	return got
}

// fourJobs is four nodes and jobs a {4, 1}, b {1, 4}, a2 {4, 1} and
// b2 {1, 4}, arriving in that order.
func fourJobs(t *testing.T) *planner.Harness {
	h := planner.NewHarness(t)
	h.AddNodes("n", 4, 16000, 65536, 0)
	jobWith(h, "a", 1, 4, 1)
	jobWith(h, "b", 2, 1, 4)
	jobWith(h, "a2", 3, 4, 1)
	jobWith(h, "b2", 4, 1, 4)
	return h
}

// TestHarmony_Plan: with no groups yet, Algorithm 1 groups the profiled
// jobs in arrival order on all four nodes and stops at the first job that
// does not raise U; that job waits; a job not profiled yet is profiled in
// the smallest group.
func TestHarmony_Plan(t *testing.T) {
	h := fourJobs(t)
	// On 4 machines (see TestGroup_StopsAtFirstNonImprovement for the same
	// on 2): {a, b}: one group, ΣC = 1 + 0.25, ΣN = 5: U = [0.25, 1];
	// + a2: one group, ΣC = 2.25, ΣN = 6: U = [0.375, 1], better;
	// + b2: ΣC = 2.5, ΣN = 10: U = [0.25, 1], worse: b2 waits.
	jobWith(h, "new", 5, 0, 0)
	got := planRound(t, h, New())

	for _, id := range []string{"a", "b", "a2"} {
		p := got[id]
		must.Eq(t, 4, p.NumWorkers, must.Sprint(p.Reason))
		must.Eq(t, 4, p.NumPS)
		must.Eq(t, nodeSet(got["a"]), nodeSet(p))
		must.StrContains(t, p.Reason, "in a group of 3 jobs on 4 nodes")
		for _, nt := range p.Nodes {
			must.Eq(t, 1, nt.PS)
			must.Eq(t, 1, nt.Workers)
		}
	}
	must.True(t, got["b2"].Paused())
	must.StrHasPrefix(t, WaitingReason, got["b2"].Reason)
	must.Eq(t, nodeSet(got["a"]), nodeSet(got["new"]))
	must.Eq(t, profilingReason, got["new"].Reason)
}

// TestHarmony_ReplaceFinished: when a job of a group finishes, a waiting
// job within 5% of it (iteration time and comp/comm ratio) takes its
// place, and nothing else moves (L979).
func TestHarmony_ReplaceFinished(t *testing.T) {
	h := fourJobs(t)
	alg := New()
	first := planRound(t, h, alg)
	must.True(t, first["b2"].Paused())

	// a2 finishes; a3 arrives, profiled: on 4 machines its T_itr is
	// 4.1/4 + 1 = 2.025 against a2's 2 (1.25%), its comp/comm ratio 1.025
	// against 1 (2.5%).
	h.Jobs = slices.DeleteFunc(h.Jobs, func(j *planner.Job) bool { return j.Job.ID == "a2" })
	jobWith(h, "a3", 5, 4.1, 1)
	got := planRound(t, h, alg)
	must.Eq(t, first["a"].Nodes, got["a"].Nodes)
	must.Eq(t, first["b"].Nodes, got["b"].Nodes)
	must.Eq(t, nodeSet(first["a"]), nodeSet(got["a3"]))
	must.StrContains(t, got["a3"].Reason, "in a group of 3 jobs")
	must.True(t, got["b2"].Paused())
}

// TestHarmony_NoGainNoRegroup: when no waiting job replaces a finished
// one, Algorithm 1 over the group and the waiting jobs finds no grouping
// 5% better, so nothing moves and the waiting job still waits.
func TestHarmony_NoGainNoRegroup(t *testing.T) {
	h := fourJobs(t)
	alg := New()
	first := planRound(t, h, alg)
	h.Jobs = slices.DeleteFunc(h.Jobs, func(j *planner.Job) bool { return j.Job.ID == "a2" })
	// Kept: {a, b}: U = [0.25, 1] on the 4 nodes. Algorithm 1 on
	// {a, b, b2}: {a, b} as before; + b2: ΣC = 1.5, ΣN = 9, worse. No gain.
	got := planRound(t, h, alg)
	must.Eq(t, first["a"].Nodes, got["a"].Nodes)
	must.Eq(t, first["b"].Nodes, got["b"].Nodes)
	must.True(t, got["b2"].Paused())
	must.StrContains(t, got["a"].Reason, "in a group of 2 jobs")
}

// TestHarmony_NewJobJoins: a newly profiled job, the only one waiting,
// joins the group where U is highest when that raises U (L979, case 1).
func TestHarmony_NewJobJoins(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 4, 16000, 65536, 0)
	jobWith(h, "a", 1, 4, 1)
	jobWith(h, "b", 2, 1, 4)
	alg := New()
	first := planRound(t, h, alg)
	// {a, b}: U = [0.25, 1]; with c: ΣC = 2.25, ΣN = 6: [0.375, 1].
	jobWith(h, "c", 3, 4, 1)
	got := planRound(t, h, alg)
	must.Eq(t, first["a"].Nodes, got["a"].Nodes)
	must.Eq(t, nodeSet(first["a"]), nodeSet(got["c"]))
	must.StrContains(t, got["c"].Reason, "in a group of 3 jobs")

	// A network-heavy d would lower U ([0.2.., 1]): it waits.
	jobWith(h, "d", 4, 1, 4)
	again := planRound(t, h, alg)
	must.True(t, again["d"].Paused())
	must.StrHasPrefix(t, WaitingReason, again["d"].Reason)
	must.Eq(t, got["c"].Nodes, again["c"].Nodes)
}

// TestHarmony_InitialProfiling: with no groups, jobs not profiled run
// alone at their minimum, as many as there is room for (L813); once all
// are profiled, Algorithm 1 groups them.
func TestHarmony_InitialProfiling(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 3, 16000, 65536, 0)
	for i, id := range []string{"a", "b", "c"} {
		jobWith(h, id, int64(i), 0, 0)
	}
	alg := New()
	first := planRound(t, h, alg)
	var sets [][]string
	for _, id := range []string{"a", "b", "c"} {
		p := first[id]
		must.Eq(t, 1, p.NumWorkers)
		must.Eq(t, 1, p.NumPS)
		must.StrContains(t, p.Reason, "alone at its minimum while it is profiled")
		sets = append(sets, nodeSet(p))
	}
	must.NotEq(t, sets[0], sets[1])
	must.NotEq(t, sets[1], sets[2])

	// a is profiled, b and c not yet: the initial profiling goes on.
	h.Jobs[0].Subtasks = &planner.Subtasks{CPU: 4, Net: 1, PS: 1, Workers: 1}
	second := planRound(t, h, alg)
	must.Eq(t, first["a"].Nodes, second["a"].Nodes)

	// All profiled: Algorithm 1 over a {6, 1}, b {1, 2}, c {6, 1} on the 3
	// nodes. Kept alone on a node each, U_cpu = (6/7 + 1/3 + 6/7)/3 = 0.68.
	// Algorithm 1: {a, b}, one group (Σ|T_cpu − T_net| 2.67 against 4.33 at
	// two), ΣC = 7/3, ΣN = 3: [0.78, 1]; + c: ΣC = 13/3, ΣN = 4, T = 13/3:
	// [1, 0.92]. A 47% gain: all three in one group on the 3 nodes.
	h.Jobs[0].Subtasks = &planner.Subtasks{CPU: 6, Net: 1, PS: 1, Workers: 1}
	h.Jobs[1].Subtasks = &planner.Subtasks{CPU: 1, Net: 2, PS: 1, Workers: 1}
	h.Jobs[2].Subtasks = &planner.Subtasks{CPU: 6, Net: 1, PS: 1, Workers: 1}
	third := planRound(t, h, alg)
	for _, id := range []string{"a", "b", "c"} {
		must.Eq(t, 3, third[id].NumWorkers, must.Sprint(third[id].Reason))
	}
}

// TestHarmony_SetConfig validates options all or nothing.
func TestHarmony_SetConfig(t *testing.T) {
	h := New().(*Harmony)
	must.NoError(t, h.SetConfig(map[string]string{"similarity": "0.1", "min_gain": "0.02"}))
	must.Eq(t, Options{Similarity: 0.1, MinGain: 0.02}, h.opts)
	must.NoError(t, h.SetConfig(map[string]string{"min_gain": "0"}))
	must.Eq(t, Options{Similarity: 0.05, MinGain: 0}, h.opts)
	err := h.SetConfig(map[string]string{"similarity": "1.5", "min_gain": "x", "cpu_weight": "0.8"})
	must.ErrorContains(t, err, `similarity = "1.5": must be a number in [0, 1)`)
	must.ErrorContains(t, err, `min_gain = "x": must be a number in [0, 1)`)
	must.ErrorContains(t, err, `unknown option "cpu_weight"`)
	must.Eq(t, Options{Similarity: 0.05, MinGain: 0}, h.opts, must.Sprint("bad options change nothing"))
}

// TestHarmony_BadProfiles: subtasks that are infinite or all zero are no
// profile: such a job is profiled again, and nothing panics.
func TestHarmony_BadProfiles(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 3, 16000, 65536, 0)
	jobWith(h, "ok", 1, 2, 1)
	inf := jobWith(h, "inf", 2, 1, 1)
	inf.Subtasks.CPU = 1e308
	inf.Subtasks.Workers = 10 // CPU1 overflows to +Inf
	zero := jobWith(h, "zero", 3, 1, 1)
	zero.Subtasks.CPU, zero.Subtasks.Net = 0, 0
	got := planRound(t, h, New())
	must.StrContains(t, got["inf"].Reason, "profiled")
	must.StrContains(t, got["zero"].Reason, "profiled")
	must.False(t, got["ok"].Paused())
}

// TestHarmony_RegroupOntoFreeNodes: nodes a finished group left are taken
// up by regrouping when that gains at least 5% of U, idle nodes counting
// as zero.
func TestHarmony_RegroupOntoFreeNodes(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 4, 16000, 65536, 0)
	x := jobWith(h, "x", 1, 8, 1)
	// x runs in a group of its own on n-0 and n-1; the group on n-2 and
	// n-3 finished.
	x.Current = &structs.Placement{Namespace: x.Job.Namespace, JobID: "x", NumPS: 2, NumWorkers: 2,
		Reason: fmt.Sprintf(reasonFormat, 1, 2, 8.0, 1.0),
		Nodes:  []*structs.NodeTasks{{NodeID: "n-0", PS: 1, Workers: 1}, {NodeID: "n-1", PS: 1, Workers: 1}}}
	// Kept: on 2 nodes T_cpu = 4, T_net = 1: U(g) = [0.8, 0.2], over the 4
	// nodes [0.4, 0.1]. Algorithm 1 over x on all 4: T_cpu = 2: U =
	// [2/3, 1/3], a 67% gain: x spreads over the 4 nodes.
	got := planRound(t, h, New())
	must.Eq(t, 4, got["x"].NumWorkers, must.Sprint(got["x"].Reason))
	must.StrContains(t, got["x"].Reason, "in a group of 1 jobs on 4 nodes")

	// With min_gain above 67%, it stays.
	x.Current.Nodes = x.Current.Nodes[:2]
	x.Current.NumPS, x.Current.NumWorkers = 2, 2
	x.Current.Reason = fmt.Sprintf(reasonFormat, 1, 2, 8.0, 1.0)
	alg := New()
	must.NoError(t, alg.(*Harmony).SetConfig(map[string]string{"min_gain": "0.7"}))
	kept := planRound(t, h, alg)
	must.Eq(t, 2, kept["x"].NumWorkers)
}

// TestHarmony_ReplaceBySet: when no single waiting job is like the
// finished one, a set whose sums are replaces it (L979).
func TestHarmony_ReplaceBySet(t *testing.T) {
	h := fourJobs(t)
	alg := New()
	first := planRound(t, h, alg)
	// a2 {4, 1} finishes. e and f {2, 0.5} are each half of it (T_itr 1
	// against 2 on 4 nodes); together {4, 1}: the same. b2 (T_itr 4.25)
	// is too long to be part of the set.
	h.Jobs = slices.DeleteFunc(h.Jobs, func(j *planner.Job) bool { return j.Job.ID == "a2" })
	jobWith(h, "e", 5, 2, 0.5)
	jobWith(h, "f", 6, 2, 0.5)
	got := planRound(t, h, alg)
	must.Eq(t, first["a"].Nodes, got["a"].Nodes)
	for _, id := range []string{"e", "f"} {
		must.Eq(t, nodeSet(first["a"]), nodeSet(got[id]))
		must.StrContains(t, got[id].Reason, "in a group of 4 jobs")
	}
	must.True(t, got["b2"].Paused())
}

// TestHarmony_NewlyProfiled: a job profiled in a group carries on there
// while another profiled job waits; with none waiting it is handled: it
// joins the group where U is highest, or waits (L979 case 1).
func TestHarmony_NewlyProfiled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cpu, net float64
		joins    bool
	}{
		// {a, b, a2} on 4 nodes: ΣC = 2.25, ΣN = 6: U = [0.375, 1]. With
		// {4, 1}: ΣC = 3.25, ΣN = 7: [0.46, 1], better: it stays, grouped.
		{"CPU-heavy joins", 4, 1, true},
		// With {1, 4}: ΣC = 2.5, ΣN = 10: [0.25, 1], worse: it waits.
		{"network-heavy waits", 1, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fourJobs(t)
			fresh := jobWith(h, "new", 5, 0, 0)
			alg := New()
			first := planRound(t, h, alg)
			must.Eq(t, profilingReason, first["new"].Reason)

			fresh.Subtasks = &planner.Subtasks{CPU: tc.cpu / 4, Net: tc.net, PS: 4, Workers: 4}
			second := planRound(t, h, alg)
			must.Eq(t, first["new"].Nodes, second["new"].Nodes, must.Sprint("b2 waits: new carries on"))
			must.Eq(t, profilingReason, second["new"].Reason)

			h.Jobs = slices.DeleteFunc(h.Jobs, func(j *planner.Job) bool { return j.Job.ID == "b2" })
			third := planRound(t, h, alg)
			must.Eq(t, first["a"].Nodes, third["a"].Nodes)
			if tc.joins {
				must.Eq(t, nodeSet(first["a"]), nodeSet(third["new"]))
				must.StrContains(t, third["new"].Reason, "in a group of 4 jobs")
			} else {
				must.True(t, third["new"].Paused())
				must.StrHasPrefix(t, WaitingReason, third["new"].Reason)
			}
		})
	}
}
