package queue

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
)

// trimOrder orders the jobs a queue gives resources back from: lowest
// priority first, then least progress (Step), then by key.
func trimOrder(x, y *job) int {
	return cmp.Or(cmp.Compare(x.view.Job.Priority, y.view.Job.Priority), cmp.Compare(x.view.Step, y.view.Step), x.view.Job.Key().Compare(y.view.Job.Key()))
}

// fillOrder orders the paused jobs Apply starts: highest priority first,
// then first submitted, then by key.
func fillOrder(x, y *job) int {
	return cmp.Or(cmp.Compare(y.view.Job.Priority, x.view.Job.Priority), cmp.Compare(x.view.Job.SubmitTime, y.view.Job.SubmitTime), x.view.Job.Key().Compare(y.view.Job.Key()))
}

// trim brings every queue within its entitlement: it shrinks the queue's
// jobs, in trimOrder, one worker at a time toward their minimum, taking
// workers off the nodes of a resource the queue is over, then pauses
// whole jobs in the same order while the queue is still over. It reports
// whether it changed any job.
func (a *applier) trim() bool {
	trimmed := false
	for q, qs := range a.queues {
		if a.overDim(q, nil) < 0 {
			continue
		}
		var order []*job
		for _, k := range qs.jobs {
			if j := a.jobs[k]; !j.p.Paused() {
				order = append(order, j)
			}
		}
		slices.SortFunc(order, trimOrder)
		for _, j := range order {
			_, wb := j.view.Bounds()
			for j.p.NumWorkers > max(wb.Min, 1) {
				d, e := a.shrinkable(j)
				if e < 0 {
					break
				}
				a.removeWorker(j, d, e)
			}
		}
		for _, j := range order {
			if j.p.Paused() {
				continue
			}
			if d := a.overDim(q, j); d >= 0 {
				a.pause(j, d)
			}
		}
		// Pausing may have given back more than shrinking needed: the
		// jobs shrunk and still running grow back, highest first in
		// trimOrder's reverse, as far as the queue's entitlement allows.
		for _, j := range slices.Backward(order) {
			if j.p != j.orig && !j.p.Paused() {
				a.regrow(j, j.orig, nil)
			}
		}
		for _, j := range order {
			if a.settle(j) {
				trimmed = true
			}
		}
	}
	return trimmed
}

// settle finishes a job trim or preempt changed: one grown back whole
// gets the algorithm's placement again, one shrunk says so in its reason
// and gets its batch split over the workers it keeps and the actions of
// those only. It reports whether j ends with a placement other than the
// algorithm's.
func (a *applier) settle(j *job) bool {
	if j.p == j.orig {
		return false
	}
	if j.p.Shape() == j.orig.Shape() {
		j.p = j.orig // grown back whole
		return false
	}
	if !j.p.Paused() {
		j.p.Reason = fmt.Sprintf("%s; shrunk to %s", j.reason, j.p.Shape())
		j.p.Batch = rebatch(j.view, j.orig.Batch, j.p.NumWorkers)
		j.p.Actions = slices.DeleteFunc(j.p.Actions, func(act *structs.TaskAction) bool {
			return act.Role == structs.RoleWorker && act.Rank >= j.p.NumWorkers
		})
		if len(j.p.Actions) == 0 {
			j.p.Actions = nil
		}
	}
	return true
}

// overDim returns a resource queue q is over, -1 when none. With j
// non-nil, only a resource j's placement takes counts.
func (a *applier) overDim(q int, j *job) int {
	s := a.queues[q].shares
	for d := range s {
		if !s[d].over() {
			continue
		}
		if j == nil {
			return d
		}
		for _, nt := range j.p.Nodes {
			if a.takes(j, nt, d) {
				return d
			}
		}
	}
	return -1
}

// takes reports whether entry nt of job j takes some of resource d.
func (a *applier) takes(j *job, nt *structs.NodeTasks, d int) bool {
	i, ok := a.c.NodeIndex(nt.NodeID)
	if !ok {
		return false
	}
	if d < a.cpu {
		return a.nodeDim[i] == d && nt.PS*j.gpuPS+nt.Workers*j.gpuWorker > 0
	}
	return nt.PS+nt.Workers > 0
}

// shrinkable returns a resource j's queue is over and the last entry of
// j's placement whose workers take some of it; e is -1 when none does.
func (a *applier) shrinkable(j *job) (d, e int) {
	s := a.queues[j.queue].shares
	for e := len(j.p.Nodes) - 1; e >= 0; e-- {
		nt := j.p.Nodes[e]
		if nt.Workers == 0 {
			continue
		}
		one := &structs.NodeTasks{NodeID: nt.NodeID, Workers: 1}
		for d := range s {
			if s[d].over() && a.takes(j, one, d) {
				return d, e
			}
		}
	}
	return -1, -1
}

// edit makes j's placement Apply's own copy, first recording why.
func (a *applier) edit(j *job, d int) {
	if j.p != j.orig {
		return
	}
	j.reason = a.reason(j.queue, d)
	j.p = j.orig.Copy()
	j.p.Metric = nil
}

// removeWorker takes one worker off entry e of j's placement.
func (a *applier) removeWorker(j *job, d, e int) {
	a.edit(j, d)
	nt := j.p.Nodes[e]
	a.use(j.queue, j.tasks, &structs.NodeTasks{NodeID: nt.NodeID, Workers: 1, WorkerSize: nt.WorkerSize}, -1)
	nt.Workers--
	j.p.NumWorkers--
	if nt.Workers == 0 {
		nt.WorkerSize = structs.TaskSize{}
		if nt.PS == 0 {
			j.p.Nodes = slices.Delete(j.p.Nodes, e, e+1)
		}
	}
}

// regrow puts back, one at a time, the workers removeWorker took off j's
// placement since it was to, on the entries they came from, while j's
// queue is entitled to what each takes and keep (when not nil) accepts
// the worker put back; the worker keep refuses comes off again. The
// room is there: nothing else was placed since.
func (a *applier) regrow(j *job, to *structs.Placement, keep func() bool) {
	for _, o := range to.Nodes {
		for o.Workers > 0 {
			have := 0
			if e := entryOf(j.p, o.NodeID, o.PSSize, o.WorkerSize); e >= 0 {
				have = j.p.Nodes[e].Workers
			}
			if have >= o.Workers {
				break
			}
			one := &structs.NodeTasks{NodeID: o.NodeID, Workers: 1, WorkerSize: o.WorkerSize}
			if !a.fits(j.queue, j.tasks, one) {
				return
			}
			a.unfree(j.queue, j.tasks, one)
			a.addWorker(j, one, o.PSSize)
			if keep != nil && !keep() {
				// j.p is Apply's copy already: no reason to record.
				a.removeWorker(j, -1, entryOf(j.p, o.NodeID, o.PSSize, o.WorkerSize))
				return
			}
		}
	}
}

// entryOf returns the index of p's entry on node id with parameter
// servers of size pss that takes workers of size ws (or has none), -1
// when there is none.
func entryOf(p *structs.Placement, id string, pss, ws structs.TaskSize) int {
	return slices.IndexFunc(p.Nodes, func(nt *structs.NodeTasks) bool {
		return nt.NodeID == id && nt.PSSize == pss && (nt.WorkerSize == ws || nt.Workers == 0)
	})
}

// addWorker adds one worker, one (an entry of one worker), to j's
// placement, in the entry of its node with parameter servers of size pss
// (a new entry when there is none), and counts it toward j's queue. The
// caller checks that it fits the node and the queue.
func (a *applier) addWorker(j *job, one *structs.NodeTasks, pss structs.TaskSize) {
	a.use(j.queue, j.tasks, one, 1)
	e := entryOf(j.p, one.NodeID, pss, one.WorkerSize)
	if e < 0 {
		j.p.Nodes = append(j.p.Nodes, &structs.NodeTasks{NodeID: one.NodeID, PSSize: pss})
		structs.SortNodeTasks(j.p.Nodes)
		e = slices.IndexFunc(j.p.Nodes, func(nt *structs.NodeTasks) bool {
			return nt.NodeID == one.NodeID && nt.PSSize == pss && nt.Workers == 0 && nt.PS == 0
		})
	}
	j.p.Nodes[e].Workers++
	j.p.Nodes[e].WorkerSize = one.WorkerSize
	j.p.NumWorkers++
}

// pause gives back all of j's placement.
func (a *applier) pause(j *job, d int) {
	a.edit(j, d)
	for _, nt := range j.p.Nodes {
		a.use(j.queue, j.tasks, nt, -1)
	}
	j.p = planner.Paused(j.view, j.reason)
}

// rebatch returns the batch of a job shrunk to workers: its global batch
// split anew over them, nil (the job's fixed global batch) when it had
// none or the split leaves the job's bounds.
func rebatch(v *planner.Job, b *structs.Batch, workers int) *structs.Batch {
	bs := v.Job.Training.BatchSize
	if b == nil || bs == nil || workers <= 0 {
		return nil
	}
	lo, hi := bs.LocalBounds()
	share := (b.Global + workers - 1) / workers
	local := min(max(share, lo), hi)
	accum := (share+local-1)/local - 1
	out := &structs.Batch{Global: workers * local * (accum + 1), Local: local, AccumSteps: accum}
	if out.Global < bs.Min || out.Global > bs.Max {
		return nil
	}
	return out
}

// partition is the nodes of one GPU type (or of none) with what the
// decision leaves free on them.
type partition struct {
	c      *planner.Cluster
	placer *placement.Placer
}

// partitions splits the request's nodes by GPU type, indexed like the GPU
// dims, the nodes without GPUs last, each with the decision's placements
// taken.
func (a *applier) partitions() []*partition { return a.partitionsOf(-1, -1) }

// partitionsOf is partitions, with only partition only built (the others
// nil) when only is not negative, and without the placements of queue
// skip's jobs when skip is not negative.
func (a *applier) partitionsOf(only, skip int) []*partition {
	nodes := make([][]*structs.Node, a.cpu+1)
	part := make([]int, len(a.req.Nodes))
	for i, n := range a.req.Nodes {
		part[i] = a.nodeDim[i]
		if part[i] < 0 {
			part[i] = a.cpu
		}
		nodes[part[i]] = append(nodes[part[i]], n)
	}
	out := make([]*partition, len(nodes))
	for k := range nodes {
		if only < 0 || k == only {
			out[k] = &partition{c: planner.NewCluster(nodes[k])}
		}
	}
	for _, j := range a.jobs {
		if j.p.Paused() || j.queue == skip {
			continue
		}
		tasks := make([]*planner.JobTasks, len(out))
		for _, nt := range j.p.Nodes {
			i, ok := a.c.NodeIndex(nt.NodeID)
			if !ok || out[part[i]] == nil {
				continue
			}
			pc := out[part[i]].c
			if tasks[part[i]] == nil {
				t := pc.JobTasks(j.view)
				tasks[part[i]] = &t
			}
			pi, _ := pc.NodeIndex(nt.NodeID)
			ps, worker := tasks[part[i]].For(nt)
			if !pc.FitsPair(pi, ps, nt.PS, worker, nt.Workers) {
				continue // an invalid decision: CheckDecision's to report
			}
			if nt.PS > 0 {
				pc.Take(pi, ps, nt.PS)
			}
			pc.Take(pi, worker, nt.Workers)
		}
	}
	for _, p := range out {
		if p != nil {
			p.placer = placement.New(p.c)
		}
	}
	return out
}

// active reports whether queue q may reclaim resource d: it holds less
// than its guaranteed share (its nominal, or its demand when smaller),
// which no algorithm's choice to keep its jobs waiting overrides; or
// Apply trimmed some of d, or another queue is entitled to borrow it, or
// uses more than its nominal (a held placement Apply cannot trim).
func (a *applier) active(q, d int) bool {
	if s := &a.queues[q].shares[d]; s.enforced && s.usage < s.guaranteed {
		return true
	}
	for o, qs := range a.queues {
		s := &qs.shares[d]
		if s.freed > 0 || o != q && s.enforced && (s.entitled > s.nominal || s.usage > s.nominal) {
			return true
		}
	}
	return false
}

// fill runs paused jobs again, in fillOrder: one that runs now where it
// runs (keep), the others at their minimum on one GPU type's nodes with
// the room the decision leaves, when the job's queue is entitled to that
// much more of every resource it limits and may reclaim it (active). It
// reports whether it ran any.
func (a *applier) fill() bool {
	var cand []*job
	for _, j := range a.jobs {
		if !j.p.Paused() {
			continue
		}
		s := a.queues[j.queue].shares
		if slices.Contains(j.feasible, true) || s[a.cpu].enforced || s[a.cpu+1].enforced {
			cand = append(cand, j)
		}
	}
	if len(cand) == 0 {
		return false
	}
	slices.SortFunc(cand, fillOrder)
	var parts []*partition
	filled := false
	for _, j := range cand {
		if a.keep(j, &parts) {
			filled = true
			continue
		}
		s := a.queues[j.queue].shares
		m := j.view.Minimum()
		gpu, cpu, mem := minimumTakes(j)
		if s[a.cpu].headroom() < cpu || s[a.cpu+1].headroom() < mem {
			continue
		}
		var tries []int
		if gpu > 0 {
			for d := range a.cpu {
				if j.feasible[d] && s[d].headroom() >= gpu && a.active(j.queue, d) {
					tries = append(tries, d)
				}
			}
			slices.SortStableFunc(tries, func(x, y int) int { return cmp.Compare(s[y].headroom(), s[x].headroom()) })
		} else if s[a.cpu].enforced && a.active(j.queue, a.cpu) || s[a.cpu+1].enforced && a.active(j.queue, a.cpu+1) {
			tries = append(tries, a.cpu)
			for d := range a.cpu {
				tries = append(tries, d)
			}
		}
		for _, d := range tries {
			if parts == nil {
				parts = a.partitions()
			}
			p := parts[d]
			t := p.c.JobTasks(j.view)
			nodes, ok := p.placer.Place(t.PS, m.PS, t.Worker, m.Workers)
			if !ok {
				continue
			}
			j.p = &structs.Placement{
				Namespace: j.view.Job.Namespace, JobID: j.view.Job.ID, NumPS: m.PS, NumWorkers: m.Workers, Nodes: nodes,
				Reason: a.fillReason(j, d, m),
			}
			for _, nt := range nodes {
				a.use(j.queue, j.tasks, nt, 1)
			}
			j.started, a.queues[j.queue].started, filled = true, true, true
			break
		}
	}
	return filled
}

// minimumTakes returns what job j takes at its minimum: GPUs, CPU (MHz)
// and memory (MB).
func minimumTakes(j *job) (gpu, cpu, mem int) {
	m := j.view.Minimum()
	gpu = m.PS*j.gpuPS + m.Workers*j.gpuWorker
	cpu, mem = m.Workers*j.tasks.Worker.CPU, m.Workers*j.tasks.Worker.MemoryMB
	if m.PS > 0 && j.tasks.PS != nil {
		cpu, mem = cpu+m.PS*j.tasks.PS.CPU, mem+m.PS*j.tasks.PS.MemoryMB
	}
	return gpu, cpu, mem
}

// keep puts back job j's current placement, which the algorithm paused,
// when j's queue is entitled to all it takes and it still fits where it
// runs: a running job within its queue's quota is not stopped for
// nothing (a fixed-size algorithm pauses a job the queues shrank below
// its request). It reports whether it did.
func (a *applier) keep(j *job, parts *[]*partition) bool {
	cur := j.view.Current
	if cur == nil || cur.Paused() {
		return false
	}
	need := make([]int, len(a.dims))
	for _, nt := range cur.Nodes {
		for d, n := range a.takesOf(j.tasks, nt) {
			need[d] += n
		}
	}
	s := a.queues[j.queue].shares
	for d, n := range need {
		if n > 0 && s[d].headroom() < n {
			return false
		}
	}
	if *parts == nil {
		*parts = a.partitions()
	}
	// Every entry must fit on its node's partition, all of them at once.
	checks := map[*partition]*planner.Cluster{}
	for _, nt := range cur.Nodes {
		i, ok := a.c.NodeIndex(nt.NodeID)
		if !ok {
			return false
		}
		d := a.nodeDim[i]
		if d < 0 {
			d = a.cpu
		}
		p := (*parts)[d]
		c := checks[p]
		if c == nil {
			c = p.c.Clone()
			checks[p] = c
		}
		pi, _ := c.NodeIndex(nt.NodeID)
		t := c.JobTasks(j.view)
		ps, worker := t.For(nt)
		if !c.FitsPair(pi, ps, nt.PS, worker, nt.Workers) {
			return false
		}
		if nt.PS > 0 {
			c.Take(pi, ps, nt.PS)
		}
		c.Take(pi, worker, nt.Workers)
	}
	for p, c := range checks {
		p.c = c
		p.placer = placement.New(c)
	}
	kept := cur.Copy() // a deep copy: grow changes its entries in place
	kept.Reason = fmt.Sprintf("queue %q: kept at %s within its quota", a.queues[j.queue].name, cur.Shape())
	j.p, j.kept = kept, true
	for _, nt := range kept.Nodes {
		a.use(j.queue, j.tasks, nt, 1)
	}
	return true
}

// fillReason says why fill started job j at shape m on partition d.
func (a *applier) fillReason(j *job, d int, m structs.Shape) string {
	qs := a.queues[j.queue]
	if d < a.cpu {
		s := &qs.shares[d]
		return fmt.Sprintf("queue %q: started at its minimum of %s on %s GPUs within its quota (%d nominal + %d borrowed)", qs.name, m, s.label, s.nominal, s.borrowed)
	}
	return fmt.Sprintf("queue %q: started at its minimum of %s within its CPU and memory quota", qs.name, m)
}

// grow gives more workers to the running jobs of the queues fill started
// a job in, the ones it started and the algorithm's alike (not those trim
// shrank), in fillOrder, up to each job's maximum workers while its queue
// is entitled to what one more takes of every resource it limits. A job
// grows on the nodes of the GPU types it runs on, in the order of their
// names, then on those of the other types its workers may run on; on a
// type only while the queue may reclaim it (active), one node at a time,
// first the nodes it is on, as many workers as fit on each, with the room
// the decision leaves. A job whose workers take no GPU grows only on the
// nodes without GPUs it is on. Parameter servers stay as they are.
func (a *applier) grow() {
	var order []*job
	for _, j := range a.jobs {
		if !j.p.Paused() && (j.started || j.reason == "") && a.queues[j.queue].started {
			order = append(order, j)
		}
	}
	slices.SortFunc(order, fillOrder)
	var parts []*partition
	for _, j := range order {
		if _, wb := j.view.Bounds(); j.p.NumWorkers >= wb.Max {
			continue
		}
		if parts == nil {
			parts = a.partitions()
		}
		from := j.p.Shape()
		var grewOn []int
		for _, k := range a.growthParts(j) {
			if a.growOn(j, parts[k]) {
				grewOn = append(grewOn, k)
			}
		}
		if len(grewOn) > 0 {
			j.p.Reason = a.growReason(j, from, grewOn)
			if !j.started {
				j.p.Batch = rebatch(j.view, j.orig.Batch, j.p.NumWorkers)
			}
		}
	}
}

// growthParts returns the partitions job j may grow on, in the order
// grow tries them.
func (a *applier) growthParts(j *job) []int {
	on := make([]bool, a.cpu+1)
	for _, nt := range j.p.Nodes {
		if i, ok := a.c.NodeIndex(nt.NodeID); ok {
			if d := a.nodeDim[i]; d >= 0 {
				on[d] = true
			} else {
				on[a.cpu] = true
			}
		}
	}
	s := a.queues[j.queue].shares
	var out, others []int
	if j.gpuWorker == 0 {
		if on[a.cpu] && (s[a.cpu].enforced && a.active(j.queue, a.cpu) || s[a.cpu+1].enforced && a.active(j.queue, a.cpu+1)) {
			out = append(out, a.cpu)
		}
		return out
	}
	for d := range a.cpu {
		switch {
		case !a.active(j.queue, d):
		case on[d]:
			out = append(out, d)
		case j.feasible[d]:
			others = append(others, d)
		}
	}
	return append(out, others...)
}

// growOn adds workers of job j on the nodes of partition p while they fit
// there and in j's queue, and j has fewer than its maximum; it reports
// whether it added any.
func (a *applier) growOn(j *job, p *partition) bool {
	_, wb := j.view.Bounds()
	t := p.c.JobTasks(j.view)
	var nodes []int
	for _, nt := range j.p.Nodes {
		if i, ok := p.c.NodeIndex(nt.NodeID); ok && !slices.Contains(nodes, i) {
			nodes = append(nodes, i)
		}
	}
	for i := range p.c.Nodes {
		if !slices.Contains(nodes, i) {
			nodes = append(nodes, i)
		}
	}
	grew := false
	for _, i := range nodes {
		id := p.c.Nodes[i].ID
		var pss, ws structs.TaskSize
		have := 0
		for _, nt := range j.p.Nodes {
			if nt.NodeID == id {
				have += nt.Workers
				if nt.PS > 0 {
					pss = nt.PSSize
				}
				if nt.Workers > 0 {
					ws = nt.WorkerSize
				}
			}
		}
		w := t.Worker.Sized(ws)
		for j.p.NumWorkers < wb.Max && !(w.DistinctHosts && have > 0) && p.c.Fits(i, w, 1) {
			one := &structs.NodeTasks{NodeID: id, Workers: 1, WorkerSize: ws}
			if !a.fits(j.queue, j.tasks, one) {
				return grew
			}
			if j.p == j.orig {
				j.p = j.orig.Copy()
				j.p.Metric = nil
			}
			p.c.Take(i, w, 1)
			a.addWorker(j, one, pss)
			have++
			grew = true
		}
		if j.p.NumWorkers >= wb.Max {
			break
		}
	}
	return grew
}

// growReason says that j's queue grew it from shape from on partitions
// grewOn.
func (a *applier) growReason(j *job, from structs.Shape, grewOn []int) string {
	qs := a.queues[j.queue]
	var quota []string
	for _, k := range grewOn {
		if k < a.cpu {
			s := &qs.shares[k]
			quota = append(quota, fmt.Sprintf("%s GPUs: %d nominal + %d borrowed", s.label, s.nominal, s.borrowed))
		} else {
			quota = append(quota, "CPU and memory")
		}
	}
	grown := fmt.Sprintf("grown to %s within its quota (%s)", j.p.Shape(), strings.Join(quota, "; "))
	if j.started || j.kept {
		return j.p.Reason + "; " + grown
	}
	return fmt.Sprintf("queue %q: %s from the algorithm's %s", qs.name, grown, from)
}
