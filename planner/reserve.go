package planner

import (
	"github.com/caravan-sched/caravan/structs"
)

// Held is a placement whose tasks hold capacity outside a request: a job
// whose change is in flight keeps its target placement while the others
// are planned around it.
type Held struct {
	Job       *Job
	Placement *structs.Placement
}

// Reserve returns copies of nodes with what held takes subtracted: less
// CPU and memory, and the device instances it takes marked unhealthy
// ("reserved"), so that a request over the result cannot place anything
// there. nodes are not modified. Held placements may overlap (a change
// whose tasks Nomad has not placed yet, beside a job that has not freed
// what they need): a task that no longer fits takes nothing, so what is
// left is never negative.
func Reserve(nodes []*structs.Node, held []Held) []*structs.Node {
	if len(held) == 0 {
		return nodes
	}
	c := NewCluster(nodes)
	for _, h := range held {
		tasks := c.JobTasks(h.Job)
		for _, nt := range h.Placement.Nodes {
			i, ok := c.NodeIndex(nt.NodeID)
			if !ok {
				continue // the node is gone: it holds nothing any more
			}
			ps, worker := tasks.For(nt)
			for _, r := range []struct {
				task *Task
				n    int
			}{{ps, nt.PS}, {worker, nt.Workers}} {
				for range r.n {
					if r.task == nil || !c.Fits(i, r.task, 1) {
						break
					}
					c.Take(i, r.task, 1)
				}
			}
		}
	}
	out := make([]*structs.Node, len(nodes))
	for i, n := range nodes {
		cpu, mem, _ := c.Free(i)
		if cpu == n.CPU && mem == n.MemoryMB && sameDevices(n, c.FreeDevices(i)) {
			out[i] = n
			continue
		}
		r := n.Copy()
		r.CPU, r.MemoryMB = cpu, mem
		for g, d := range r.Devices {
			extra := d.HealthyCount() - c.FreeDevices(i)[g]
			for _, inst := range d.Instances {
				if extra > 0 && inst.Healthy {
					inst.Healthy, inst.HealthDescription = false, "reserved by a change in flight"
					extra--
				}
			}
		}
		out[i] = r
	}
	return out
}

// sameDevices reports whether every device group of n has free as many
// instances as are healthy.
func sameDevices(n *structs.Node, free []int) bool {
	for g, d := range n.Devices {
		if free[g] != d.HealthyCount() {
			return false
		}
	}
	return true
}
