package fairshare

import (
	"github.com/caravan-sched/caravan/planner/internal/pq"
	"github.com/caravan-sched/caravan/structs"
)

// Demand is one job's ask for DRF: what one worker and one parameter
// server take of each resource, in the units and order of DRF's
// capacity, the job's bounds and its weight.
type Demand struct {
	Worker, Server []float64
	// Workers are the worker bounds; Servers the parameter servers', zero
	// for an all-reduce job.
	Workers, Servers structs.Bounds
	// Weight divides the job's dominant share when jobs are compared; 0
	// means 1.
	Weight float64
}

// Allocation is what DRF gives one job: its tasks and its dominant
// share, the largest share of any one resource they take together.
type Allocation struct {
	Workers, Servers int
	Share            float64
}

// DRF is the theoretical DRF allocation of a cluster's aggregate
// capacity among demands: Ghodsi et al.'s progressive filling (NSDI'11,
// Algorithm 1), one task at a time, as planner/drf's Plan grows jobs.
// Every job first gets its minimum (at least one worker, and one server
// for a PS job), in the order given, when the capacity left holds it; a
// job whose minimum does not fit gets nothing. Then the job of smallest
// weighted dominant share (the earlier one on ties) gets one more worker,
// and a server with it while it has fewer servers than workers (Plan's
// 1:1 ratio), until its maximum or until that does not fit, after which
// it gets no more.
//
// Unlike planner/drf's Plan, DRF ranks jobs by their dominant share as the
// DRF paper and Dorm's eq. 2 define it, the largest share of one resource
// that all the job's tasks take; Plan sums its tasks' dominant shares,
// which is the same for a job whose tasks all have the same dominant
// resource (an all-reduce job) and more for a PS job whose workers are
// GPU-bound and servers CPU-bound. DRF does not place: it allocates the
// aggregate, as if nodes were one. Resources of capacity 0 are ignored in
// shares; a job that needs one gets nothing. It takes O((jobs + tasks) log
// jobs) for the tasks it allocates, and does not modify its arguments.
func DRF(capacity []float64, demands []Demand) []Allocation {
	free := append([]float64(nil), capacity...)
	out := make([]Allocation, len(demands))
	fits := func(d *Demand, workers, servers int) bool {
		for k := range free {
			if need := float64(workers)*at(d.Worker, k) + float64(servers)*at(d.Server, k); need > free[k]+1e-9*capacity[k] || need > 0 && capacity[k] <= 0 {
				return false
			}
		}
		return true
	}
	take := func(i, workers, servers int) {
		d, a := &demands[i], &out[i]
		a.Workers += workers
		a.Servers += servers
		a.Share = 0
		for k := range free {
			free[k] -= float64(workers)*at(d.Worker, k) + float64(servers)*at(d.Server, k)
			if capacity[k] > 0 {
				a.Share = max(a.Share, (float64(a.Workers)*at(d.Worker, k)+float64(a.Servers)*at(d.Server, k))/capacity[k])
			}
		}
	}
	weighted := func(i int) float64 {
		if w := demands[i].Weight; w > 0 {
			return out[i].Share / w
		}
		return out[i].Share
	}
	h := pq.Heap[int]{Less: func(a, b int) bool {
		sa, sb := weighted(a), weighted(b)
		return sa < sb || sa == sb && a < b
	}}
	for i := range demands {
		d := &demands[i]
		minW, minP := max(d.Workers.Min, 1), 0
		if d.Servers.Max > 0 {
			minP = max(d.Servers.Min, 1)
		}
		if !fits(d, minW, minP) {
			continue
		}
		take(i, minW, minP)
		h.Push(i)
	}
	for h.Len() > 0 {
		i := h.Pop()
		d, a := &demands[i], &out[i]
		if a.Workers >= d.Workers.Max {
			continue
		}
		servers := 0
		if a.Servers < min(d.Servers.Max, a.Workers+1) {
			servers = 1
		}
		if !fits(d, 1, servers) {
			continue
		}
		take(i, 1, servers)
		h.Push(i)
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
