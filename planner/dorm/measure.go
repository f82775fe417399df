package dorm

import (
	"cmp"
	"math"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/fairshare"
	"github.com/caravan-sched/caravan/structs"
)

// Measures are the paper's three objectives (§IV-A) of one decision.
type Measures struct {
	// Utilisation is eq. 1: the sum over resource types (CPU, memory and
	// each device type the cluster has) of the share of the cluster's
	// capacity the decision uses, so at most the number of types.
	Utilisation float64
	// FairnessLoss is eq. 2: Σ_i |s_i − ŝ_i|, s_i the largest share of one
	// resource type that job i's tasks take together and ŝ_i its share
	// under fairshare.DRF (the theoretical DRF allocation of the cluster's
	// aggregate) on the same request.
	FairnessLoss float64
	// Adjusted is eq. 4: the jobs running before and after whose per-node
	// tasks changed.
	Adjusted int
}

// resources are the cluster's resource types M ("cpu", "memory", then
// each device type with a healthy instance, sorted) and their totals
// Σ_h c_hk over the request's nodes.
type resources struct {
	types []string
	total []float64
}

func newResources(c *planner.Cluster) resources {
	r := resources{types: []string{"cpu", "memory"}}
	byType := map[string]float64{}
	for i, n := range c.Nodes {
		byType["cpu"] += nodeCapacity(c, i, "cpu")
		byType["memory"] += nodeCapacity(c, i, "memory")
		for _, d := range n.Devices {
			byType[d.Type] += float64(d.HealthyCount())
		}
	}
	var devs []string
	for k, v := range byType {
		if k != "cpu" && k != "memory" && v > 0 {
			devs = append(devs, k)
		}
	}
	slices.Sort(devs)
	r.types = append(r.types, devs...)
	for _, k := range r.types {
		r.total = append(r.total, byType[k])
	}
	return r
}

// demand is task t's demand of each resource type, in r's order; nil for a
// nil task.
func (r resources) demand(t *planner.Task) []float64 {
	if t == nil {
		return nil
	}
	out := make([]float64, len(r.types))
	for k, typ := range r.types {
		out[k] = demand(t, typ)
	}
	return out
}

// shareOf is task t's share of each resource type: d_k / Σ_h c_hk (0 for
// a type of no capacity).
func (r resources) shareOf(t *planner.Task) []float64 {
	out := r.demand(t)
	for k := range out {
		if r.total[k] > 0 {
			out[k] /= r.total[k]
		} else {
			out[k] = 0
		}
	}
	return out
}

// dominant is eq. 2's s_i of ps servers and w workers: the largest share
// of one resource type they take together.
func (r resources) dominant(t planner.JobTasks, ps, w int) float64 {
	sp, sw := r.shareOf(t.PS), r.shareOf(t.Worker)
	s := 0.0
	for k := range r.types {
		s = max(s, float64(ps)*at(sp, k)+float64(w)*at(sw, k))
	}
	return s
}

// fairShares returns ŝ_i by job (namespace and ID): fairshare.DRF of the jobs' elastic
// demands over the cluster's aggregate, minimums served in planner/drf's
// order (priority, then namespace and ID), as `caravan sim` measures them.
func (r resources) fairShares(c *planner.Cluster, views []*planner.Job) map[structs.JobKey]float64 {
	order := slices.Clone(views)
	planner.SortJobs(order)
	slices.SortStableFunc(order, func(a, b *planner.Job) int { return cmp.Compare(b.Job.Priority, a.Job.Priority) })
	demands := make([]fairshare.Demand, len(order))
	for i, v := range order {
		t := c.JobTasks(v)
		ps, workers := v.Bounds()
		demands[i] = fairshare.Demand{Worker: r.demand(t.Worker), Workers: workers, Weight: v.Job.Weight}
		if v.HasPS() {
			demands[i].Server, demands[i].Servers = r.demand(t.PS), ps
		}
	}
	out := make(map[structs.JobKey]float64, len(order))
	for i, a := range fairshare.DRF(r.total, demands) {
		out[order[i].Job.Key()] = a.Share
	}
	return out
}

// at is v[k], 0 beyond v's end.
func at(v []float64, k int) float64 {
	if k < len(v) {
		return v[k]
	}
	return 0
}

// Measure computes eqs. 1, 2 and 4 of dec for req, ŝ from fairshare.DRF.
func Measure(req *planner.Request, dec *planner.Decision) Measures {
	c := planner.NewCluster(req.Nodes)
	r := newResources(c)
	fair := r.fairShares(c, req.Jobs)
	views := make(map[structs.JobKey]*planner.Job, len(req.Jobs))
	for _, v := range req.Jobs {
		views[v.Job.Key()] = v
	}
	used := make([]float64, len(r.types))
	var out Measures
	for _, p := range dec.Placements {
		v := views[p.Key()]
		if v == nil {
			continue
		}
		t := c.JobTasks(v)
		dp, dw := r.demand(t.PS), r.demand(t.Worker)
		for k := range r.types {
			used[k] += float64(p.NumPS)*at(dp, k) + float64(p.NumWorkers)*at(dw, k)
		}
		out.FairnessLoss += math.Abs(r.dominant(t, p.NumPS, p.NumWorkers) - fair[p.Key()])
		if cur := v.Current; cur != nil && !cur.Paused() && !sameNodes(cur.Nodes, p.Nodes) {
			out.Adjusted++
		}
	}
	for k, u := range used {
		if r.total[k] > 0 {
			out.Utilisation += u / r.total[k]
		}
	}
	return out
}

func sameNodes(a, b []*structs.NodeTasks) bool {
	return slices.EqualFunc(a, b, func(x, y *structs.NodeTasks) bool { return *x == *y })
}
