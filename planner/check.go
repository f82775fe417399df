package planner

import (
	"errors"
	"fmt"

	"github.com/caravan-sched/caravan/structs"
)

// ErrInvalidDecision is wrapped by CheckDecision's errors.
var ErrInvalidDecision = errors.New("invalid decision")

// CheckDecision reports every way dec breaks the rules for req: a placement
// for each job and for no unknown job; per-node counts that add up; task
// counts within the job's bounds unless the job is paused; no parameter
// servers for all-reduce jobs; no node over its CPU, memory or device
// capacity; no task where its constraints forbid it; at most one task of a
// role per node under distinct_hosts. The server applies it to every
// decision, built-in or from a plugin, before committing it.
func CheckDecision(req *Request, dec *Decision) error {
	if dec == nil {
		return fmt.Errorf("%w: no decision", ErrInvalidDecision)
	}
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidDecision}, args...)...))
	}
	jobs := make(map[structs.JobKey]*Job, len(req.Jobs))
	for _, j := range req.Jobs {
		jobs[j.Job.Key()] = j
	}
	nodes := make(map[string]int, len(req.Nodes))
	for i, n := range req.Nodes {
		nodes[n.ID] = i
	}
	c := NewCluster(req.Nodes)
	seen := map[structs.JobKey]bool{}
	for _, p := range dec.Placements {
		key := p.Key()
		j, ok := jobs[key]
		switch {
		case !ok:
			fail("job %q in namespace %q is not in the request", p.JobID, p.Namespace)
			continue
		case seen[key]:
			fail("job %q is placed more than once", p.JobID)
			continue
		}
		seen[key] = true
		if err := p.Validate(); err != nil {
			fail("%v", err)
			continue
		}
		if p.Paused() {
			continue
		}
		ps, workers := j.Bounds()
		if !workers.Contains(p.NumWorkers) {
			fail("job %q gets %d workers, outside its bounds %d..%d", p.JobID, p.NumWorkers, workers.Min, workers.Max)
		}
		switch {
		case !j.HasPS() && p.NumPS != 0:
			fail("job %q is all-reduce but gets %d parameter servers", p.JobID, p.NumPS)
		case j.HasPS() && !ps.Contains(p.NumPS):
			fail("job %q gets %d parameter servers, outside its bounds %d..%d", p.JobID, p.NumPS, ps.Min, ps.Max)
		}
		tasks := c.JobTasks(j)
		for _, nt := range p.Nodes {
			i, ok := nodes[nt.NodeID]
			if !ok {
				fail("job %q is placed on unknown node %q", p.JobID, nt.NodeID)
				continue
			}
			if tasks.Worker.DistinctHosts && nt.Workers > 1 || tasks.PS != nil && tasks.PS.DistinctHosts && nt.PS > 1 {
				fail("job %q has more than one task of a role on node %q despite distinct_hosts", p.JobID, nt.NodeID)
			}
			if nt.PS > 0 && tasks.PS == nil {
				continue // reported above
			}
			if !c.FitsPair(i, tasks.PS, nt.PS, tasks.Worker, nt.Workers) {
				fail("job %q's %d ps and %d workers do not fit on node %s", p.JobID, nt.PS, nt.Workers, c.Describe(i))
				continue
			}
			if nt.PS > 0 {
				c.Take(i, tasks.PS, nt.PS)
			}
			c.Take(i, tasks.Worker, nt.Workers)
		}
	}
	for key, j := range jobs {
		if !seen[key] {
			fail("job %q has no placement", j.Job.ID)
		}
	}
	return errors.Join(errs...)
}
