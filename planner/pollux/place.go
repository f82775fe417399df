package pollux

import (
	"fmt"
	"strings"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
)

// place turns the best allocation into placements on the exact cluster,
// jobs in order: each entry keeps the workers that fit there (device
// groups and distinct_hosts counted), a PS job's servers go next to its
// workers, and a job short of its minimum waits. Then every waiting job
// whose minimum fits in the room left runs at its minimum.
func (pr *problem) place(best *individual) []*structs.Placement {
	c := pr.c
	out := make([]*structs.Placement, len(pr.jobs))
	var waiting []int
	for j, jb := range pr.jobs {
		o := pr.off[j]
		var nodes []*structs.NodeTasks
		workers := 0
		for e := range int(best.n[j]) {
			i := int(best.node[o+e])
			k := int(best.count[o+e])
			if jb.tasks.Worker.DistinctHosts {
				k = min(k, 1)
			}
			for k > 0 && !c.Fits(i, jb.tasks.Worker, k) {
				k--
			}
			if k > 0 {
				nodes = append(nodes, &structs.NodeTasks{NodeID: c.Nodes[i].ID, Workers: k})
				workers += k
			}
		}
		if workers < jb.minW {
			waiting = append(waiting, j)
			continue
		}
		if jb.minPS > 0 {
			var ok bool
			if nodes, ok = pr.addServers(jb, nodes); !ok {
				waiting = append(waiting, j)
				continue
			}
		}
		for _, nt := range nodes {
			i, _ := c.NodeIndex(nt.NodeID)
			ps, w := jb.tasks.For(nt)
			if nt.PS > 0 {
				c.Take(i, ps, nt.PS)
			}
			c.Take(i, w, nt.Workers)
		}
		structs.SortNodeTasks(nodes)
		p := &structs.Placement{
			Namespace: jb.view.Job.Namespace, JobID: jb.view.Job.ID,
			NumPS: jb.minPS, NumWorkers: workers, Nodes: nodes,
			Batch: jb.batch(len(nodes), workers),
		}
		p.Reason = pr.reason(jb, p)
		out[j] = p
	}
	if len(waiting) > 0 {
		placer := placement.New(c)
		mixed := pr.mixedTypes()
		for _, j := range waiting {
			jb := pr.jobs[j]
			var nodes []*structs.NodeTasks
			ok := false
			if mixed && jb.tasks.Worker.DeviceCounts[gpu] > 0 {
				// One GPU type, the job's fastest with room.
				for _, t := range pr.typePreference(jb.view) {
					tasks := c.JobTasks(onType(jb.view, t))
					if nodes, ok = placer.Place(tasks.PS, jb.minPS, tasks.Worker, jb.minW); ok {
						break
					}
				}
			} else {
				nodes, ok = placer.Place(jb.tasks.PS, jb.minPS, jb.tasks.Worker, jb.minW)
			}
			if !ok {
				out[j] = planner.Paused(jb.view, "pollux: waiting: the allocation with the best mean of speed-ups gives it nothing, and no set of nodes has room for its minimum")
				continue
			}
			workers := 0
			for _, nt := range nodes {
				workers += nt.Workers
			}
			p := &structs.Placement{
				Namespace: jb.view.Job.Namespace, JobID: jb.view.Job.ID,
				NumPS: jb.minPS, NumWorkers: workers, Nodes: nodes,
				Batch: jb.batch(len(nodes), workers),
			}
			p.Reason = pr.reason(jb, p) + "; its minimum, in room the others left"
			out[j] = p
		}
	}
	planner.SortPlacements(out)
	return out
}

// addServers puts a PS job's minPS servers next to its workers, then on
// any node with room, without taking capacity, and returns the entries
// with them; false when they do not fit.
func (pr *problem) addServers(jb *job, nodes []*structs.NodeTasks) ([]*structs.NodeTasks, bool) {
	c := pr.c
	left := jb.minPS
	onWorkers := map[string]bool{}
	for _, nt := range nodes {
		onWorkers[nt.NodeID] = true
		i, _ := c.NodeIndex(nt.NodeID)
		for left > 0 && (!jb.tasks.PS.DistinctHosts || nt.PS == 0) && c.FitsPair(i, jb.tasks.PS, nt.PS+1, jb.tasks.Worker, nt.Workers) {
			nt.PS++
			left--
		}
	}
	extra := map[int]*structs.NodeTasks{}
	for i := 0; i < len(c.Nodes) && left > 0; i++ {
		if onWorkers[c.Nodes[i].ID] {
			continue
		}
		for left > 0 {
			nt := extra[i]
			have := 0
			if nt != nil {
				have = nt.PS
			}
			if jb.tasks.PS.DistinctHosts && have > 0 || !c.Fits(i, jb.tasks.PS, have+1) {
				break
			}
			if nt == nil {
				nt = &structs.NodeTasks{NodeID: c.Nodes[i].ID}
				extra[i] = nt
			}
			nt.PS++
			left--
		}
	}
	if left > 0 {
		return nodes, false
	}
	for i := range len(c.Nodes) {
		if nt := extra[i]; nt != nil {
			nodes = append(nodes, nt)
		}
	}
	return nodes, true
}

// reason says what the job got and why, for people.
func (pr *problem) reason(jb *job, p *structs.Placement) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pollux: %d workers on %d nodes", p.NumWorkers, len(p.Nodes))
	if jb.model == nil {
		b.WriteString(", no throughput model yet")
	}
	fmt.Fprintf(&b, ", speed-up %.2f of a node's worth", pr.speedup(jb, len(p.Nodes), p.NumWorkers))
	if bt := p.Batch; bt != nil {
		fmt.Fprintf(&b, ", batch %d (%d a pass × %d passes)", bt.Global, bt.Local, bt.AccumSteps+1)
	}
	return b.String()
}
