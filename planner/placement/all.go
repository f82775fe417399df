package placement

import (
	"cmp"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// Job is one job for PlaceAll: the counts its allocation gave it, the least
// it runs with, and how it shrinks.
type Job struct {
	// View is the job; where it runs now is View.Current, nil if
	// nowhere. A job allocated the same counts stays there when it still
	// fits: moving it would restart it for nothing.
	View              *planner.Job
	Tasks             planner.JobTasks
	PS, Workers       int
	MinPS, MinWorkers int
	// Allocated is false for a job the allocation left out; PlaceAll then
	// only tries it at its minimum, after the others.
	Allocated bool
	// Size orders the allocated jobs: the smallest is placed first.
	Size float64
	// Shrink returns the counts with one task fewer, or false when ps and
	// workers are the job's minimum.
	Shrink func(ps, workers int) (int, int, bool)
}

// Result is where PlaceAll put a job. Nodes is nil when the job got
// nothing; PS and Workers may be below the job's allocation if it was
// shrunk to fit.
type Result struct {
	Nodes       []*structs.NodeTasks
	PS, Workers int
	// Backfilled is set for a job placed at its minimum in the room left
	// after the others.
	Backfilled bool
}

// Placed reports whether the job got tasks.
func (r Result) Placed() bool { return r.Nodes != nil }

// PlaceAll first leaves in place every job allocated what it runs with now.
// Then it places the other allocated jobs smallest first, as Optimus's
// Theorem 1 prescribes, shrinking a job that does not fit one task at a time until it
// fits or is at its minimum. Then it tries every job still without a place,
// at its minimum, in the room left: the allocation may have left it out
// against the aggregate capacity, or others may have shrunk since it failed.
// It returns one result per job, in the order of jobs.
func PlaceAll(c *planner.Cluster, jobs []Job) []Result {
	order := make([]int, 0, len(jobs))
	for i, j := range jobs {
		if j.Allocated {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(jobs[a].Size, jobs[b].Size) })

	out := make([]Result, len(jobs))
	for _, i := range order {
		j := jobs[i]
		if kept := keep(c, j); kept != nil {
			out[i] = Result{Nodes: kept.Nodes, PS: j.PS, Workers: j.Workers}
		}
	}
	placer := New(c)
	for _, i := range order {
		j := jobs[i]
		if out[i].Placed() {
			continue
		}
		ps, w := j.PS, j.Workers
		for {
			if nodes, ok := placer.Place(j.Tasks.PS, ps, j.Tasks.Worker, w); ok {
				out[i] = Result{Nodes: nodes, PS: ps, Workers: w}
				break
			}
			var more bool
			if ps, w, more = j.Shrink(ps, w); !more {
				break
			}
		}
	}
	for i, j := range jobs {
		if out[i].Placed() {
			continue
		}
		if nodes, ok := placer.Place(j.Tasks.PS, j.MinPS, j.Tasks.Worker, j.MinWorkers); ok {
			out[i] = Result{Nodes: nodes, PS: j.MinPS, Workers: j.MinWorkers, Backfilled: true}
		}
	}
	return out
}

// keep takes the capacity of j's current placement when j was allocated the
// same counts and still fits there.
func keep(c *planner.Cluster, j Job) *structs.Placement {
	return c.KeepCurrent(j.View.Current, j.Tasks, j.PS, j.Workers)
}

// Decision is PlaceAll's results as an algorithm's decision, for the
// algorithms that allocate counts first and place them with PlaceAll
// (drf, optimus): one placement per job, sorted by job
// (planner.SortPlacements). reason(i, r) says why jobs[i] got r; for a job
// PlaceAll gave nothing (!r.Placed()), it is the reason the job is paused
// with.
func Decision(c *planner.Cluster, jobs []Job, reason func(i int, r Result) string) *planner.Decision {
	out := make([]*structs.Placement, len(jobs))
	for i, r := range PlaceAll(c, jobs) {
		v := jobs[i].View
		if !r.Placed() {
			out[i] = planner.Paused(v, reason(i, r))
			continue
		}
		out[i] = &structs.Placement{
			Namespace: v.Job.Namespace, JobID: v.Job.ID, NumPS: r.PS, NumWorkers: r.Workers, Nodes: r.Nodes,
			Reason: reason(i, r),
		}
	}
	planner.SortPlacements(out)
	return &planner.Decision{Placements: out}
}
