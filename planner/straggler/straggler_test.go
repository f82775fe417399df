package straggler

import (
	"fmt"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

const now = int64(1_700_000_000_000_000_000)

// usage returns a report at t of workers w0..wn-1 on node-0..node-(n-1)
// with the given step times.
func usage(at int64, steps ...float64) *structs.JobUsage {
	u := &structs.JobUsage{JobID: "job", Namespace: "default", Time: at}
	for r, s := range steps {
		u.Tasks = append(u.Tasks, &structs.TaskUsage{Role: structs.RoleWorker, Rank: r, NodeID: fmt.Sprintf("node-%d", r),
			CPULimitMHz: 1000, MemoryLimitMB: 1024, TaskStepTimeS: s})
	}
	u.Tasks = append(u.Tasks, &structs.TaskUsage{Role: structs.RolePS, Rank: 0, NodeID: "node-0", TaskStepTimeS: 9})
	return u
}

func TestSlow(t *testing.T) {
	// Median speed 1/0.5 = 2 steps/s; rank 3 at 1/1.25 = 0.8 < 1 is slow;
	// rank 2 at 1/0.9 = 1.11 is not. The server's time does not count.
	got := Slow(usage(now, 0.5, 0.5, 0.9, 1.25, 0.4), 0.5)
	must.Len(t, 1, got)
	must.Eq(t, 3, got[0].Rank)
	must.Eq(t, "node-3", got[0].NodeID)
	must.Eq(t, 1.25, got[0].StepTimeS)
	must.Eq(t, 0.5, got[0].MedianStepTimeS)
	// One measured worker has no peers; unmeasured workers do not count.
	must.Len(t, 0, Slow(usage(now, 3), 0.5))
	must.Len(t, 0, Slow(usage(now, 0, 0, 3), 0.5))
	must.Len(t, 0, Slow(nil, 0.5))
}

// TestTracker: a worker is due once slow in 3 reports over 60 s in a row;
// a report where it is not slow starts it again.
func TestTracker(t *testing.T) {
	tr := NewTracker(Config{})
	key := structs.NewJobKey("default", "job")
	sec := int64(time.Second)
	must.False(t, tr.Observe(usage(now, 1, 1, 3)))
	must.False(t, tr.Observe(usage(now+30*sec, 1, 1, 3)))
	must.Len(t, 0, tr.Due(key, now+30*sec))
	// Third report, but only 50 s.
	must.False(t, tr.Observe(usage(now+50*sec, 1, 1, 3)))
	must.Len(t, 0, tr.Due(key, now+50*sec))
	must.True(t, tr.Observe(usage(now+60*sec, 1, 1, 3)))
	due := tr.Due(key, now+60*sec)
	must.Len(t, 1, due)
	must.Eq(t, 2, due[0].Rank)
	must.Eq(t, 4, due[0].Reports)
	must.Eq(t, now, due[0].Since)
	must.False(t, tr.Observe(usage(now+70*sec, 1, 1, 3)), must.Sprint("already due"))
	must.False(t, tr.Observe(usage(now+70*sec, 1, 1, 3)), must.Sprint("the same report again"))
	must.Eq(t, 5, tr.Due(key, now+70*sec)[0].Reports)

	// Caught up once: the window starts again.
	must.False(t, tr.Observe(usage(now+80*sec, 1, 1, 1)))
	must.False(t, tr.Observe(usage(now+90*sec, 1, 1, 3)))
	must.Len(t, 0, tr.Due(key, now+200*sec))

	tr.Reset(key)
	must.Len(t, 0, tr.Due(key, now+200*sec))
}

// TestApply: the straggler's worker moves off its node to the node with
// the most room, with an action saying why; a straggler with nowhere to
// go stays.
func TestApply(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("node", 3, 4000, 8192, 0)
	h.Nodes[2].CPU = 8000
	j := h.AddJob(planner.MockJob("job", structs.Bounds{Min: 1, Max: 2}, structs.Bounds{Min: 1, Max: 4}), nil)
	cur := &structs.Placement{Namespace: "default", JobID: "job", NumPS: 1, NumWorkers: 3, Nodes: []*structs.NodeTasks{
		{NodeID: "node-0", PS: 1, Workers: 1}, {NodeID: "node-1", Workers: 2}}}
	j.Current = cur
	req := h.Request()
	req.Now = now + int64(2*time.Minute)
	dec := &planner.Decision{Placements: []*structs.Placement{cur}}
	s := Straggler{Rank: 2, NodeID: "node-1", CPU: 1000, MemoryMB: 1024, StepTimeS: 3, MedianStepTimeS: 1, Since: now, Last: now, Reports: 5}
	out := Apply(req, dec, map[structs.JobKey][]Straggler{j.Job.Key(): {s}}, Config{})
	must.NoError(t, planner.CheckDecision(req, dec))
	must.Len(t, 1, out)
	must.Eq(t, "node-2", out[0].To)
	p := dec.Placements[0]
	must.Eq(t, []*structs.NodeTasks{{NodeID: "node-0", PS: 1, Workers: 1}, {NodeID: "node-1", Workers: 1}, {NodeID: "node-2", Workers: 1}}, p.Nodes)
	must.Len(t, 1, p.Actions)
	a := p.Actions[0]
	must.Eq(t, structs.ActionStragglerReplaced, a.Kind)
	must.Eq(t, 2, a.Rank)
	must.Eq(t, "node-1", a.NodeID)
	must.Eq(t, map[string]string{"from": "node-1", "to": "node-2", "step_time_s": "3", "median_step_time_s": "1"}, a.Details)
	must.StrContains(t, a.Reason, "3.0× the median worker's 1s, in 5 reports over 2m0s")
	// The current placement is not touched.
	must.Eq(t, 2, cur.Nodes[1].Workers)
	must.Len(t, 0, cur.Actions)

	// No room elsewhere: nothing moves, and the outcome says why.
	for _, n := range h.Nodes {
		if n.ID != "node-1" {
			n.CPU = 500
		}
	}
	dec = &planner.Decision{Placements: []*structs.Placement{cur}}
	out = Apply(req, dec, map[structs.JobKey][]Straggler{j.Job.Key(): {s}}, Config{})
	must.Eq(t, "", out[0].To)
	must.Eq(t, "no other node has room for it", out[0].Why)
	must.Eq(t, cur, dec.Placements[0])
}
