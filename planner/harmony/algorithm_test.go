package harmony

import (
	"slices"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// jobWith is a PS job of up to 8 workers and servers with subtasks
// measured at one worker: cpu of computation, net of communication.
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
	return ids
}

// TestHarmony_Plan: two CPU-heavy and two network-heavy jobs on four
// nodes form two complementary groups of two nodes; each job runs a
// worker and a server on each of its group's nodes; a job not measured
// yet runs alone at its minimum to be profiled.
func TestHarmony_Plan(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 5, 16000, 65536, 0)
	jobWith(h, "cpu-a", 1, 6, 1)
	jobWith(h, "cpu-b", 2, 6, 1)
	jobWith(h, "net-a", 3, 1, 3)
	jobWith(h, "net-b", 4, 1, 3)
	jobWith(h, "new", 5, 0, 0)
	req := h.Request()
	dec, err := New().Plan(req)
	must.NoError(t, err)
	must.NoError(t, planner.CheckDecision(req, dec))
	got := byID(dec)

	must.Eq(t, 1, got["new"].NumWorkers)
	must.Eq(t, 1, got["new"].NumPS)
	must.StrContains(t, got["new"].Reason, "measured")
	// Each CPU-heavy job shares its nodes with a network-heavy one.
	for _, id := range []string{"cpu-a", "cpu-b"} {
		p := got[id]
		must.Eq(t, 2, p.NumWorkers, must.Sprint(p.Reason))
		must.Eq(t, 2, p.NumPS)
		partners := 0
		for _, other := range []string{"net-a", "net-b"} {
			if slices.Equal(nodeSet(p), nodeSet(got[other])) {
				partners++
			}
		}
		must.Eq(t, 1, partners, must.Sprintf("%s on %v", id, nodeSet(p)))
		for _, nt := range p.Nodes {
			must.Eq(t, 1, nt.PS)
			must.Eq(t, 1, nt.Workers)
		}
	}
}

// TestHarmony_Regroup: running groups stay when a new job arrives and
// regrouping would gain under 5%; the new job is grouped on free nodes.
func TestHarmony_Regroup(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 6, 16000, 65536, 0)
	jobWith(h, "cpu-a", 1, 6, 1)
	jobWith(h, "net-a", 2, 1, 3)
	req := h.Request()
	alg := New()
	dec, err := alg.Plan(req)
	must.NoError(t, err)
	first := byID(dec)
	for _, j := range req.Jobs {
		j.Current = first[j.Job.ID]
	}

	// The same jobs, measured a little differently: nothing moves.
	req.Jobs[0].Subtasks.CPU = 6.1
	dec, err = alg.Plan(req)
	must.NoError(t, err)
	again := byID(dec)
	for id, p := range first {
		must.Eq(t, p.Nodes, again[id].Nodes, must.Sprint(again[id].Reason))
	}
	must.StrContains(t, again["cpu-a"].Reason, "kept in its group")
}

// TestHarmony_SetConfig validates options all or nothing.
func TestHarmony_SetConfig(t *testing.T) {
	h := New().(*Harmony)
	must.NoError(t, h.SetConfig(map[string]string{"cpu_weight": "0.8", "min_gain": "0.1"}))
	must.Eq(t, 0.8, h.opts.CPUWeight)
	must.Eq(t, 0.1, h.opts.MinGain)
	err := h.SetConfig(map[string]string{"cpu_weight": "0.3", "x": "1"})
	must.ErrorContains(t, err, `cpu_weight = "0.3": must be a number in (0.5, 1]`)
	must.ErrorContains(t, err, `unknown option "x"`)
	must.Eq(t, 0.8, h.opts.CPUWeight)
}

// TestHarmony_BadProfiles: subtasks that are infinite or all zero are no
// profile: such a job runs alone at its minimum, and nothing panics.
func TestHarmony_BadProfiles(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 3, 16000, 65536, 0)
	jobWith(h, "ok", 1, 2, 1)
	inf := jobWith(h, "inf", 2, 1, 1)
	inf.Subtasks.CPU = 1e308
	inf.Subtasks.Workers = 10 // CPU1 overflows to +Inf
	req := h.Request()
	dec, err := New().Plan(req)
	must.NoError(t, err)
	must.NoError(t, planner.CheckDecision(req, dec))
	must.StrContains(t, byID(dec)["inf"].Reason, "measured")
	must.NotNil(t, Group([]Job{{CPU1: 1, Net: 1}}, 2, Options{}))
}
