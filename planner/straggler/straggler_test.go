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

// TestSlow_Servers: a server slower than half the median server's speed
// is a straggler when its CPU is not above its peers' (a machine
// problem, DLRover §5.4); with more CPU than its peers it has more of the
// work, and is not one.
func TestSlow_Servers(t *testing.T) {
	u := usage(now, 1, 1)
	u.Tasks = u.Tasks[:2]
	for r, c := range []struct{ step, cpu float64 }{{0.1, 4000}, {0.1, 4100}, {0.45, 3900}, {0.5, 8000}} {
		u.Tasks = append(u.Tasks, &structs.TaskUsage{Role: structs.RolePS, Rank: r, NodeID: fmt.Sprintf("node-%d", r),
			CPUMHz: c.cpu, CPULimitMHz: 16000, MemoryLimitMB: 2048, TaskStepTimeS: c.step})
	}
	// Median speed (10+10+2.22+2)/… = 6.11 steps/s; ranks 2 and 3 are
	// below 3.06. Median CPU 4050: rank 2's 3900 is a machine problem,
	// rank 3's 8000 is load.
	got := Slow(u, 0.5)
	must.Len(t, 1, got)
	must.Eq(t, Straggler{Role: structs.RolePS, Rank: 2, NodeID: "node-2", CPU: 16000, MemoryMB: 2048, StepTimeS: 0.45,
		MedianStepTimeS: 1 / ((10 + 1/0.45) / 2), Since: now, Last: now, Reports: 1}, got[0])
}

// TestTracker_Default: a worker reported slow once is due 60 s later
// with no further report: the report stands until the next commit.
func TestTracker_Default(t *testing.T) {
	tr := NewTracker(Config{})
	key := structs.NewJobKey("default", "job")
	tr.Observe(usage(now, 1, 1, 3))
	must.False(t, tr.Tick(now))
	must.Len(t, 0, tr.Due(key, now+int64(59*time.Second)))
	must.False(t, tr.Tick(now+int64(59*time.Second)))
	must.True(t, tr.Tick(now+int64(time.Minute)), must.Sprint("the window ended with no new report"))
	must.False(t, tr.Tick(now+int64(61*time.Second)), must.Sprint("said once"))
	tr.Observe(usage(now+int64(62*time.Second), 1, 1, 3))
	must.False(t, tr.Tick(now+int64(62*time.Second)), must.Sprint("said once"))
	due := tr.Due(key, now+int64(time.Minute))
	must.Len(t, 1, due)
	must.Eq(t, Straggler{Role: structs.RoleWorker, Rank: 2, NodeID: "node-2", CPU: 1000, MemoryMB: 1024, StepTimeS: 3,
		MedianStepTimeS: 1, Since: now, Last: now + int64(62*time.Second), Reports: 2}, due[0])
}

// TestTracker: with Reports 3, a worker is due once slow in 3 reports
// over 60 s in a row; a report where it is not slow starts it again.
func TestTracker(t *testing.T) {
	tr := NewTracker(Config{Reports: 3})
	key := structs.NewJobKey("default", "job")
	sec := int64(time.Second)
	tr.Observe(usage(now, 1, 1, 3))
	must.False(t, tr.Tick(now))
	tr.Observe(usage(now+30*sec, 1, 1, 3))
	must.False(t, tr.Tick(now+30*sec))
	must.Len(t, 0, tr.Due(key, now+30*sec))
	// Third report, but only 50 s.
	tr.Observe(usage(now+50*sec, 1, 1, 3))
	must.False(t, tr.Tick(now+50*sec))
	must.Len(t, 0, tr.Due(key, now+50*sec))
	tr.Observe(usage(now+60*sec, 1, 1, 3))
	must.True(t, tr.Tick(now+60*sec))
	due := tr.Due(key, now+60*sec)
	must.Len(t, 1, due)
	must.Eq(t, 2, due[0].Rank)
	must.Eq(t, 4, due[0].Reports)
	must.Eq(t, now, due[0].Since)
	tr.Observe(usage(now+70*sec, 1, 1, 3))
	must.False(t, tr.Tick(now+70*sec), must.Sprint("already due"))
	tr.Observe(usage(now+70*sec, 1, 1, 3))
	must.False(t, tr.Tick(now+70*sec), must.Sprint("the same report again"))
	must.Eq(t, 5, tr.Due(key, now+70*sec)[0].Reports)

	// Caught up once: the window starts again.
	tr.Observe(usage(now+80*sec, 1, 1, 1))
	must.False(t, tr.Tick(now+80*sec))
	tr.Observe(usage(now+90*sec, 1, 1, 3))
	must.False(t, tr.Tick(now+90*sec))
	must.Len(t, 0, tr.Due(key, now+200*sec))

	tr.Reset(key)
	must.Len(t, 0, tr.Due(key, now+200*sec))
}

// TestApply: the straggler's worker moves off its node to the node with
// the most room, with an action saying why; a straggler with nowhere to
// go stays.
func TestApply(t *testing.T) {
	h, j, req, dec := applyCase(t, 2*time.Minute, &structs.Placement{Namespace: "default", JobID: "job", NumPS: 1, NumWorkers: 3, Nodes: []*structs.NodeTasks{
		{NodeID: "node-0", PS: 1, Workers: 1}, {NodeID: "node-1", Workers: 2}}})
	cur := j.Current
	s := Straggler{Role: structs.RoleWorker, Rank: 2, NodeID: "node-1", CPU: 1000, MemoryMB: 1024, StepTimeS: 3, MedianStepTimeS: 1, Since: now, Last: now, Reports: 5}
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
	must.Eq(t, map[string]string{"From": "node-1", "To": "node-2", "StepTimeS": "3", "MedianStepTimeS": "1"}, a.Details)
	must.StrContains(t, a.Reason, "worker 2 takes 3s a step, 3.0× the median worker's 1s, in 5 reports over 2m0s (below 0.5 of the median speed, Optimus §5.2): moved from node-1 to node-2")
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

// TestApply_Server: a slow parameter server moves like a worker, at its
// size, with a reason citing DLRover §5.4.
func TestApply_Server(t *testing.T) {
	_, j, req, dec := applyCase(t, time.Minute, &structs.Placement{Namespace: "default", JobID: "job", NumPS: 2, NumWorkers: 2, Nodes: []*structs.NodeTasks{
		{NodeID: "node-0", PS: 1, Workers: 1}, {NodeID: "node-1", PS: 1, Workers: 1}}})
	s := Straggler{Role: structs.RolePS, Rank: 1, NodeID: "node-1", StepTimeS: 0.4, MedianStepTimeS: 0.1, Since: now, Last: now, Reports: 1}
	out := Apply(req, dec, map[structs.JobKey][]Straggler{j.Job.Key(): {s}}, Config{})
	must.NoError(t, planner.CheckDecision(req, dec))
	must.Len(t, 1, out)
	must.Eq(t, "node-2", out[0].To)
	p := dec.Placements[0]
	must.Eq(t, []*structs.NodeTasks{{NodeID: "node-0", PS: 1, Workers: 1}, {NodeID: "node-1", Workers: 1}, {NodeID: "node-2", PS: 1}}, p.Nodes)
	must.Eq(t, 2, p.NumPS)
	a := p.Actions[0]
	must.Eq(t, structs.RolePS, a.Role)
	must.Eq(t, 1, a.Rank)
	must.StrContains(t, a.Reason, "parameter server 1 takes 0.4s a step, 4.0× the median parameter server's 0.1s")
	must.StrContains(t, a.Reason, "DLRover §5.4")
}

// applyCase is a cluster of three nodes (4000, 4000 and 8000 MHz) running
// job "job" at cur, a request at now+after and a decision that keeps cur.
func applyCase(t *testing.T, after time.Duration, cur *structs.Placement) (*planner.Harness, *planner.Job, *planner.Request, *planner.Decision) {
	h := planner.NewHarness(t)
	h.AddNodes("node", 3, 4000, 8192, 0)
	h.Nodes[2].CPU = 8000
	j := h.AddJob(planner.MockJob("job", structs.Bounds{Min: 1, Max: 2}, structs.Bounds{Min: 1, Max: 4}), nil)
	j.Current = cur
	req := h.Request()
	req.Now = now + int64(after)
	return h, j, req, &planner.Decision{Placements: []*structs.Placement{cur}}
}
