package subtask

import (
	"cmp"
	"math"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// Cost is the cost model of one job on homogeneous machines, eqs. 3.1–3.4
// with d and m partitioned evenly (eq. 3.5): A = C_w.proc·D is the
// computation of all the data on one worker, and K = (M/b)·D/B the
// communication of all its mini-batches through one link, in any unit of
// time (Estimate's: seconds per step). The model needs no more of a job:
// Time is the epoch (or step) time of any split, and Split's choice
// depends on K/A only.
type Cost struct {
	A, K float64
}

// Time is the predicted time on w workers and s servers on w + s disjoint
// machines, eqs. 3.1–3.4 with d_i = D/w and m_j = M/s:
//
//	C = C_w.proc·D/w + ⌈D/(wB)⌉·max(w·(M/s)/b, M/b)
//	  ≈ A/w + (K/w)·max(w/s, 1) = A/w + K·max(1/s, 1/w)
//
// (the ceiling dropped: Caravan sees neither D nor B). It is +Inf without
// a worker or a server.
func (c Cost) Time(w, s int) float64 {
	if w < 1 || s < 1 {
		return math.Inf(1)
	}
	return c.A/float64(w) + c.K*math.Max(1/float64(s), 1/float64(w))
}

// Split returns the workers and servers, w + s = n, with the least Time
// (eq. 3.5); n must be at least 2.
func (c Cost) Split(n int) (w, s int) {
	return c.SplitWithin(n, structs.Bounds{Min: 1, Max: n - 1}, structs.Bounds{Min: 1, Max: n - 1})
}

// SplitWithin is eq. 3.5 with the workers and servers each within bounds:
//
//	w* = argmin_w (D/w)·T(w),  T(w) = C_w.proc + (M/b)·max(1, w/(n−w))/B,
//	s* = n − w*
//
// evaluated at every admissible w, O(n), as the text's analytical solver
// does. Ties go to more workers. It returns (0, 0) when no split of n
// keeps both bounds.
func (c Cost) SplitWithin(n int, workers, servers structs.Bounds) (w, s int) {
	lo := max(workers.Min, n-servers.Max, 1)
	hi := min(workers.Max, n-servers.Min, n-1)
	best, bestT := 0, math.Inf(1)
	for cand := hi; cand >= lo; cand-- {
		if t := c.Time(cand, n-cand); t < bestT {
			best, bestT = cand, t
		}
	}
	if best == 0 {
		return 0, 0
	}
	return best, n - best
}

// Gain is the predicted relative gain of moving from (w0, s0) to (w1, s1):
// 1 − Time(w1, s1)/Time(w0, s0), negative for a loss. The Optimizer's
// policy (§3.3.1) reconfigures only when it is at least its threshold.
func (c Cost) Gain(w0, s0, w1, s1 int) float64 {
	from, to := c.Time(w0, s0), c.Time(w1, s1)
	switch {
	case math.IsInf(from, 1) && math.IsInf(to, 1):
		return 0
	case math.IsInf(from, 1):
		return 1
	}
	return 1 - to/from
}

// Estimate fits a job's cost model to its measured subtasks: CPU, a
// worker's computation in a step, and Net, its communication, at PS
// servers and Workers workers (the scheduler's moving averages of the
// samples' cpu_s and net_s, §3.3.1's "moving average to reduce noise").
// A step processes a fixed share of the data, so by eqs. 3.3–3.4 with
// even partitions a worker computes A/w of it and communicates
// K·max(1/s, 1/w):
//
//	A = CPU·w,  K = Net·min(w, s)
//
// in seconds per step, and Time predicts the step time of any split. A
// trainer that reports per-mini-batch times instead (C_w.proc·B and
// (M/b)·max(1, w/s), a mini-batch per worker) scales A and K by the same
// w, so the ratio K/A, Split and Gain are unchanged. It reports false
// without a usable measurement: no computation, or no servers.
func Estimate(sub *planner.Subtasks) (Cost, bool) {
	if sub == nil || !(sub.CPU > 0) || !(sub.Net >= 0) || sub.Workers < 1 || sub.PS < 1 {
		return Cost{}, false
	}
	w, s := float64(sub.Workers), float64(sub.PS)
	return Cost{A: sub.CPU * w, K: sub.Net * math.Min(w, s)}, true
}

// Machine is one machine of a job with a heterogeneous allocation: its
// computation speed (1/C^i_w.proc) and network bandwidth, relative to a
// reference machine's (1, 1), for which the job's Cost holds.
type Machine struct {
	Speed, Bandwidth float64
}

// TimeOn is eqs. 3.1–3.4 on machines that differ, with workers on the
// machines workers and servers on the machines servers (disjoint), the
// data partitioned in proportion to the workers' speeds and the model in
// proportion to the servers' bandwidths (the heuristic of §3.4.2). With
// d_i = D·σ_i/Σσ and m_j = M·β_j/Σβ_S, worker i's epoch is
//
//	C^i = A/Σσ + K·(σ_i/Σσ)·max(w/Σβ_S, 1/β_i)
//
// where the server term is eq. 3.4's max_j m_j·w/b_ij with b_ij the
// server's link (the case the text calls server-bound), and the worker
// term Σ_j m_j/b_ij with b_ij the worker's link (worker-bound). C is the
// largest C^i (eq. 3.1). On machines of (1, 1) it is Time.
func (c Cost) TimeOn(ms []Machine, workers, servers []int) float64 {
	var speed, bw float64
	for _, i := range workers {
		speed += ms[i].Speed
	}
	for _, j := range servers {
		bw += ms[j].Bandwidth
	}
	if speed <= 0 || bw <= 0 {
		return math.Inf(1)
	}
	w := float64(len(workers))
	worst := 0.0
	for _, i := range workers {
		m := ms[i]
		worst = math.Max(worst, m.Speed*math.Max(w/bw, 1/m.Bandwidth))
	}
	return c.A/speed + c.K*worst/speed
}

// maxEnumerated is the most role assignments SplitMachines enumerates by
// machine type; beyond, it searches.
const maxEnumerated = 1 << 16

// SplitMachines solves Figure 3.2's problem for the role assignment when
// machines differ, with d and m as TimeOn partitions them: it returns
// which machines are workers and which servers, as indexes into ms, with
// the least TimeOn. Machines of the same speed and bandwidth are
// interchangeable, so it enumerates how many of each type work, exactly,
// while that is at most maxEnumerated assignments (a cluster of a few
// instance types, as in §3.4.5). Beyond, it orders machines by speed over
// bandwidth, costs every contiguous run of that order as the workers, and
// improves the best by moving one machine to the other role, or swapping
// a worker and a server, while that helps. On homogeneous machines it agrees with Split.
func (c Cost) SplitMachines(ms []Machine) (workers, servers []int) {
	n := len(ms)
	if n < 2 {
		return nil, nil
	}
	types := map[Machine][]int{}
	var keys []Machine
	for i, m := range ms {
		if _, ok := types[m]; !ok {
			keys = append(keys, m)
		}
		types[m] = append(types[m], i)
	}
	combos := 1
	for _, k := range keys {
		combos *= len(types[k]) + 1
		if combos > maxEnumerated {
			break
		}
	}
	if combos <= maxEnumerated {
		return c.enumerate(ms, keys, types)
	}
	return c.search(ms)
}

// enumerate tries every count of workers per machine type.
func (c Cost) enumerate(ms []Machine, keys []Machine, types map[Machine][]int) (workers, servers []int) {
	counts := make([]int, len(keys))
	best, bestT := []int(nil), math.Inf(1)
	for {
		var wk, sv []int
		for t, k := range keys {
			wk = append(wk, types[k][:counts[t]]...)
			sv = append(sv, types[k][counts[t]:]...)
		}
		if t := c.TimeOn(ms, wk, sv); t < bestT {
			best, bestT = slices.Clone(counts), t
		}
		t := 0
		for ; t < len(keys); t++ {
			if counts[t] < len(types[keys[t]]) {
				counts[t]++
				break
			}
			counts[t] = 0
		}
		if t == len(keys) {
			break
		}
	}
	if best == nil {
		return nil, nil
	}
	for t, k := range keys {
		workers = append(workers, types[k][:best[t]]...)
		servers = append(servers, types[k][best[t]:]...)
	}
	slices.Sort(workers)
	slices.Sort(servers)
	return workers, servers
}

// search is SplitMachines' heuristic for many distinct machines.
func (c Cost) search(ms []Machine) (workers, servers []int) {
	n := len(ms)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(ms[a].Speed/ms[a].Bandwidth, ms[b].Speed/ms[b].Bandwidth)
	})
	isWorker := make([]bool, n)
	bestLo, bestHi, bestT := 0, 0, math.Inf(1)
	for lo := range n {
		for hi := lo; hi < n && hi-lo < n-1; hi++ {
			clear(isWorker)
			for _, i := range order[lo : hi+1] {
				isWorker[i] = true
			}
			if t := c.timeOfRoles(ms, isWorker); t < bestT {
				bestLo, bestHi, bestT = lo, hi, t
			}
		}
	}
	clear(isWorker)
	for _, i := range order[bestLo : bestHi+1] {
		isWorker[i] = true
	}
	for improved := true; improved; {
		improved = false
		for i := range isWorker {
			isWorker[i] = !isWorker[i]
			if t := c.timeOfRoles(ms, isWorker); t < bestT*(1-1e-12) {
				bestT, improved = t, true
				continue
			}
			isWorker[i] = !isWorker[i]
		}
		// Swap a worker and a server.
		for i := range isWorker {
			for j := range isWorker {
				if !isWorker[i] || isWorker[j] {
					continue
				}
				isWorker[i], isWorker[j] = false, true
				if t := c.timeOfRoles(ms, isWorker); t < bestT*(1-1e-12) {
					bestT, improved = t, true
					break
				}
				isWorker[i], isWorker[j] = true, false
			}
		}
	}
	return roles(isWorker)
}

// timeOfRoles is TimeOn with the roles as flags.
func (c Cost) timeOfRoles(ms []Machine, isWorker []bool) float64 {
	w, s := roles(isWorker)
	return c.TimeOn(ms, w, s)
}

// roles returns the indexes of the workers and of the servers.
func roles(isWorker []bool) (workers, servers []int) {
	for i, w := range isWorker {
		if w {
			workers = append(workers, i)
		} else {
			servers = append(servers, i)
		}
	}
	return workers, servers
}
