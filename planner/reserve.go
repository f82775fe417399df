package planner

import (
	"fmt"

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
// there. nodes are not modified. A held placement that does not fit is
// an error naming it.
func Reserve(nodes []*structs.Node, held []Held) ([]*structs.Node, error) {
	if len(held) == 0 {
		return nodes, nil
	}
	c := NewCluster(nodes)
	for _, h := range held {
		tasks := c.JobTasks(h.Job)
		for _, nt := range h.Placement.Nodes {
			i, ok := c.NodeIndex(nt.NodeID)
			if !ok {
				continue // the node is gone: it holds nothing any more
			}
			if nt.PS > 0 && tasks.PS == nil || !c.FitsPair(i, tasks.PS, nt.PS, tasks.Worker, nt.Workers) {
				return nil, fmt.Errorf("reserve job %q: %d ps and %d workers do not fit on node %s", h.Placement.JobID, nt.PS, nt.Workers, c.Describe(i))
			}
			if nt.PS > 0 {
				c.Take(i, tasks.PS, nt.PS)
			}
			c.Take(i, tasks.Worker, nt.Workers)
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
	return out, nil
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
