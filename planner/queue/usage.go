package queue

import (
	"cmp"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// QueueUsage is what a queue's jobs use of the cluster.
type QueueUsage struct {
	// Resources are the resources of the queue's GPU quotas and those its
	// jobs use or wait for, GPU types by name first, then CPU and memory
	// when the queue limits them.
	Resources []structs.QueueResource
	// Jobs are the queue's jobs, the PendingJobs paused or below their
	// minimum first, each group in job key order.
	Jobs        []structs.JobKey
	PendingJobs int
}

// Resource returns the usage of the named resource, nil when u has none.
func (u *QueueUsage) Resource(name string) *structs.QueueResource {
	for i := range u.Resources {
		if u.Resources[i].Resource == name {
			return &u.Resources[i]
		}
	}
	return nil
}

// Usage computes each queue's usage from what is decided: jobs are the
// active jobs, placements their placements (a job without one waits, as
// if paused), nodes the cluster's, with the capacity Caravan may use. It
// resolves GPU types, splits quotas that match several and reads
// placements as Apply does. Its result has an entry per queue of queues,
// and one for structs.DefaultQueue when that is not among them but has
// jobs; nil with no queues.
//
// A cohort's borrowing is spread over its lenders thus, per resource: a
// queue borrows what it uses beyond its nominal, and a queue of a cohort
// may lend its idle nominal (nominal less used) within its lending limit
// (a quota that counts several types spends its limit type by type, in
// the order of their names, as Apply does). The cohort's lenders lend
// min(borrowed total, lendable total), served before the capacity no
// queue's nominal covers, as Apply borrows; each lends the same fraction
// of what it may lend, in whole units, the units left by rounding going
// to the largest fractions, ties by queue name.
//
// Usage is pure and deterministic, modifies none of its arguments and
// costs O(jobs × nodes) for the feasibility of jobs by GPU type, plus one
// pass over placements.
func Usage(queues []*structs.Queue, nodes []*structs.Node, jobs []*structs.Job, placements []*structs.Placement) map[string]*QueueUsage {
	if len(queues) == 0 {
		return nil
	}
	req := &planner.Request{Nodes: nodes, Jobs: make([]*planner.Job, 0, len(jobs))}
	for _, j := range jobs {
		if j != nil && j.Worker != nil {
			req.Jobs = append(req.Jobs, &planner.Job{Job: j})
		}
	}
	a := newApplier(req, queues)
	byKey := make(map[structs.JobKey]*structs.Placement, len(placements))
	for _, p := range placements {
		if p != nil {
			byKey[p.Key()] = p
		}
	}
	dec := &planner.Decision{Placements: make([]*structs.Placement, len(req.Jobs))}
	for i, v := range req.Jobs {
		if dec.Placements[i] = byKey[v.Job.Key()]; dec.Placements[i] == nil {
			dec.Placements[i] = planner.Paused(v, "")
		}
	}
	a.addJobs(dec)
	lim := nominals(a.dims, a.queues)

	out := make(map[string]*QueueUsage, len(a.queues))
	res := make([][]structs.QueueResource, len(a.queues)) // by queue, by dim
	for qi, q := range a.queues {
		res[qi] = make([]structs.QueueResource, len(a.dims))
		for d, dm := range a.dims {
			s := &q.shares[d]
			r := &res[qi][d]
			r.Resource, r.Nominal, r.Used = dm.name, s.nominal, s.usage
			if dm.gpu {
				r.Resource = "gpu/" + dm.name
				if s.entry >= 0 {
					r.Quota = q.quota.GPU[s.entry].Type
				}
			}
			if s.enforced {
				r.Borrowed = max(s.usage-s.nominal, 0)
			}
		}
	}
	a.pending(res)
	for d := range a.dims {
		a.lend(d, res, lim)
	}
	for qi, q := range a.queues {
		u := &QueueUsage{}
		for d, dm := range a.dims {
			if s := &q.shares[d]; dm.gpu && (s.entry >= 0 || res[qi][d].Used > 0 || res[qi][d].Pending > 0) {
				u.Resources = append(u.Resources, res[qi][d])
			}
		}
		// A GPU quota that matches no type of the cluster keeps its
		// nominal, for the record.
		for e, g := range q.quota.GPU {
			if g != nil && !slices.ContainsFunc(q.shares, func(s share) bool { return s.entry == e }) {
				u.Resources = append(u.Resources, structs.QueueResource{Resource: "gpu/" + g.Type, Quota: g.Type, Nominal: g.Nominal})
			}
		}
		slices.SortStableFunc(u.Resources, func(x, y structs.QueueResource) int { return cmp.Compare(x.Resource, y.Resource) })
		for d := a.cpu; d < len(a.dims); d++ {
			if q.shares[d].enforced {
				u.Resources = append(u.Resources, res[qi][d])
			}
		}
		var pending, running []structs.JobKey
		for _, ji := range q.jobs {
			j := a.jobs[ji]
			if belowMinimum(j) {
				pending = append(pending, j.view.Job.Key())
			} else {
				running = append(running, j.view.Job.Key())
			}
		}
		cmpKeys := func(x, y structs.JobKey) int { return x.Compare(y) }
		slices.SortFunc(pending, cmpKeys)
		slices.SortFunc(running, cmpKeys)
		u.Jobs, u.PendingJobs = append(pending, running...), len(pending)
		if len(u.Jobs) == 0 && q.name == structs.DefaultQueue && !slices.ContainsFunc(queues, func(o *structs.Queue) bool { return o.Name == structs.DefaultQueue }) {
			continue
		}
		out[q.name] = u
	}
	return out
}

// belowMinimum reports whether j's placement runs less than its minimum.
func belowMinimum(j *job) bool {
	have, least := j.p.Shape(), j.view.Minimum()
	return have.PS < least.PS || have.Workers < least.Workers
}

// pending adds to res (by queue, by dim) what the jobs below their
// minimum lack to run at it. A job's GPUs count toward the type it runs
// on, else the first type (by name) whose nodes may run it and of which
// its queue has a nominal, else the first type whose nodes may run it.
func (a *applier) pending(res [][]structs.QueueResource) {
	for _, j := range a.jobs {
		if !belowMinimum(j) {
			continue
		}
		has := make([]int, len(a.dims))
		for _, nt := range j.p.Nodes {
			for d, n := range a.takesOf(j.tasks, nt) {
				has[d] += n
			}
		}
		least := j.view.Minimum()
		r := res[j.queue]
		if gpus := least.PS*j.gpuPS + least.Workers*j.gpuWorker; gpus > 0 {
			d := slices.IndexFunc(has[:a.cpu], func(n int) bool { return n > 0 })
			if d < 0 {
				d = a.firstType(j, func(d int) bool { return a.queues[j.queue].shares[d].nominal > 0 })
			}
			if d < 0 {
				d = a.firstType(j, func(int) bool { return true })
			}
			if d >= 0 {
				r[d].Pending += max(gpus-has[d], 0)
			}
		}
		cpu, mem := least.Workers*j.tasks.Worker.CPU, least.Workers*j.tasks.Worker.MemoryMB
		if j.tasks.PS != nil {
			cpu, mem = cpu+least.PS*j.tasks.PS.CPU, mem+least.PS*j.tasks.PS.MemoryMB
		}
		r[a.cpu].Pending += max(cpu-has[a.cpu], 0)
		r[a.cpu+1].Pending += max(mem-has[a.cpu+1], 0)
	}
}

// firstType returns the first GPU type (dim) whose nodes may run j and
// that ok accepts, -1 for none.
func (a *applier) firstType(j *job, ok func(d int) bool) int {
	for d, f := range j.feasible {
		if f && ok(d) {
			return d
		}
	}
	return -1
}

// lend sets Lent in resource d of res (by queue, by dim): each cohort's
// borrowed total spread over its lenders (Usage's documentation gives the
// rule). lim are the queues' limits, whose lending limits it spends.
func (a *applier) lend(d int, res [][]structs.QueueResource, lim [][]limits) {
	can := make([]int, len(a.queues))
	for qi, q := range a.queues {
		s := &q.shares[d]
		if s.enforced {
			can[qi] = lendable(q, s, lim[qi], s.nominal-s.usage)
		}
	}
	var cohorts []string
	for _, q := range a.queues {
		if q.cohort != "" && !slices.Contains(cohorts, q.cohort) {
			cohorts = append(cohorts, q.cohort)
		}
	}
	for _, c := range cohorts {
		var lenders []int
		borrowed, total := 0, 0
		for qi, q := range a.queues {
			if q.cohort != c || !q.shares[d].enforced {
				continue
			}
			borrowed += res[qi][d].Borrowed
			if can[qi] > 0 {
				lenders = append(lenders, qi)
				total += can[qi]
			}
		}
		lent := min(borrowed, total)
		if lent == 0 {
			continue
		}
		// Each lender lends lent·can/total, rounded down; the units left
		// go to the largest remainders, ties by name (the queues are in
		// name order, and the sort is stable).
		rem := make([]int, len(lenders))
		left := lent
		for k, qi := range lenders {
			n, r := mulDiv(can[qi], lent, total)
			rem[k] = r
			res[qi][d].Lent = n
			left -= n
		}
		order := make([]int, len(lenders))
		for k := range order {
			order[k] = k
		}
		slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(rem[y], rem[x]) })
		for _, k := range order[:left] {
			res[lenders[k]][d].Lent++
		}
	}
}
