package placement

import (
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestDecision: every job gets one placement, sorted by job; a job that
// fits runs at its counts with the reason for its result, a job that
// does not is shrunk to its minimum, and a job whose minimum does not fit
// is paused with the reason for its empty result.
func TestDecision(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 2, 4000, 16384, 0) // 8 tasks of 1000 MHz
	c := planner.NewCluster(h.Nodes)
	views := []*planner.Job{
		{Job: planner.MockJob("c", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 2})},
		{Job: planner.MockJob("a", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 4, Max: 8})},
		{Job: planner.MockJob("b", structs.Bounds{Min: 2, Max: 2}, structs.Bounds{Min: 6, Max: 6})},
	}
	shrink := func(min int) func(ps, w int) (int, int, bool) {
		return func(ps, w int) (int, int, bool) {
			if w <= min {
				return ps, w, false
			}
			return ps, w - 1, true
		}
	}
	jobs := []Job{
		{View: views[0], Tasks: c.JobTasks(views[0]), PS: 1, Workers: 2, MinPS: 1, MinWorkers: 1, Allocated: true, Size: 1, Shrink: shrink(1)},
		{View: views[1], Tasks: c.JobTasks(views[1]), PS: 1, Workers: 8, MinPS: 1, MinWorkers: 4, Allocated: true, Size: 2, Shrink: shrink(4)},
		{View: views[2], Tasks: c.JobTasks(views[2]), PS: 2, Workers: 6, MinPS: 2, MinWorkers: 6, Allocated: false, Size: 3, Shrink: shrink(6)},
	}
	var calls []int
	dec := Decision(c, jobs, func(i int, r Result) string {
		calls = append(calls, i)
		if !r.Placed() {
			return "waiting " + views[i].Job.ID
		}
		return structs.Shape{PS: r.PS, Workers: r.Workers}.String()
	})
	must.SliceLen(t, 3, dec.Placements)
	must.Eq(t, []int{0, 1, 2}, calls)
	a, b, cc := dec.Placements[0], dec.Placements[1], dec.Placements[2]
	must.Eq(t, "a", a.JobID)
	must.Eq(t, 1, a.NumPS)
	must.Eq(t, 4, a.NumWorkers, must.Sprint("shrunk to what the room left holds"))
	must.Eq(t, structs.Shape{PS: 1, Workers: 4}.String(), a.Reason)
	must.Eq(t, "b", b.JobID)
	must.True(t, b.Paused())
	must.Eq(t, "waiting b", b.Reason)
	must.Eq(t, "c", cc.JobID)
	must.Eq(t, 2, cc.NumWorkers)
	must.Eq(t, structs.Shape{PS: 1, Workers: 2}.String(), cc.Reason)
}
