package drf

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/internal/pq"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/planner/subtask"
	"github.com/caravan-sched/caravan/structs"
)

// Name is the algorithm's registry name.
const Name = "drf"

// DRF implements planner.Algorithm.
type DRF struct {
	// cruise grows a measured job's servers in the ratio Cruise's cost
	// model gives, instead of one per worker.
	cruise bool
}

var (
	_ planner.Algorithm    = (*DRF)(nil)
	_ planner.Describer    = (*DRF)(nil)
	_ planner.Configurable = (*DRF)(nil)
)

// SetConfig takes split: "even" (the default: one server per worker, up
// to the servers' maximum) or "cruise" (servers per worker as Cruise's
// cost model of the job's measured subtasks says, √(K/A) at most 1).
func (d *DRF) SetConfig(options map[string]string) error {
	cruiseSplit := false
	for k, v := range options {
		switch {
		case k != "split":
			return fmt.Errorf("unknown option %q; drf takes split", k)
		case v == "cruise":
			cruiseSplit = true
		case v != "even":
			return fmt.Errorf("split = %q: use \"even\" or \"cruise\"", v)
		}
	}
	d.cruise = cruiseSplit
	return nil
}

// New returns DRF.
func New() planner.Algorithm { return &DRF{} }

// Name returns "drf".
func (*DRF) Name() string { return Name }

// Capabilities: DRF reads the jobs' subtasks under split = "cruise",
// and nothing else (planner.Describer).
func (d *DRF) Capabilities() planner.Capabilities {
	if d.cruise {
		return planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorSubtasks}}
	}
	return planner.Capabilities{}
}

type job struct {
	view       *planner.Job
	tasks      planner.JobTasks
	p, w       int
	minP, maxP int
	minW, maxW int
	domP, domW float64
	weight     float64
	// psPerWorker is how many servers the job grows per worker (≤ 1).
	psPerWorker   float64
	active, atMax bool
	paused        string
}

// share is the job's weighted dominant share, summing its tasks' dominant
// shares (each task's largest share of a resource).
func (j *job) share() float64 {
	return (float64(j.p)*j.domP + float64(j.w)*j.domW) / j.weight
}

// next returns the ps and workers the job would have after one more step.
func (j *job) next() (p, w int) {
	p, w = j.p, j.w+1
	if j.maxP > 0 && p < min(j.maxP, int(math.Ceil(j.psPerWorker*float64(w)-1e-9))) {
		p++
	}
	return p, w
}

// Plan allocates by weighted DRF, then places smallest job first as Optimus
// does, shrinking jobs that do not fit.
func (d *DRF) Plan(req *planner.Request) (*planner.Decision, error) {
	views := slices.Clone(req.Jobs)
	planner.SortJobs(views)
	c := planner.NewCluster(req.Nodes)
	agg := planner.NewAggregate(c)

	jobs := make([]*job, len(views))
	for i, v := range views {
		ps, workers := v.Bounds()
		j := &job{view: v, tasks: c.JobTasks(v), minW: max(workers.Min, 1), maxW: workers.Max, weight: v.Job.Weight, psPerWorker: 1}
		if cost, ok := subtask.Estimate(v.Subtasks); ok && d.cruise {
			j.psPerWorker = min(1, math.Sqrt(cost.K/cost.A))
		}
		if v.HasPS() {
			j.minP, j.maxP = max(ps.Min, 1), ps.Max
			j.domP = agg.DominantShare(j.tasks.PS)
		}
		j.domW = agg.DominantShare(j.tasks.Worker)
		jobs[i] = j
	}

	// Minimums first, by priority, then grow the smallest weighted share.
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(jobs[b].view.Job.Priority, jobs[a].view.Job.Priority)
	})
	h := pq.Heap[int]{Less: func(a, b int) bool {
		sa, sb := jobs[a].share(), jobs[b].share()
		return sa < sb || sa == sb && a < b
	}}
	for _, i := range order {
		j := jobs[i]
		if !agg.Fits(j.tasks.PS, j.minP, j.tasks.Worker, j.minW) {
			j.paused = fmt.Sprintf("drf: waiting: the cluster has no room for the minimum of %s: %s", structs.Shape{PS: j.minP, Workers: j.minW}, agg.Shortfall(j.tasks.PS, j.minP, j.tasks.Worker, j.minW))
			continue
		}
		agg.Take(j.tasks.PS, j.minP)
		agg.Take(j.tasks.Worker, j.minW)
		j.p, j.w, j.active = j.minP, j.minW, true
		h.Push(i)
	}
	for h.Len() > 0 {
		i := h.Pop()
		j := jobs[i]
		if j.w >= j.maxW {
			j.atMax = true
			continue
		}
		p, w := j.next()
		if !agg.Fits(j.tasks.PS, p-j.p, j.tasks.Worker, w-j.w) {
			continue
		}
		agg.Take(j.tasks.PS, p-j.p)
		agg.Take(j.tasks.Worker, w-j.w)
		j.p, j.w = p, w
		h.Push(i)
	}

	return place(c, jobs), nil
}

// place places the jobs with placement.Decision, smallest weighted share
// first.
func place(c *planner.Cluster, jobs []*job) *planner.Decision {
	in := make([]placement.Job, len(jobs))
	for i, j := range jobs {
		in[i] = placement.Job{
			View: j.view, Tasks: j.tasks, PS: j.p, Workers: j.w, MinPS: j.minP, MinWorkers: j.minW,
			Allocated: j.active, Size: j.share() * j.weight, Shrink: j.shrink,
		}
	}
	return placement.Decision(c, in, func(i int, r placement.Result) string {
		j := jobs[i]
		if !r.Placed() {
			if j.paused == "" {
				return fmt.Sprintf("drf: waiting: no set of nodes has room for the minimum of %s", structs.Shape{PS: j.minP, Workers: j.minW})
			}
			return j.paused
		}
		reason := "the cluster has no room for more"
		switch {
		case r.Backfilled:
			reason = "its minimum, in room the others left"
		case r.PS != j.p || r.Workers != j.w:
			reason = fmt.Sprintf("shrunk from %s to fit the free nodes", structs.Shape{PS: j.p, Workers: j.w})
		case j.atMax:
			reason = "at its maximum"
		}
		j.p, j.w = r.PS, r.Workers
		return fmt.Sprintf("drf: %s at dominant share %.3f; %s", structs.Shape{PS: r.PS, Workers: r.Workers}, j.share()*j.weight, reason)
	})
}

// shrink drops a worker, and a parameter server when that leaves more of
// them than workers, keeping the minimums; false at the minimum.
func (j *job) shrink(p, w int) (int, int, bool) {
	switch {
	case w > j.minW:
		w--
		if p > max(j.minP, w) {
			p--
		}
		return p, w, true
	case p > j.minP:
		return p - 1, w, true
	}
	return p, w, false
}
