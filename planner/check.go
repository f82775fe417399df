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
// capacity at the entries' sizes; no task where its constraints forbid
// it; at most one task of a role per node under distinct_hosts; a size
// (NodeTasks.PSSize, WorkerSize) only for a resource the role gives as a
// range, and within it (a range with no max is bounded by the node's
// capacity); a batch (Placement.Batch) only for a job whose batch may
// vary, with its global and local batch within the job's bounds. The
// server applies it to every
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
		if msg := batchProblem(j, p.Batch); msg != "" {
			fail("job %q %s", p.JobID, msg)
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
		// A node may hold several entries of sizes: distinct_hosts
		// counts their sum.
		onNode := make(map[string]structs.Shape, len(p.Nodes))
		for _, nt := range p.Nodes {
			i, ok := nodes[nt.NodeID]
			if !ok {
				fail("job %q is placed on unknown node %q", p.JobID, nt.NodeID)
				continue
			}
			sum := onNode[nt.NodeID]
			sum.PS += nt.PS
			sum.Workers += nt.Workers
			onNode[nt.NodeID] = sum
			if tasks.Worker.DistinctHosts && sum.Workers > 1 && nt.Workers > 0 || tasks.PS != nil && tasks.PS.DistinctHosts && sum.PS > 1 && nt.PS > 0 {
				fail("job %q has more than one task of a role on node %q despite distinct_hosts", p.JobID, nt.NodeID)
			}
			if nt.PS > 0 && tasks.PS == nil {
				continue // reported above
			}
			sizesOK := true
			for _, e := range []struct {
				role string
				r    *structs.Role
				size structs.TaskSize
			}{{structs.RolePS, j.PSRole(), nt.PSSize}, {structs.RoleWorker, j.Job.Worker, nt.WorkerSize}} {
				for _, msg := range sizeProblems(e.r.Resources, e.size) {
					fail("job %q's %s on node %q: %s", p.JobID, e.role, nt.NodeID, msg)
					sizesOK = false
				}
			}
			if !sizesOK {
				continue
			}
			psTask, workerTask := tasks.For(nt)
			if !c.FitsPair(i, psTask, nt.PS, workerTask, nt.Workers) {
				fail("job %q's %s do not fit on node %s", p.JobID, structs.Shape{PS: nt.PS, Workers: nt.Workers}, c.Describe(i))
				continue
			}
			if nt.PS > 0 {
				c.Take(i, psTask, nt.PS)
			}
			c.Take(i, workerTask, nt.Workers)
		}
	}
	for key, j := range jobs {
		if !seen[key] {
			fail("job %q has no placement", j.Job.ID)
		}
	}
	return errors.Join(errs...)
}

// batchProblem says what is wrong with giving job j the batch b, "" when
// nothing is: a batch for a job whose batch is fixed, a global batch
// outside its bounds, a local batch outside its local bounds.
func batchProblem(j *Job, b *structs.Batch) string {
	if b == nil {
		return ""
	}
	bounds := j.Job.Training.BatchSize
	if bounds == nil {
		return fmt.Sprintf("has a fixed batch but gets batch %d", b.Global)
	}
	if b.Global < bounds.Min || b.Global > bounds.Max {
		return fmt.Sprintf("gets global batch %d, outside its bounds %d..%d", b.Global, bounds.Min, bounds.Max)
	}
	if lo, hi := bounds.LocalBounds(); b.Local < lo || b.Local > hi {
		return fmt.Sprintf("gets local batch %d, outside its bounds %d..%d", b.Local, lo, hi)
	}
	return ""
}

// sizeProblems lists what is wrong with giving a task of a role with
// resources r the size s: a size for a fixed resource, or one outside its
// range.
func sizeProblems(r *structs.Resources, s structs.TaskSize) []string {
	var out []string
	for _, e := range []struct {
		name, unit string
		size       int
		rng        *structs.ResourceRange
	}{{"cpu", "MHz", s.CPU, r.CPURange}, {"memory", "MB", s.MemoryMB, r.MemoryRange}} {
		switch {
		case e.size == 0:
		case e.rng == nil:
			out = append(out, fmt.Sprintf("%s is sized %d %s, but the role's %s is fixed", e.name, e.size, e.unit, e.name))
		case !e.rng.Contains(e.size):
			out = append(out, fmt.Sprintf("%s is sized %d %s, outside the role's range %s", e.name, e.size, e.unit, e.rng))
		}
	}
	return out
}
