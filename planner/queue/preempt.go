package queue

import (
	"fmt"
	"slices"
	"strings"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
)

// victim is a running job of a queue that preempt may shrink or pause
// for a job of higher priority, with what it had before the attempt.
type victim struct {
	j      *job
	p      *structs.Placement
	reason string
	// edited is set once the attempt changed j's placement.
	edited bool
}

// attempt is preempt trying to start job h at its minimum on the nodes of
// GPU type d by shrinking and pausing victims, the running jobs of h's
// queue of strictly lower priority, in trimOrder.
type attempt struct {
	a             *applier
	h             *job
	d             int
	m             structs.Shape
	gpu, cpu, mem int
	vs            []*victim
	base          *base
	// saved are the shares of h's queue before the attempt.
	saved []share
}

// base is the nodes of one GPU type with what the jobs of every queue but
// one take of them: what preempt checks a start of that queue's jobs
// against, with the queue's own jobs taken as they stand. Only the
// queue's jobs change while preempt works on it, so it builds a base
// once per queue and type, and tasks once per job.
type base struct {
	c     *planner.Cluster
	tasks map[*job]planner.JobTasks
}

// tasksOf returns j's tasks on b's nodes.
func (b *base) tasksOf(j *job) planner.JobTasks {
	t, ok := b.tasks[j]
	if !ok {
		t = b.c.JobTasks(j.view)
		b.tasks[j] = t
	}
	return t
}

// preempt starts, within each queue, paused jobs ahead of the queue's
// running jobs of strictly lower priority: for each paused job h whose
// minimum takes GPUs, highest priority first (fillOrder), on the first GPU
// type (by name) whose nodes may run h where this works, the running jobs
// of h's queue whose priority is below h's, in trimOrder, shrink one
// worker at a time toward their minimum workers, taking workers off that
// type's nodes, until h's minimum fits the queue's entitlement of every
// resource it limits and that type's nodes (placed as fill places); then,
// if still needed, they pause in the same order, a job counting only if
// it runs on the type's nodes or the queue lacks the CPU or memory it
// takes. The shrunk jobs that pausing left room for grow back as far as h
// still fits, highest first, and h starts. Where even all that does not
// make room, nothing changes: no preemption is useless. h may start
// without preempting anyone, when it fits as it is. What the preempted
// jobs gave back is no reclaim (active): it went to h. Passes over the
// queues repeat until none starts a job. It reports whether it changed
// any job.
func (a *applier) preempt() bool {
	changed := false
	for a.preemptPass() {
		changed = true
	}
	return changed
}

// preemptPass is one pass of preempt over the queues, in name order; it
// reports whether it started any job. Room a later queue's preemption
// leaves on another type's nodes may let an earlier queue's job start on
// the next pass. Passes end: each start makes the priorities of a
// queue's running jobs, sorted highest first, greater in lexical order,
// h taking the place of jobs of lower priority.
func (a *applier) preemptPass() bool {
	changed := false
	for q, qs := range a.queues {
		var cand []*job
		for _, k := range qs.jobs {
			if j := a.jobs[k]; j.p.Paused() && slices.Contains(j.feasible, true) {
				if gpu, _, _ := minimumTakes(j); gpu > 0 {
					cand = append(cand, j)
				}
			}
		}
		slices.SortFunc(cand, fillOrder)
		bases := make([]*base, a.cpu)
		for _, h := range cand {
			var vs []*victim
			for _, k := range qs.jobs {
				if j := a.jobs[k]; !j.p.Paused() && j.view.Job.Priority < h.view.Job.Priority {
					vs = append(vs, &victim{j: j})
				}
			}
			if len(vs) == 0 {
				continue
			}
			slices.SortFunc(vs, func(x, y *victim) int { return trimOrder(x.j, y.j) })
			for d := range a.cpu {
				if !h.feasible[d] {
					continue
				}
				at := &attempt{a: a, h: h, d: d, m: h.view.Minimum(), vs: vs}
				at.gpu, at.cpu, at.mem = minimumTakes(h)
				if !at.possible() {
					continue
				}
				if bases[d] == nil {
					bases[d] = &base{c: a.partitionsOf(d, q)[d].c, tasks: map[*job]planner.JobTasks{}}
				}
				at.base = bases[d]
				if at.run() {
					changed = true
					break
				}
			}
		}
	}
	return changed
}

// freeGPUs returns what the decision, as Apply changed it, leaves of the
// GPUs of type d.
func (a *applier) freeGPUs(d int) int {
	n := a.dims[d].capacity
	for _, qs := range a.queues {
		n -= qs.shares[d].usage
	}
	return n
}

// gpusOn returns the GPUs placement p of job j takes on the nodes of GPU
// type d.
func (a *applier) gpusOn(j *job, p *structs.Placement, d int) int {
	n := 0
	for _, nt := range p.Nodes {
		if i, ok := a.c.NodeIndex(nt.NodeID); ok && a.nodeDim[i] == d {
			n += nt.PS*j.gpuPS + nt.Workers*j.gpuWorker
		}
	}
	return n
}

// onType reports whether placement p runs tasks on the nodes of GPU type
// d.
func (a *applier) onType(p *structs.Placement, d int) bool {
	for _, nt := range p.Nodes {
		if i, ok := a.c.NodeIndex(nt.NodeID); ok && a.nodeDim[i] == d && nt.PS+nt.Workers > 0 {
			return true
		}
	}
	return false
}

// shares are the shares of the attempt's queue, as they change.
func (at *attempt) shares() []share { return at.a.queues[at.h.queue].shares }

// possible reports whether pausing every victim could make room: the
// queue's headroom and d's free GPUs plus what the victims take.
func (at *attempt) possible() bool {
	s := at.shares()
	gpu, cpu, mem := 0, 0, 0
	for _, v := range at.vs {
		gpu += at.a.gpusOn(v.j, v.j.p, at.d)
		for _, nt := range v.j.p.Nodes {
			if t := at.a.takesOf(v.j.tasks, nt); t != nil {
				cpu, mem = cpu+t[at.a.cpu], mem+t[at.a.cpu+1]
			}
		}
	}
	return s[at.d].headroom()+gpu >= at.gpu && at.a.freeGPUs(at.d)+gpu >= at.gpu &&
		s[at.a.cpu].headroom()+cpu >= at.cpu && s[at.a.cpu+1].headroom()+mem >= at.mem
}

// place returns where h's minimum goes on d's nodes as the jobs stand,
// when it fits them and its queue's entitlement.
func (at *attempt) place() ([]*structs.NodeTasks, bool) {
	a, s := at.a, at.shares()
	if s[at.d].headroom() < at.gpu || s[a.cpu].headroom() < at.cpu || s[a.cpu+1].headroom() < at.mem || a.freeGPUs(at.d) < at.gpu {
		return nil, false
	}
	c := at.base.c.Clone()
	for _, k := range a.queues[at.h.queue].jobs {
		j := a.jobs[k]
		if j.p.Paused() {
			continue
		}
		var tasks *planner.JobTasks
		for _, nt := range j.p.Nodes {
			i, ok := c.NodeIndex(nt.NodeID)
			if !ok {
				continue
			}
			if tasks == nil {
				t := at.base.tasksOf(j)
				tasks = &t
			}
			ps, worker := tasks.For(nt)
			if !c.FitsPair(i, ps, nt.PS, worker, nt.Workers) {
				continue // an invalid decision: CheckDecision's to report
			}
			if nt.PS > 0 {
				c.Take(i, ps, nt.PS)
			}
			c.Take(i, worker, nt.Workers)
		}
	}
	t := at.base.tasksOf(at.h)
	return placement.New(c).Place(t.PS, at.m.PS, t.Worker, at.m.Workers)
}

// fits reports whether h's minimum fits d's nodes and its queue's
// entitlement as the jobs stand.
func (at *attempt) fits() bool {
	_, ok := at.place()
	return ok
}

// edit makes v's placement the attempt's own copy, first recording why.
func (at *attempt) edit(v *victim) {
	if v.edited {
		return
	}
	j := v.j
	why := fmt.Sprintf("queue %q: preempted by higher-priority job %q (priority %d > %d)",
		at.a.queues[j.queue].name, at.h.view.Job.ID, at.h.view.Job.Priority, j.view.Job.Priority)
	if j.reason == "" {
		j.reason = why
	} else {
		j.reason += "; " + why
	}
	j.p = j.p.Copy()
	j.p.Metric = nil
	v.edited = true
}

// lastEntryOn returns the last entry of j's placement with workers on the
// nodes of GPU type d, -1 when none has.
func (a *applier) lastEntryOn(j *job, d int) int {
	for e := len(j.p.Nodes) - 1; e >= 0; e-- {
		nt := j.p.Nodes[e]
		if i, ok := a.c.NodeIndex(nt.NodeID); ok && a.nodeDim[i] == d && nt.Workers > 0 {
			return e
		}
	}
	return -1
}

// run makes the attempt, possible being true, and reports whether h
// started; when it did not, it leaves everything as it found it.
func (at *attempt) run() bool {
	a, h := at.a, at.h
	at.saved = slices.Clone(at.shares())
	for _, v := range at.vs {
		v.p, v.reason, v.edited = v.j.p, v.j.reason, false
	}
	ok := at.fits()
	for _, v := range at.vs {
		_, wb := v.j.view.Bounds()
		for !ok && v.j.p.NumWorkers > max(wb.Min, 1) {
			e := a.lastEntryOn(v.j, at.d)
			if e < 0 {
				break
			}
			at.edit(v)
			a.removeWorker(v.j, at.d, e)
			ok = at.fits()
		}
	}
	for _, v := range at.vs {
		if ok {
			break
		}
		s := at.shares()
		short := s[a.cpu].headroom() < at.cpu && a.takesSome(v.j, a.cpu) || s[a.cpu+1].headroom() < at.mem && a.takesSome(v.j, a.cpu+1)
		if v.j.p.Paused() || !a.onType(v.j.p, at.d) && !short {
			continue
		}
		at.edit(v)
		a.pause(v.j, at.d)
		ok = at.fits()
	}
	if !ok {
		copy(at.shares(), at.saved)
		for _, v := range at.vs {
			v.j.p, v.j.reason = v.p, v.reason
		}
		return false
	}
	// Pausing may have made more room than shrinking needed.
	for _, v := range slices.Backward(at.vs) {
		if v.edited && !v.j.p.Paused() {
			a.regrow(v.j, v.p, at.fits)
		}
	}
	var preempted []string
	for _, v := range at.vs {
		if !v.edited {
			continue
		}
		if v.j.p.Shape() == v.p.Shape() {
			v.j.p, v.j.reason = v.p, v.reason
			continue
		}
		a.settle(v.j)
		preempted = append(preempted, fmt.Sprintf("%q", v.j.view.Job.ID))
	}
	nodes, _ := at.place()
	qs := a.queues[h.queue]
	reason := fmt.Sprintf("queue %q: started at its minimum of %s on %s GPUs within its quota (%d nominal + %d borrowed)",
		qs.name, at.m, qs.shares[at.d].label, qs.shares[at.d].nominal, qs.shares[at.d].borrowed)
	if len(preempted) > 0 {
		reason += fmt.Sprintf(", preempting its lower-priority jobs %s", strings.Join(preempted, ", "))
	} else {
		reason += ", ahead of its running jobs of lower priority"
	}
	h.p = &structs.Placement{Namespace: h.view.Job.Namespace, JobID: h.view.Job.ID, NumPS: at.m.PS, NumWorkers: at.m.Workers, Nodes: nodes, Reason: reason}
	for _, nt := range nodes {
		a.use(h.queue, h.tasks, nt, 1)
	}
	h.started = true
	// What the victims gave back went to h: no other queue reclaims it.
	for d := range at.saved {
		at.shares()[d].freed = at.saved[d].freed
	}
	return true
}

// takesSome reports whether job j's placement takes some of resource d.
func (a *applier) takesSome(j *job, d int) bool {
	for _, nt := range j.p.Nodes {
		if a.takes(j, nt, d) {
			return true
		}
	}
	return false
}
