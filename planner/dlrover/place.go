package dlrover

import (
	"cmp"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
)

// taskKey is a role at a size, normalized (norm).
type taskKey struct {
	ps   bool
	size structs.TaskSize
}

// sameAsCurrent reports whether target t runs the same tasks at the same
// sizes as the job runs now, wherever: then the job is left where it
// runs rather than moved for nothing.
func (p *jobPlan) sameAsCurrent(t *target) bool {
	if p.cur == nil {
		return false
	}
	have, want := map[taskKey]int{}, map[taskKey]int{}
	add := func(m map[taskKey]int, ps bool, n int, s structs.TaskSize) {
		if n > 0 {
			m[taskKey{ps, p.norm(ps, s)}] += n
		}
	}
	for _, nt := range p.cur.Nodes {
		add(have, true, nt.PS, nt.PSSize)
		add(have, false, nt.Workers, nt.WorkerSize)
	}
	for _, nt := range t.pinned {
		add(want, true, nt.PS, nt.PSSize)
		add(want, false, nt.Workers, nt.WorkerSize)
	}
	for _, g := range t.float {
		add(want, g.ps, g.n, g.size)
	}
	if len(have) != len(want) {
		return false
	}
	for k, n := range have {
		if want[k] != n {
			return false
		}
	}
	return true
}

// place places target t on c: pinned entries on their nodes where they
// fit, the rest anywhere. A target of one group per role with nothing
// pinned is placed as Optimus's Theorem 1 places jobs (planner/placement);
// other tasks one at a time, each on the feasible node with the most free
// CPU. It takes the capacity and returns the placement, or changes
// nothing and returns false.
func (p *jobPlan) place(c *planner.Cluster, t *target) (*structs.Placement, bool) {
	cc := c.Clone()
	var entries []*structs.NodeTasks
	floats := slices.Clone(t.float)
	for _, nt := range t.pinned {
		if nt.PS == 0 && nt.Workers == 0 {
			continue
		}
		i, ok := cc.NodeIndex(nt.NodeID)
		ps, w := p.tasks.For(nt)
		if ok && p.distinctOK(entries, nt) && cc.FitsPair(i, ps, nt.PS, w, nt.Workers) {
			if nt.PS > 0 {
				cc.Take(i, ps, nt.PS)
			}
			cc.Take(i, w, nt.Workers)
			entries = append(entries, nt)
			continue
		}
		floats = append(floats, group{ps: true, n: nt.PS, size: nt.PSSize}, group{n: nt.Workers, size: nt.WorkerSize})
	}
	floats = slices.DeleteFunc(floats, func(g group) bool { return g.n == 0 })
	if len(entries) == 0 && len(floats) <= 2 && (len(floats) < 2 || floats[0].ps != floats[1].ps) {
		var ps, w group
		for _, g := range floats {
			if g.ps {
				ps = g
			} else {
				w = g
			}
		}
		nodes, ok := placement.New(cc).Place(p.tasks.PS.Sized(ps.size), ps.n, p.tasks.Worker.Sized(w.size), w.n)
		if !ok {
			return nil, false
		}
		for _, nt := range nodes {
			if nt.PS > 0 {
				nt.PSSize = ps.size
			}
			if nt.Workers > 0 {
				nt.WorkerSize = w.size
			}
		}
		entries = nodes
	} else {
		for _, g := range floats {
			for range g.n {
				if !p.placeOne(cc, &entries, g) {
					return nil, false
				}
			}
		}
	}
	pl := &structs.Placement{Namespace: p.j.Job.Namespace, JobID: p.j.Job.ID, Nodes: p.compact(entries)}
	for _, nt := range pl.Nodes {
		pl.NumPS += nt.PS
		pl.NumWorkers += nt.Workers
	}
	if pl.NumWorkers == 0 {
		return nil, false
	}
	*c = *cc
	return pl, true
}

// distinctOK reports whether entry nt may join entries under the roles'
// distinct_hosts.
func (p *jobPlan) distinctOK(entries []*structs.NodeTasks, nt *structs.NodeTasks) bool {
	ps, w := nt.PS, nt.Workers
	for _, e := range entries {
		if e.NodeID == nt.NodeID {
			ps, w = ps+e.PS, w+e.Workers
		}
	}
	return !(p.tasks.PS != nil && p.tasks.PS.DistinctHosts && ps > 1) && !(p.tasks.Worker.DistinctHosts && w > 1)
}

// placeOne places one task of group g on the feasible node with the most
// free CPU (the lowest index among equals) that has room for it.
func (p *jobPlan) placeOne(c *planner.Cluster, entries *[]*structs.NodeTasks, g group) bool {
	task := p.tasks.Worker.Sized(g.size)
	if g.ps {
		task = p.tasks.PS.Sized(g.size)
	}
	best, bestCPU := -1, -1
	for i, n := range c.Nodes {
		if !c.Fits(i, task, 1) || !p.distinctOK(*entries, entry(n.ID, g.ps, 1, g.size)) {
			continue
		}
		if cpu, _, _ := c.Free(i); cpu > bestCPU {
			best, bestCPU = i, cpu
		}
	}
	if best < 0 {
		return false
	}
	c.Take(best, task, 1)
	*entries = append(*entries, entry(c.Nodes[best].ID, g.ps, 1, g.size))
	return true
}

// compact normalizes entries as Placement.Nodes is kept: sizes equal to
// the role's own are dropped, as are sizes of roles an entry does not
// run; a node's entry of only parameter servers and its entry of only
// workers are joined (mergeRoles); entries of one node at the same sizes
// are merged; and they are sorted.
func (p *jobPlan) compact(entries []*structs.NodeTasks) []*structs.NodeTasks {
	var norm []*structs.NodeTasks
	for _, nt := range entries {
		if nt.PS == 0 && nt.Workers == 0 {
			continue
		}
		n := &structs.NodeTasks{NodeID: nt.NodeID, PS: nt.PS, Workers: nt.Workers}
		if n.PS > 0 {
			n.PSSize = p.norm(true, nt.PSSize)
		}
		if n.Workers > 0 {
			n.WorkerSize = p.norm(false, nt.WorkerSize)
		}
		norm = append(norm, n)
	}
	type key struct {
		node       string
		ps, worker structs.TaskSize
	}
	merged := map[key]*structs.NodeTasks{}
	var out []*structs.NodeTasks
	for _, n := range mergeRoles(norm) {
		k := key{n.NodeID, n.PSSize, n.WorkerSize}
		if m := merged[k]; m != nil {
			m.PS += n.PS
			m.Workers += n.Workers
			continue
		}
		merged[k] = n
		out = append(out, n)
	}
	structs.SortNodeTasks(out)
	return out
}

// mergeRoles joins, on each node, an entry that runs only parameter
// servers with one that runs only workers, so that a node holds as few
// entries as its sizes need.
func mergeRoles(entries []*structs.NodeTasks) []*structs.NodeTasks {
	slices.SortStableFunc(entries, func(a, b *structs.NodeTasks) int { return cmp.Compare(a.NodeID, b.NodeID) })
	var out []*structs.NodeTasks
	for _, nt := range entries {
		if nt.Workers == 0 {
			if i := slices.IndexFunc(out, func(o *structs.NodeTasks) bool { return o.NodeID == nt.NodeID && o.PS == 0 }); i >= 0 {
				out[i].PS, out[i].PSSize = nt.PS, nt.PSSize
				continue
			}
		} else if nt.PS == 0 {
			if i := slices.IndexFunc(out, func(o *structs.NodeTasks) bool { return o.NodeID == nt.NodeID && o.Workers == 0 }); i >= 0 {
				out[i].Workers, out[i].WorkerSize = nt.Workers, nt.WorkerSize
				continue
			}
		}
		out = append(out, nt)
	}
	return out
}
