package cruise

import (
	"cmp"
	"math"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// Cost is the cost model of one job: A is an epoch's computation on one
// worker, K its communication through one server, in any unit of time.
type Cost struct {
	A, K float64
}

// Time is the predicted epoch time on w workers and s servers; +Inf
// without either.
func (c Cost) Time(w, s int) float64 {
	if w < 1 || s < 1 {
		return math.Inf(1)
	}
	return c.A/float64(w) + c.K*math.Max(1/float64(s), 1/float64(w))
}

// Split returns the workers and servers, w + s = n, with the least Time.
// Below w = n/2 the time falls as w grows, and above it is convex with its
// minimum at
//
//	w* = n·√A / (√A + √K)                                        (eq. 3.5)
//
// so the optimum is w* or the integer beside it, or n/2 when w* is below
// that. n must be at least 2.
func (c Cost) Split(n int) (w, s int) {
	return c.SplitWithin(n, structs.Bounds{Min: 1, Max: n - 1}, structs.Bounds{Min: 1, Max: n - 1})
}

// SplitWithin is Split with the workers and servers each within bounds;
// it returns (0, 0) when no split of n keeps both.
func (c Cost) SplitWithin(n int, workers, servers structs.Bounds) (w, s int) {
	lo := max(workers.Min, n-servers.Max, 1)
	hi := min(workers.Max, n-servers.Min, n-1)
	if lo > hi {
		return 0, 0
	}
	star := float64(n) * math.Sqrt(c.A) / (math.Sqrt(c.A) + math.Sqrt(c.K))
	if c.A+c.K == 0 || math.IsNaN(star) {
		star = float64(n) / 2
	}
	best, bestT := 0, math.Inf(1)
	// The time is unimodal in w, so its least within [lo, hi] is at a
	// candidate clamped into the range.
	for _, cand := range []int{int(math.Floor(star)), int(math.Ceil(star)), n / 2, (n + 1) / 2, lo, hi} {
		cand = min(max(cand, lo), hi)
		if t := c.Time(cand, n-cand); t < bestT || t == bestT && cand > best {
			best, bestT = cand, t
		}
	}
	return best, n - best
}

// Estimate fits a job's cost model to its measured subtasks: a step's
// computation CPU and communication Net at PS servers and Workers
// workers. A worker's step computes for a share of A and pulls for the
// same share of K·max(w/s, 1), so one measurement tells only the ratio
// K/A = Net / (CPU·max(w/s, 1)), which is all Split needs: Estimate
// returns A = 1 and that ratio as K. It reports false without a usable
// measurement.
func Estimate(sub *planner.Subtasks) (Cost, bool) {
	if sub == nil || !(sub.CPU > 0) || !(sub.Net >= 0) || sub.Workers < 1 || sub.PS < 1 {
		return Cost{}, false
	}
	over := math.Max(float64(sub.Workers)/float64(sub.PS), 1)
	return Cost{A: 1, K: sub.Net / (sub.CPU * over)}, true
}

// Machine is one machine of a job with a heterogeneous allocation: its
// computation speed and network bandwidth, relative to a reference
// machine's (1, 1).
type Machine struct {
	Speed, Bandwidth float64
}

// TimeOn is the predicted epoch time when the machines of workers compute
// and those of servers serve. Data splits over workers in proportion to
// their speed and model shards over servers in proportion to their
// bandwidth, so computation takes A/Σspeed, and communication is bounded
// by the busiest worker's link, K·(speed_i/Σspeed)/bandwidth_i, and by
// the servers' links together, K/Σbandwidth. With every machine (1, 1) it
// is Time.
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
	comm := 1 / bw
	for _, i := range workers {
		comm = math.Max(comm, ms[i].Speed/speed/ms[i].Bandwidth)
	}
	return c.A/speed + c.K*comm
}

// exhaustiveMachines is the largest number of machines SplitMachines
// tries every assignment of.
const exhaustiveMachines = 12

// SplitMachines chooses which machines are workers and which servers
// when they differ, with the least TimeOn, as indexes into ms. Up to
// exhaustiveMachines machines it tries every assignment. Beyond, it orders
// machines by speed over bandwidth and costs every contiguous run of that
// order as the workers (O(n²)), then improves the best by moving one
// machine at a time to the other role while that helps. On homogeneous
// machines it agrees with Split.
func (c Cost) SplitMachines(ms []Machine) (workers, servers []int) {
	n := len(ms)
	if n < 2 {
		return nil, nil
	}
	isWorker := make([]bool, n)
	if n <= exhaustiveMachines {
		best, bestT := 0, math.Inf(1)
		for mask := 1; mask < 1<<n-1; mask++ {
			for i := range isWorker {
				isWorker[i] = mask&(1<<i) != 0
			}
			if t := c.timeOfRoles(ms, isWorker); t < bestT {
				best, bestT = mask, t
			}
		}
		for i := range isWorker {
			isWorker[i] = best&(1<<i) != 0
		}
		return roles(isWorker)
	}
	// The busiest worker link is that of the worker with the largest
	// speed over bandwidth, so workers are best a contiguous run of the
	// machines ordered by that ratio: try every run.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(ms[a].Speed/ms[a].Bandwidth, ms[b].Speed/ms[b].Bandwidth)
	})
	var totalBW float64
	for _, m := range ms {
		totalBW += m.Bandwidth
	}
	bestLo, bestHi, bestT := 0, 0, math.Inf(1)
	for lo := range n {
		var speed, bw float64
		for hi := lo; hi < n && hi-lo < n-1; hi++ {
			m := ms[order[hi]]
			speed += m.Speed
			bw += m.Bandwidth
			// order[hi] has the largest ratio of the run.
			comm := math.Max(1/(totalBW-bw), m.Speed/m.Bandwidth/speed)
			if t := c.A/speed + c.K*comm; t < bestT {
				bestLo, bestHi, bestT = lo, hi, t
			}
		}
	}
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
