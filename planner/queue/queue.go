package queue

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// Preemption is a job Apply shrank or paused, for the leader's events.
type Preemption struct {
	Job   structs.JobKey
	Queue string
	// From is the shape the algorithm decided, To the one Apply left (a
	// zero shape for a paused job).
	From, To structs.Shape
	// Reason names the queue and why it gave the GPUs (or CPU, memory)
	// back.
	Reason string
}

// job is one job of the decision as Apply sees it.
type job struct {
	view  *planner.Job
	queue int
	tasks planner.JobTasks
	// gpuPS and gpuWorker are the GPUs one task of each role takes.
	gpuPS, gpuWorker int
	// feasible marks the GPU types (by dim) whose nodes may run the job.
	feasible []bool
	orig     *structs.Placement
	// p is the placement Apply leaves; orig until Apply changes it.
	p      *structs.Placement
	reason string
	// started is set when fill started the job, kept when fill kept it
	// where it runs (keep).
	started, kept bool
}

// Apply makes dec, an algorithm's decision on req, respect queues (the
// package documentation gives the rules) and returns the decision that
// does, with a Preemption for every job it shrank or paused, in job key
// order (a job it grew is none). held are the placements of jobs whose change is in flight: they
// are not in req (their capacity is already out of req.Nodes,
// planner.Reserve) but count toward their queues' usage and the
// cluster's capacity.
//
// Apply modifies neither req, dec nor queues: a placement it changes is a
// copy, the others are dec's own. With no queues, or when dec already
// respects them, it returns dec itself. It is deterministic, and costs
// O(jobs × nodes) for the feasibility of jobs by GPU type plus a
// placement per job it starts, and O(nodes + workers) per job it grows;
// preempting within a queue adds, per paused job a running job of lower
// priority of its queue might give way to, a placement on one type's
// nodes per worker shrunk, job paused or worker grown back, once the
// queue's entitlement and the type's free GPUs allow it.
func Apply(req *planner.Request, dec *planner.Decision, queues []*structs.Queue, held []planner.Held) (*planner.Decision, []Preemption) {
	if len(queues) == 0 || dec == nil {
		return dec, nil
	}
	a := newApplier(req, queues)
	a.addHeld(held)
	a.addJobs(dec)
	lim := nominals(a.dims, a.queues)
	for d := range a.dims {
		entitle(d, a.dims[d], a.queues, lim)
	}
	trimmed := a.trim()
	preempted := a.preempt()
	filled := a.fill()
	if filled {
		a.grow()
	}
	if !trimmed && !preempted && !filled {
		return dec, nil
	}
	// A job trim paused may have started again on another GPU type, and
	// grown: it is preempted only if it ends with less.
	var pre []Preemption
	for _, j := range a.jobs {
		if j.reason != "" && j.p.Shape().Compare(j.orig.Shape()) < 0 {
			pre = append(pre, Preemption{Job: j.view.Job.Key(), Queue: a.queues[j.queue].name, From: j.orig.Shape(), To: j.p.Shape(), Reason: j.reason})
		}
	}
	out := &planner.Decision{Placements: make([]*structs.Placement, len(dec.Placements))}
	for i, p := range dec.Placements {
		out.Placements[i] = p
		if k, ok := a.byKey[p.Key()]; ok {
			out.Placements[i] = a.jobs[k].p
		}
	}
	slices.SortFunc(pre, func(x, y Preemption) int { return x.Job.Compare(y.Job) })
	return out, pre
}

// applier is Apply's working state.
type applier struct {
	req     *planner.Request
	c       *planner.Cluster
	dims    []dim
	nodeDim []int // GPU dim of each node, -1 for none
	cpu     int   // dims index of CPU; memory is cpu+1
	queues  []*queueState
	qindex  map[string]int
	jobs    []*job
	byKey   map[structs.JobKey]int
	// spec are the queues, the default one included, by name.
	spec        []*structs.Queue
	byNamespace map[string]int
}

// nodeGPUType is a node's GPU type: Node.GPUType, or for a node whose
// GPUs held placements took all of (planner.Reserve marks them
// unhealthy), the name of its first GPU group.
func nodeGPUType(n *structs.Node) string {
	if t := n.GPUType(); t != "" {
		return t
	}
	for _, d := range n.Devices {
		if d.Type == "gpu" && len(d.Instances) > 0 {
			return d.Name
		}
	}
	return ""
}

func newApplier(req *planner.Request, queues []*structs.Queue) *applier {
	a := &applier{req: req, c: planner.NewCluster(req.Nodes), nodeDim: make([]int, len(req.Nodes)), byKey: map[structs.JobKey]int{}, byNamespace: map[string]int{}}
	var types []string
	for _, n := range req.Nodes {
		if t := nodeGPUType(n); t != "" && !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	slices.Sort(types)
	for _, t := range types {
		a.dims = append(a.dims, dim{name: t, gpu: true})
	}
	a.cpu = len(a.dims)
	a.dims = append(a.dims, dim{name: dimCPU}, dim{name: dimMemory})
	for i, n := range req.Nodes {
		a.nodeDim[i] = -1
		if t := nodeGPUType(n); t != "" {
			a.nodeDim[i] = slices.Index(types, t)
			for _, d := range n.Devices {
				if d.Type == "gpu" {
					a.dims[a.nodeDim[i]].capacity += d.HealthyCount()
				}
			}
		}
		a.dims[a.cpu].capacity += n.CPU
		a.dims[a.cpu+1].capacity += n.MemoryMB
	}

	sorted := slices.Clone(queues)
	slices.SortFunc(sorted, func(x, y *structs.Queue) int { return cmp.Compare(x.Name, y.Name) })
	if !slices.ContainsFunc(sorted, func(q *structs.Queue) bool { return q.Name == structs.DefaultQueue }) {
		sorted = append(sorted, &structs.Queue{Name: structs.DefaultQueue, Weight: structs.DefaultWeight})
		slices.SortFunc(sorted, func(x, y *structs.Queue) int { return cmp.Compare(x.Name, y.Name) })
	}
	a.spec = sorted
	a.qindex = make(map[string]int, len(sorted))
	for i, q := range sorted {
		w := q.Weight
		if !(w > 0) {
			w = structs.DefaultWeight
		}
		a.queues = append(a.queues, &queueState{name: q.Name, cohort: q.Cohort, weight: w, quota: &q.Quota, shares: make([]share, len(a.dims))})
		a.qindex[q.Name] = i
	}
	return a
}

// queueOf returns the index of the queue of a namespace.
func (a *applier) queueOf(namespace string) int {
	q, ok := a.byNamespace[namespace]
	if !ok {
		q = a.qindex[structs.QueueFor(a.spec, namespace)]
		a.byNamespace[namespace] = q
	}
	return q
}

// gpus returns the GPUs one task of each role of j takes.
func gpus(t planner.JobTasks) (ps, worker int) {
	if t.PS != nil {
		ps = t.PS.DeviceCounts["gpu"]
	}
	return ps, t.Worker.DeviceCounts["gpu"]
}

// use adds (sign 1) or removes (sign -1) what entry nt of a job with tasks
// t takes to queue q's usage; what it removes counts as freed.
func (a *applier) use(q int, t planner.JobTasks, nt *structs.NodeTasks, sign int) {
	s := a.queues[q].shares
	for d, n := range a.takesOf(t, nt) {
		s[d].usage += sign * n
		if sign < 0 {
			s[d].freed += n
		}
	}
}

// takesOf returns what entry nt of a job with tasks t takes of each
// resource, by dim (nil when its node is unknown).
func (a *applier) takesOf(t planner.JobTasks, nt *structs.NodeTasks) []int {
	i, ok := a.c.NodeIndex(nt.NodeID)
	if !ok {
		return nil
	}
	out := make([]int, len(a.dims))
	ps, worker := t.For(nt)
	if d := a.nodeDim[i]; d >= 0 {
		gps, gw := gpus(t)
		out[d] = nt.PS*gps + nt.Workers*gw
	}
	out[a.cpu], out[a.cpu+1] = nt.Workers*worker.CPU, nt.Workers*worker.MemoryMB
	if nt.PS > 0 && ps != nil {
		out[a.cpu] += nt.PS * ps.CPU
		out[a.cpu+1] += nt.PS * ps.MemoryMB
	}
	return out
}

// fits reports whether queue q is entitled to what entry nt takes more.
func (a *applier) fits(q int, t planner.JobTasks, nt *structs.NodeTasks) bool {
	for d, n := range a.takesOf(t, nt) {
		if n > 0 && a.queues[q].shares[d].headroom() < n {
			return false
		}
	}
	return true
}

// unfree takes back from queue q's freed what entry nt takes: a trimmed
// worker put back.
func (a *applier) unfree(q int, t planner.JobTasks, nt *structs.NodeTasks) {
	for d, n := range a.takesOf(t, nt) {
		a.queues[q].shares[d].freed -= n
	}
}

// addHeld counts held placements toward their queues' usage and demand,
// and the cluster's capacity.
func (a *applier) addHeld(held []planner.Held) {
	for _, h := range held {
		if h.Job == nil || h.Placement == nil {
			continue
		}
		q := a.queueOf(h.Job.Job.Namespace)
		t := a.c.JobTasks(h.Job)
		before := slices.Clone(a.queues[q].shares)
		for _, nt := range h.Placement.Nodes {
			a.use(q, t, nt, 1)
		}
		for d := range a.dims {
			s := &a.queues[q].shares[d]
			added := s.usage - before[d].usage
			s.demand += added
			a.dims[d].capacity += added
		}
	}
}

// addJobs records the jobs of dec with their usage, demand and the GPU
// types they may run on.
func (a *applier) addJobs(dec *planner.Decision) {
	views := make(map[structs.JobKey]*planner.Job, len(a.req.Jobs))
	for _, j := range a.req.Jobs {
		views[j.Job.Key()] = j
	}
	typeNodes := make([][]int, a.cpu)
	for i, d := range a.nodeDim {
		if d >= 0 {
			typeNodes[d] = append(typeNodes[d], i)
		}
	}
	for _, p := range dec.Placements {
		v, ok := views[p.Key()]
		if !ok {
			continue // CheckDecision's to report
		}
		if _, dup := a.byKey[p.Key()]; dup {
			continue
		}
		j := &job{view: v, queue: a.queueOf(v.Job.Namespace), tasks: a.c.JobTasks(v), orig: p, p: p, feasible: make([]bool, a.cpu)}
		j.gpuPS, j.gpuWorker = gpus(j.tasks)
		for _, nt := range p.Nodes {
			a.use(j.queue, j.tasks, nt, 1)
		}
		psb, wb := v.Bounds()
		maxPS := 0
		if v.HasPS() {
			maxPS = psb.Max
		}
		s := a.queues[j.queue].shares
		if most := maxPS*j.gpuPS + wb.Max*j.gpuWorker; most > 0 {
			for d, nodes := range typeNodes {
				for _, i := range nodes {
					if a.c.Feasible(i, j.tasks.Worker) && (j.gpuPS == 0 || a.c.Feasible(i, j.tasks.PS)) {
						j.feasible[d] = true
						s[d].demand += most
						break
					}
				}
			}
		}
		cpu, mem := wb.Max*j.tasks.Worker.CPU, wb.Max*j.tasks.Worker.MemoryMB
		if j.tasks.PS != nil {
			cpu, mem = cpu+maxPS*j.tasks.PS.CPU, mem+maxPS*j.tasks.PS.MemoryMB
		}
		s[a.cpu].demand += cpu
		s[a.cpu+1].demand += mem
		a.byKey[p.Key()] = len(a.jobs)
		a.queues[j.queue].jobs = append(a.queues[j.queue].jobs, len(a.jobs))
		a.jobs = append(a.jobs, j)
	}
	// A placement may hold more CPU or memory than the role's size (a
	// sized entry): demand is at least usage.
	for _, q := range a.queues {
		for d := range q.shares {
			q.shares[d].demand = max(q.shares[d].demand, q.shares[d].usage)
		}
	}
}

// reason says why queue q gives back resource d.
func (a *applier) reason(q, d int) string {
	qs := a.queues[q]
	s := &qs.shares[d]
	var why string
	switch {
	case s.capped:
		why = "its borrowing limit is reached"
	case qs.cohort == "":
		why = "it is in no cohort and no more capacity is unclaimed"
	default:
		why = fmt.Sprintf("cohort %q has nothing more to lend", qs.cohort)
	}
	what := s.label + " GPUs"
	nominal, borrowed := fmt.Sprint(s.nominal), fmt.Sprint(s.borrowed)
	switch d {
	case a.cpu:
		what, nominal, borrowed = "CPU", nominal+" MHz", borrowed+" MHz"
	case a.cpu + 1:
		what, nominal, borrowed = "memory", nominal+" MB", borrowed+" MB"
	}
	return fmt.Sprintf("queue %q: over its quota of %s (%s nominal + %s borrowed); %s", qs.name, what, nominal, borrowed, why)
}
