package harmony

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
)

// Group is Algorithm 1, schedule (L874–905): it groups a prefix of jobs,
// taken in the order given (J_to_sched), on total machines and returns the
// grouping with the highest cluster utilisation U (eq. 4.4) it found; the
// jobs after the prefix wait. Indexes in the result are into jobs.
//
// For each prefix J_to_sched[0:n_j−1] (inclusive: n_j jobs) for n_j = 2,
// …, |J| (L4–5; one job when there is only one, see the package doc), it
// picks the number of groups n_G* by
// NumberOfGroups (L6), assigns the prefix to n_G* groups by AssignJobs (L7,
// Algorithm 2), gives the groups machines by AllocateMachines (L8), and
// computes U(G) (L9). It stops at the first prefix whose U(G) is not
// better than the best so far (L10–13, compared by Util.Better) and
// returns the best grouping (L14, as the prose at L907 says: "runs the
// jobs with the optimized set of job groups").
//
// Group is deterministic. Each prefix costs O(k log k + total·log n_G),
// plus fine-tuning; see the package doc for the cost over all prefixes.
// It returns an empty grouping when jobs is empty or total < 1.
func Group(jobs []Job, total int) *Grouping {
	best := &Grouping{}
	if len(jobs) == 0 || total < 1 {
		return best
	}
	var bestU Util
	idx := make([]int, 0, len(jobs))
	for k := range jobs {
		idx = append(idx, k)
		if k == 0 && len(jobs) > 1 {
			continue // the first prefix is two jobs (n_j = 2)
		}
		nG := NumberOfGroups(jobs, idx, total)
		groups := AssignJobs(jobs, idx, nG, total)
		g := &Grouping{Groups: groups, Machines: AllocateMachines(jobs, groups, total)}
		u := g.Utilisation(jobs)
		if len(best.Groups) > 0 && !u.Better(bestU) {
			break
		}
		best, bestU = g, u
	}
	return best
}

// imbalance is Σ_j |T_cpu_j(n_G) − T_net_j| of Algorithm 1 L6 with n
// groups of equal DoP on total machines: m = total/n, so T_cpu_j = CPU1_j·n/total
// (L907: "m_g ∝ 1/n_G and thus T_cpu ∝ n_G").
func imbalance(jobs []Job, idx []int, n, total int) float64 {
	var s float64
	m := float64(total) / float64(n)
	for _, i := range idx {
		s += math.Abs(jobs[i].Diff(m))
	}
	return s
}

// NumberOfGroups is n_G* of Algorithm 1 L6: the number of groups n in
// [1, min(|idx|, total)] that minimises Σ_j |T_cpu_j(n) − T_net_j| with every
// group on total/n machines; the smallest such n on ties. The sum is
// convex in n, so a binary search on its slope finds the minimum in
// O(|idx|·log total).
func NumberOfGroups(jobs []Job, idx []int, total int) int {
	hi := min(len(idx), total)
	if hi <= 1 {
		return 1
	}
	if imbalance(jobs, idx, hi, total) < imbalance(jobs, idx, hi-1, total) {
		return hi // still falling at the end: the minimum is there
	}
	lo := 1
	// Smallest n with f(n+1) ≥ f(n): the left end of the minimum.
	for lo < hi {
		mid := (lo + hi) / 2
		if imbalance(jobs, idx, mid+1, total) < imbalance(jobs, idx, mid, total) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// AssignJobs is Algorithm 2 (L912–963) and the fine-tuning after it
// (L971): it assigns the jobs idx of jobs to nG groups, all on total/nG
// machines (the equal DoP Algorithm 1 assumes, L907), and returns the
// groups. nG must be in [1, len(idx)].
//
//   - L2: sort by T_j_itr, descending (ties: the earlier job first).
//   - L4–11: fill each group in turn with ⌊|J|/n_G⌋ jobs (the prose of L967;
//     see the package doc on L6's "≤"), each time popping the first (the
//     largest) job whose T_diff has the sign opposite to the group's
//     S_diff (T_diff_j × S_diff_g ≤ 0, L7), else the first job (L8–9).
//   - L12–22: the remaining |J| − n_G⌊|J|/n_G⌋ jobs, by |T_diff| descending,
//     each join g* = argmin |T_diff_j + S_diff_g| (L14); when the job is
//     longer than every job of g* (L16) and g* ∪ {j} would be job-bound
//     (L17), g* is excluded and the next best taken (L18–19). When every
//     group is excluded, the job joins the first g* (the text does not say).
//   - Fine-tuning (L971): fineTune.
func AssignJobs(jobs []Job, idx []int, nG, total int) [][]int {
	groups := assignJobs(jobs, idx, nG, total)
	fineTune(jobs, groups, float64(total)/float64(nG))
	return groups
}

// assignJobs is Algorithm 2 without the fine-tuning.
func assignJobs(jobs []Job, idx []int, nG, total int) [][]int {
	m := float64(total) / float64(nG)
	if nG == len(idx) {
		// One job a group: every order of Algorithm 2 gives the same
		// groups, and no swap changes them.
		backing := slices.Clone(idx)
		groups := make([][]int, nG)
		for k := range backing {
			groups[k] = backing[k : k+1 : k+1]
		}
		return groups
	}
	type keyed struct {
		i   int
		itr float64
	}
	keys := make([]keyed, len(idx))
	for k, i := range idx {
		keys[k] = keyed{i, jobs[i].Itr(m)}
	}
	slices.SortFunc(keys, func(a, b keyed) int { return cmp.Or(cmp.Compare(b.itr, a.itr), cmp.Compare(a.i, b.i)) })
	sorted := make([]int, len(keys))
	for k, x := range keys {
		sorted[k] = x.i
	}
	// Queues of the sorted jobs by the sign of T_diff; popFirst takes the
	// earliest head among the queues the predicate allows.
	var neg, zero, pos []int // positions in sorted
	for p, i := range sorted {
		switch d := jobs[i].Diff(m); {
		case d < 0:
			neg = append(neg, p)
		case d > 0:
			pos = append(pos, p)
		default:
			zero = append(zero, p)
		}
	}
	taken := make([]bool, len(sorted))
	head := func(q *[]int) int {
		for len(*q) > 0 && taken[(*q)[0]] {
			*q = (*q)[1:]
		}
		if len(*q) == 0 {
			return math.MaxInt
		}
		return (*q)[0]
	}
	pop := func(s float64) int {
		var p int
		switch {
		case s > 0: // needs T_diff ≤ 0
			p = min(head(&neg), head(&zero))
		case s < 0: // needs T_diff ≥ 0
			p = min(head(&pos), head(&zero))
		default: // T_diff × 0 ≤ 0 holds for every job
			p = min(head(&neg), head(&zero), head(&pos))
		}
		if p == math.MaxInt { // L8–9: the first (largest) job
			p = min(head(&neg), head(&zero), head(&pos))
		}
		taken[p] = true
		return sorted[p]
	}
	per := len(idx) / nG
	groups := make([][]int, nG)
	st := make([]stats, nG)
	add := func(k, i int) {
		groups[k] = append(groups[k], i)
		st[k].cpu += jobs[i].CPU(m)
		st[k].net += jobs[i].Net
		st[k].itr = math.Max(st[k].itr, jobs[i].Itr(m))
	}
	for k := range nG {
		for len(groups[k]) < per {
			add(k, pop(st[k].cpu-st[k].net))
		}
	}
	var rest []int
	for p, i := range sorted {
		if !taken[p] {
			rest = append(rest, i)
		}
	}
	slices.SortStableFunc(rest, func(a, b int) int {
		return cmp.Compare(math.Abs(jobs[b].Diff(m)), math.Abs(jobs[a].Diff(m)))
	})
	excluded := make([]bool, nG)
	for _, i := range rest {
		d, itr := jobs[i].Diff(m), jobs[i].Itr(m)
		argmin := func() int {
			best, bestV := -1, math.Inf(1)
			for k := range nG {
				if v := math.Abs(d + st[k].cpu - st[k].net); !excluded[k] && v < bestV {
					best, bestV = k, v
				}
			}
			return best
		}
		clear(excluded)
		first := argmin()
		g := first
		for g >= 0 && itr > st[g].itr {
			s := st[g]
			if itr <= math.Max(s.cpu+jobs[i].CPU(m), s.net+jobs[i].Net)*(1+tie) {
				break // not job-bound with j
			}
			excluded[g] = true
			g = argmin()
		}
		if g < 0 {
			g = first
		}
		add(g, i)
	}
	return groups
}

// fineTune is the fine-tuning of L971 on groups of equal DoP m: it picks
// the most imbalanced group g_u = argmax |S_diff_g|, the group most
// complementary to it, argmax_{g≠g_u} |S_diff_gu − S_diff_g|, and the pair
// of jobs, one of each, whose swap minimises |S_diff_gu| + |S_diff_g| (our
// reading of "minimize the resource-imbalance for both of the groups"),
// and swaps them when that sum falls; it repeats until no swap lowers it.
// A swap that would make either group job-bound is not taken (Algorithm 2
// avoids job-bound groups, L909; the text does not say so of
// fine-tuning). Each swap lowers Σ_g |S_diff_g|, so it ends; it is capped
// at 4·|J| swaps as a guard.
func fineTune(jobs []Job, groups [][]int, m float64) {
	if len(groups) < 2 {
		return
	}
	n := 0
	for _, g := range groups {
		n += len(g)
	}
	sdiff := make([]float64, len(groups))
	for k, g := range groups {
		for _, i := range g {
			sdiff[k] += jobs[i].Diff(m)
		}
	}
	bound := func(members []int, out, in int) bool {
		var c, nt, itr float64
		for _, i := range members {
			if i == out {
				i = in
			}
			c += jobs[i].CPU(m)
			nt += jobs[i].Net
			itr = math.Max(itr, jobs[i].Itr(m))
		}
		return len(members) > 1 && itr > math.Max(c, nt)*(1+tie)
	}
	for range 4 * n {
		u := 0
		for k := range groups {
			if math.Abs(sdiff[k]) > math.Abs(sdiff[u]) {
				u = k
			}
		}
		c := -1
		for k := range groups {
			if k != u && (c < 0 || math.Abs(sdiff[u]-sdiff[k]) > math.Abs(sdiff[u]-sdiff[c])) {
				c = k
			}
		}
		before := math.Abs(sdiff[u]) + math.Abs(sdiff[c])
		bestV, ba, bb := before*(1-1e-9), -1, -1
		for a, i := range groups[u] {
			di := jobs[i].Diff(m)
			for b, j := range groups[c] {
				dj := jobs[j].Diff(m)
				if v := math.Abs(sdiff[u]-di+dj) + math.Abs(sdiff[c]-dj+di); v < bestV &&
					!bound(groups[u], i, j) && !bound(groups[c], j, i) {
					bestV, ba, bb = v, a, b
				}
			}
		}
		if ba < 0 {
			return
		}
		i, j := groups[u][ba], groups[c][bb]
		groups[u][ba], groups[c][bb] = j, i
		di, dj := jobs[i].Diff(m), jobs[j].Diff(m)
		sdiff[u] += dj - di
		sdiff[c] += di - dj
	}
}

// AllocateMachines distributes total machines to groups (L973): one to
// every group first, then one at a time to the group that needs one most,
// the most computation-intensive: the group with the largest
// S_diff_g = Σ T_cpu − Σ T_net on its machines so far (eq. 4.2 makes each
// extra machine shorten its computation). Every machine is given (the
// text repeats the step without a stopping rule); ties go to the earlier
// group. It returns nil for no groups; groups must not outnumber total.
func AllocateMachines(jobs []Job, groups [][]int, total int) []int {
	if len(groups) == 0 {
		return nil
	}
	h := &needHeap{groups: make([]need, 0, len(groups))}
	for k, members := range groups {
		var c, n float64
		for _, i := range members {
			c += jobs[i].CPU1
			n += jobs[i].Net
		}
		h.groups = append(h.groups, need{k: k, cpu1: c, net: n, m: 1})
	}
	bulk(h.groups, total-len(groups))
	heap.Init(h)
	left := total
	for _, g := range h.groups {
		left -= g.m
	}
	for range left {
		h.groups[0].m++
		heap.Fix(h, 0)
	}
	out := make([]int, len(groups))
	for _, g := range h.groups {
		out[g.k] = g.m
	}
	return out
}

// bulk gives groups, at one machine each, the machines the one-at-a-time
// greedy of AllocateMachines would give them in one step, for speed: with
// r machines to give, the greedy takes the r largest of the keys
// d_g(m) = Σ CPU1/m − Σ Net, m = 1, 2, … of every group (each group's keys
// fall with m, so it takes each group's in order). A binary search finds
// a λ such that the keys above λ number at most r, and each group gets its
// keys above λ at once; the heap then gives the rest one at a time, as
// the greedy would. The result is the greedy's, machine for machine.
func bulk(groups []need, r int) {
	if r <= 0 || len(groups) == 0 {
		return
	}
	count := func(g need, lambda float64) int {
		// keys above λ: m ≥ 1 with cpu1/m − net > λ.
		if g.cpu1 <= 0 {
			if -g.net > lambda {
				return r + 1
			}
			return 0
		}
		if g.net+lambda <= 0 {
			return r + 1
		}
		x := g.cpu1 / (g.net + lambda)
		if x > float64(r+2) {
			return r + 1
		}
		c := int(math.Ceil(x)) - 1
		if c < 0 {
			c = 0
		}
		for c > 0 && g.cpu1/float64(c)-g.net <= lambda {
			c--
		}
		return c
	}
	sum := func(lambda float64) int {
		n := 0
		for _, g := range groups {
			n += count(g, lambda)
			if n > r {
				return n
			}
		}
		return n
	}
	hi := math.Inf(-1)
	lo := math.Inf(1)
	for _, g := range groups {
		hi = math.Max(hi, g.cpu1-g.net)
		lo = math.Min(lo, -g.net)
	}
	lo--
	got := sum(hi)
	if got > r { // cannot happen: no key is above the largest
		return
	}
	// Narrow λ until the heap has a few machines left to give (ties may
	// leave more: the search then stops where floats do).
	for range 100 {
		if r-got <= 8 {
			break
		}
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if n := sum(mid); n <= r {
			hi, got = mid, n
		} else {
			lo = mid
		}
	}
	for k := range groups {
		groups[k].m += count(groups[k], hi)
	}
}

// need is a group's claim on the next machine: Σ CPU1/m − Σ Net.
type need struct {
	k         int
	cpu1, net float64
	m         int
}

func (n need) diff() float64 { return n.cpu1/float64(n.m) - n.net }

type needHeap struct{ groups []need }

func (h *needHeap) Len() int { return len(h.groups) }
func (h *needHeap) Less(a, b int) bool {
	da, db := h.groups[a].diff(), h.groups[b].diff()
	if da != db {
		return da > db
	}
	return h.groups[a].k < h.groups[b].k
}
func (h *needHeap) Swap(a, b int) { h.groups[a], h.groups[b] = h.groups[b], h.groups[a] }
func (h *needHeap) Push(x any)    { h.groups = append(h.groups, x.(need)) }
func (h *needHeap) Pop() any {
	x := h.groups[len(h.groups)-1]
	h.groups = h.groups[:len(h.groups)-1]
	return x
}
