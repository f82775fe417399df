package cruise

import (
	"cmp"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// placeDisjoint places ps servers and w workers of one job so that no
// node holds both roles, as Cruise's model assumes (Figure 3.2:
// workers and servers on disjoint machines). Servers go first, then
// workers on the nodes left; each role fills nodes in order of most free
// CPU (ties by index), as many tasks per node as fit (one under
// distinct_hosts). It takes the capacity and returns the per-node counts
// sorted by node ID, or changes nothing and returns false.
func placeDisjoint(c *planner.Cluster, t planner.JobTasks, ps, w int) ([]*structs.NodeTasks, bool) {
	order := make([]int, len(c.Nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ca, _, _ := c.Free(a)
		cb, _, _ := c.Free(b)
		return cmp.Compare(cb, ca)
	})
	psOn := make([]int, len(c.Nodes))
	wOn := make([]int, len(c.Nodes))
	fill := func(task *planner.Task, n int, on []int, skip []int) bool {
		for _, i := range order {
			if n == 0 {
				return true
			}
			if skip != nil && skip[i] > 0 {
				continue
			}
			k := 0
			for k < n && (k == 0 || !task.DistinctHosts) && c.Fits(i, task, k+1) {
				k++
			}
			on[i] = k
			n -= k
		}
		return n == 0
	}
	if ps > 0 && !fill(t.PS, ps, psOn, nil) || !fill(t.Worker, w, wOn, psOn) {
		return nil, false
	}
	var out []*structs.NodeTasks
	for i := range c.Nodes {
		if psOn[i] == 0 && wOn[i] == 0 {
			continue
		}
		if psOn[i] > 0 {
			c.Take(i, t.PS, psOn[i])
		}
		c.Take(i, t.Worker, wOn[i])
		out = append(out, &structs.NodeTasks{NodeID: c.Nodes[i].ID, PS: psOn[i], Workers: wOn[i]})
	}
	slices.SortFunc(out, func(a, b *structs.NodeTasks) int { return cmp.Compare(a.NodeID, b.NodeID) })
	return out, true
}
