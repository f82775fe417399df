package dorm

import (
	"math"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/drf"
	"github.com/caravan-sched/caravan/structs"
)

// Measures are the paper's three objectives (§IV-A) of one decision.
type Measures struct {
	// Utilisation is eq. 1: the sum over resource types (CPU, memory and
	// each device type the cluster has) of the share of the cluster's
	// capacity the decision uses, so at most the number of types.
	Utilisation float64
	// FairnessLoss is eq. 2: Σ_i |s_i − ŝ_i|, dominant shares as planner/drf
	// sums them, ŝ from drf's decision on the same request.
	FairnessLoss float64
	// Adjusted is eq. 4: the jobs running before and after whose per-node
	// tasks changed.
	Adjusted int
}

// Measure computes eqs. 1, 2 and 4 of dec for req. fair gives ŝ by job ID;
// nil runs drf on req for it.
func Measure(req *planner.Request, dec *planner.Decision, fair map[string]float64) Measures {
	c := planner.NewCluster(req.Nodes)
	agg := planner.NewAggregate(c)
	views := map[string]*planner.Job{}
	for _, v := range req.Jobs {
		views[v.Job.ID] = v
	}
	if fair == nil {
		fair = map[string]float64{}
		if fd, err := drf.New().Plan(req); err == nil {
			for _, p := range fd.Placements {
				if v := views[p.JobID]; v != nil {
					fair[p.JobID] = share(agg, c.JobTasks(v), p.NumPS, p.NumWorkers)
				}
			}
		}
	}
	total := map[string]float64{}
	for _, n := range req.Nodes {
		total["cpu"] += float64(n.CPU)
		total["memory"] += float64(n.MemoryMB)
		for _, d := range n.Devices {
			total[d.Type] += float64(d.HealthyCount())
		}
	}
	used := map[string]float64{}
	var out Measures
	for _, p := range dec.Placements {
		v := views[p.JobID]
		if v == nil {
			continue
		}
		t := c.JobTasks(v)
		for _, rt := range []struct {
			t *planner.Task
			n int
		}{{t.PS, p.NumPS}, {t.Worker, p.NumWorkers}} {
			if rt.t == nil || rt.n == 0 {
				continue
			}
			used["cpu"] += float64(rt.t.CPU * rt.n)
			used["memory"] += float64(rt.t.MemoryMB * rt.n)
			for typ, k := range rt.t.DeviceCounts {
				used[typ] += float64(k * rt.n)
			}
		}
		out.FairnessLoss += math.Abs(share(agg, t, p.NumPS, p.NumWorkers) - fair[p.JobID])
		if cur := v.Current; cur != nil && !cur.Paused() && !sameNodes(cur.Nodes, p.Nodes) {
			out.Adjusted++
		}
	}
	for k, u := range used {
		if total[k] > 0 {
			out.Utilisation += u / total[k]
		}
	}
	return out
}

func sameNodes(a, b []*structs.NodeTasks) bool {
	return slices.EqualFunc(a, b, func(x, y *structs.NodeTasks) bool { return *x == *y })
}
