package planner

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/caravan-sched/caravan/structs"
)

// ExplainPaused explains the paused placements of dec whose job's minimum
// does not fit in the room dec's other placements leave on req's nodes:
// it sets each such placement's Metric (Cluster.ExplainMinimum) and makes
// its Reason the metric's String. Placements that run tasks, and paused
// ones whose minimum fits (a job an algorithm keeps waiting by its policy),
// are left as they are.
//
// The server calls it on every decision after CheckDecision passed, so that
// every algorithm, built-in or plugin, explains placement failures alike.
// It modifies dec's placements in place and is deterministic. It costs
// nothing when no placement is paused, and one Cluster of req's nodes plus
// a first-fit pass per kind of paused job otherwise (minimumKey). A placement that does not fit
// (a decision CheckDecision refuses) takes no capacity instead of
// panicking.
func ExplainPaused(req *Request, dec *Decision) {
	if dec == nil || !slices.ContainsFunc(dec.Placements, func(p *structs.Placement) bool { return p != nil && p.Paused() }) {
		return
	}
	jobs := make(map[structs.JobKey]*Job, len(req.Jobs))
	for _, j := range req.Jobs {
		jobs[j.Job.Key()] = j
	}
	c := NewCluster(req.Nodes)
	for _, p := range dec.Placements {
		if p == nil || p.Paused() {
			continue
		}
		if j := jobs[p.Key()]; j != nil {
			c.takePlacement(j, p)
		}
	}
	// Jobs alike in what placing their minimum depends on get the same
	// answer, since the free capacity does not change between them: a
	// round with thousands of waiting jobs of a few shapes on a full
	// cluster of thousands of nodes explains each shape once, not each job
	// (two scans of every node per job).
	explained := map[string]*structs.PlacementMetric{}
	for _, p := range dec.Placements {
		if p == nil || !p.Paused() {
			continue
		}
		j := jobs[p.Key()]
		if j == nil {
			continue
		}
		key := minimumKey(j)
		m, ok := explained[key]
		if !ok {
			m = c.ExplainMinimum(j)
			explained[key] = m
		}
		if m != nil {
			p.Metric = m.Copy()
			p.Reason = m.String()
		}
	}
}

// minimumKey encodes everything ExplainMinimum reads of a job: what
// NewTask takes of the job and of each role it places, and its minimum.
// Jobs with equal keys get equal metrics on one cluster.
func minimumKey(j *Job) string {
	type role struct {
		Driver      string
		Resources   *structs.Resources
		Constraints []*structs.Constraint
	}
	k := struct {
		Datacenters []string
		NodePool    string
		Constraints []*structs.Constraint
		Minimum     structs.Shape
		Worker, PS  *role
	}{Datacenters: j.Job.Datacenters, NodePool: j.Job.NodePool, Constraints: j.Job.Constraints, Minimum: j.Minimum()}
	k.Worker = &role{j.Job.Worker.Driver, j.Job.Worker.Resources, j.Job.Worker.Constraints}
	if j.HasPS() {
		ps := j.PSRole()
		k.PS = &role{ps.Driver, ps.Resources, ps.Constraints}
	}
	b, err := json.Marshal(k)
	if err != nil {
		// Not expected of these types; a key of its own explains the job alone.
		return fmt.Sprintf("%p", j)
	}
	return string(b)
}

// takePlacement takes the capacity of job j's placement p, node by node,
// skipping nodes that are unknown or lack room.
func (c *Cluster) takePlacement(j *Job, p *structs.Placement) {
	tasks := c.JobTasks(j)
	for _, nt := range p.Nodes {
		i, ok := c.NodeIndex(nt.NodeID)
		ps, worker := tasks.For(nt)
		if !ok || nt.PS > 0 && ps == nil || !c.FitsPair(i, ps, nt.PS, worker, nt.Workers) {
			continue
		}
		c.Take(i, ps, nt.PS)
		c.Take(i, worker, nt.Workers)
	}
}

// ExplainMinimum returns why job j's minimum (Job.Minimum) does not fit in
// c's free capacity, or nil when it fits. It places the minimum one task at
// a time, parameter servers first, each on the first node in order with
// room for it (at most one task of a role per node under distinct_hosts),
// and describes every node as the first task that found none saw it. It
// does not change c's free capacity, and allocates per job, not per node,
// except one entry per node class that filters the task.
func (c *Cluster) ExplainMinimum(j *Job) *structs.PlacementMetric {
	tasks := c.JobTasks(j)
	minimum := j.Minimum()
	var placed structs.Shape
	on := map[int]structs.Shape{} // the minimum's tasks so far, by node
	for k := range minimum.Tasks() {
		isPS := k < minimum.PS
		i := c.firstFit(tasks, on, isPS)
		if i < 0 {
			return c.explainTask(j, tasks, on, isPS, minimum, placed)
		}
		on[i] = plusOne(on[i], isPS)
		placed = plusOne(placed, isPS)
	}
	return nil
}

// plusOne returns s with one more parameter server, or worker.
func plusOne(s structs.Shape, isPS bool) structs.Shape {
	if isPS {
		s.PS++
	} else {
		s.Workers++
	}
	return s
}

// firstFit returns the first node with room for one more task of the role
// beside the tasks on it already, or -1.
func (c *Cluster) firstFit(tasks JobTasks, on map[int]structs.Shape, isPS bool) int {
	t := tasks.Worker
	if isPS {
		t = tasks.PS
	}
	for i := range c.Nodes {
		s := plusOne(on[i], isPS)
		if t.DistinctHosts && (isPS && s.PS > 1 || !isPS && s.Workers > 1) {
			continue
		}
		if c.FitsPair(i, tasks.PS, s.PS, tasks.Worker, s.Workers) {
			return i
		}
	}
	return -1
}

// explainTask builds the metric of one task of the role that found no
// node, with the minimum's other tasks on as they were placed.
func (c *Cluster) explainTask(j *Job, tasks JobTasks, on map[int]structs.Shape, isPS bool, minimum, placed structs.Shape) *structs.PlacementMetric {
	t, spec := tasks.Worker, j.Job.Worker
	m := &structs.PlacementMetric{Minimum: minimum, Placed: placed, Role: structs.RoleWorker, NodesEvaluated: len(c.Nodes)}
	if isPS {
		t, m.Role = tasks.PS, structs.RolePS
		if j.Job.ParameterServer != nil {
			spec = j.Job.ParameterServer
		}
	}
	byClass := map[int]string{} // why a node class filters t
	for i := range c.Nodes {
		if !c.Feasible(i, t) {
			why, ok := byClass[c.class[i]]
			if !ok {
				why = c.filteredBy(i, j.Job, spec)
				if !t.perNode {
					byClass[c.class[i]] = why
				}
			}
			increment(&m.ConstraintFiltered, why)
			continue
		}
		s := plusOne(on[i], isPS)
		if t.DistinctHosts && (isPS && s.PS > 1 || !isPS && s.Workers > 1) {
			increment(&m.ConstraintFiltered, structs.OpDistinctHosts)
			continue
		}
		if dim := c.exhaustedOn(i, tasks, s); dim != "" {
			increment(&m.DimensionExhausted, dim)
		}
	}
	return m
}

func increment(m *map[string]int, key string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[key]++
}

// filteredBy names what keeps a task of role spec of job off node i, in
// the order Nomad's feasibility checks run: datacenters, node pool, the
// job's constraints, the role's task driver (FilterMissingDrivers), the
// role's constraints, then its device requests.
func (c *Cluster) filteredBy(i int, job *structs.Job, spec *structs.Role) string {
	n := c.Nodes[i]
	switch {
	case !matchDatacenter(job.Datacenters, n.Datacenter):
		return "datacenter not in [" + strings.Join(job.Datacenters, ", ") + "]"
	case !matchPool(job.NodePool, n.NodePool):
		return "node pool != " + cmp.Or(job.NodePool, "default")
	}
	if con := c.checker.FailedConstraint(n, job.Constraints); con != nil {
		return con.String()
	}
	if spec.Driver != "" && !n.HasDriver(spec.Driver) {
		return FilterMissingDrivers
	}
	if con := c.checker.FailedConstraint(n, spec.Constraints); con != nil {
		return con.String()
	}
	for _, req := range spec.Resources.Devices {
		matches, ok := false, false
		var failed *structs.Constraint
		for _, d := range n.Devices {
			m, f := c.checker.FailedDeviceConstraint(d, req)
			if m && f == nil {
				ok = true
				break
			}
			if m && !matches {
				matches, failed = true, f
			}
		}
		switch {
		case ok:
			continue
		case !matches:
			return "device " + req.Name + ": missing"
		}
		return "device " + req.Name + ": " + failed.String()
	}
	return "infeasible" // Feasible and filteredBy disagree; not expected
}

// exhaustedOn returns the first dimension ("cpu", "memory", a device type)
// in which node i lacks room for the job's tasks s, or "" when they fit.
// Both roles must be feasible on the node.
func (c *Cluster) exhaustedOn(i int, tasks JobTasks, s structs.Shape) string {
	f := &c.free[i]
	cpu, mem := s.Workers*tasks.Worker.CPU, s.Workers*tasks.Worker.MemoryMB
	if s.PS > 0 {
		cpu += s.PS * tasks.PS.CPU
		mem += s.PS * tasks.PS.MemoryMB
	}
	switch {
	case f.cpu < cpu:
		return "cpu"
	case f.mem < mem:
		return "memory"
	}
	var scratch [8]int
	devs := append(scratch[:0], f.devs...)
	for _, r := range []struct {
		t *Task
		n int
	}{{tasks.PS, s.PS}, {tasks.Worker, s.Workers}} {
		if r.n == 0 || len(r.t.Devices) == 0 {
			continue
		}
		if k := c.shortDevice(i, r.t, r.n, devs); k >= 0 {
			return r.t.deviceTypes[k]
		}
	}
	return ""
}
