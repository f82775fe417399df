package cruise

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
)

// Name is the algorithm's registry name.
const Name = "cruise"

// Cruise implements planner.Algorithm.
type Cruise struct{}

var _ planner.Algorithm = (*Cruise)(nil)

// New returns Cruise.
func New() planner.Algorithm { return &Cruise{} }

// Name returns "cruise".
func (*Cruise) Name() string { return Name }

// SplitJob returns how a PS job of n tasks should divide them between
// parameter servers and workers, within its bounds: the cost model of its
// measured subtasks (Estimate, SplitWithin), or without a measurement its
// bounds' maxima scaled to n. It reports false when no split of n keeps
// the bounds. An all-reduce job has no servers: all n are workers.
func SplitJob(j *planner.Job, n int) (ps, workers int, ok bool) {
	psb, wb := j.Bounds()
	if !j.HasPS() {
		return 0, n, wb.Contains(n)
	}
	if c, measured := Estimate(j.Subtasks); measured {
		w, s := c.SplitWithin(n, wb, psb)
		return s, w, w > 0
	}
	w := min(max(n*wb.Max/(wb.Max+psb.Max), wb.Min, n-psb.Max), wb.Max, n-psb.Min)
	return n - w, w, wb.Contains(w) && psb.Contains(n-w)
}

// Size is the number of tasks Cruise runs a job with: its workers'
// maximum, the machines a user hand-picks for it, which Cruise then
// divides between servers and workers (plus the servers' minimum when the
// bounds need it). An all-reduce job runs its workers' maximum.
func Size(j *planner.Job) int {
	psb, wb := j.Bounds()
	if !j.HasPS() {
		return wb.Max
	}
	return max(wb.Max, wb.Min+psb.Min)
}

// Plan runs jobs first come, first served at their Size, never
// preempting one; a job that does not fit waits, and later jobs that fit
// may start. Cruise divides each job's size between servers and workers
// by SplitJob; a running job stays where it is while its split holds, and
// moves (a rescale) when a new measurement changes it.
func (*Cruise) Plan(req *planner.Request) (*planner.Decision, error) {
	jobs := slices.Clone(req.Jobs)
	planner.SortJobs(jobs)
	slices.SortStableFunc(jobs, func(a, b *planner.Job) int { return cmp.Compare(a.Job.SubmitTime, b.Job.SubmitTime) })

	c := planner.NewCluster(req.Nodes)
	out := make([]*structs.Placement, len(jobs))
	tasks := make([]planner.JobTasks, len(jobs))
	splits := make([]structs.Shape, len(jobs))
	for i, j := range jobs {
		tasks[i] = c.JobTasks(j)
		ps, w, ok := SplitJob(j, Size(j))
		if !ok {
			ps, w = j.FixedRequest()
		}
		splits[i] = structs.Shape{PS: ps, Workers: w}
		if kept := c.KeepCurrent(j.Current, tasks[i], ps, w); kept != nil {
			kept.Reason = fmt.Sprintf("cruise: running with %d ps and %d workers", ps, w)
			out[i] = kept
		}
	}
	placer := placement.New(c)
	for i, j := range jobs {
		if out[i] != nil {
			continue
		}
		ps, w := splits[i].PS, splits[i].Workers
		nodes, ok := placer.Place(tasks[i].PS, ps, tasks[i].Worker, w)
		if !ok {
			out[i] = planner.Paused(j, fmt.Sprintf("cruise: waiting for room for %d ps and %d workers", ps, w))
			continue
		}
		why := "its bounds' maxima, not measured yet"
		if _, measured := Estimate(j.Subtasks); measured && j.HasPS() {
			why = "as its cost model says"
		}
		out[i] = &structs.Placement{
			Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: ps, NumWorkers: w, Nodes: nodes,
			Reason: fmt.Sprintf("cruise: %d ps and %d workers, %s", ps, w, why),
		}
	}
	planner.SortPlacements(out)
	return &planner.Decision{Placements: out}, nil
}
