package harmony

import (
	"cmp"
	"math"
	"slices"
)

// candidates is how many groups, the most complementary first, a job is
// tried in when it is fine-tuned; it bounds a pass to O(jobs · candidates).
const candidates = 16

// Group groups jobs, given in arrival order, on total machines.
//
// Algorithm 1 grows the set of jobs considered, a prefix of the arrival
// order doubling each time, while cluster utilisation improves, and keeps
// the best; jobs beyond it wait. For each set it tries numbers of groups
// (powers of two up to the set's size and the machines, and half the
// set), assigning the jobs by Algorithm 2 and keeping the number with the
// best utilisation. Algorithm 2 takes jobs in order of how lopsided they
// are and puts each in the group whose imbalance it best offsets (the most
// network-heavy group for a CPU-heavy job), then Allocate gives the
// groups machines. Last, fine-tuning moves and swaps jobs between groups
// while utilisation rises, never making a group job-bound. The result is
// deterministic; it costs O(n log² n) for n jobs, plus the fine-tuning's
// O(n · candidates) per pass.
func Group(jobs []Job, total int, opts Options) *Grouping {
	opts = opts.withDefaults()
	if len(jobs) == 0 || total < 1 {
		return &Grouping{}
	}
	var best *Grouping
	bestU := -1.0
	for k := 1; ; k = min(2*k, len(jobs)) {
		g := bestNumberOfGroups(jobs[:k], total, opts.CPUWeight)
		u := g.Utilisation(jobs, total, opts.CPUWeight)
		if u < bestU {
			break
		}
		best, bestU = g, u
		if k == len(jobs) {
			break
		}
	}
	fineTune(jobs, best, total, opts)
	return best
}

// bestNumberOfGroups assigns every job of jobs (Algorithm 2) for several
// numbers of groups and returns the grouping with the best utilisation.
func bestNumberOfGroups(jobs []Job, total int, alpha float64) *Grouping {
	most := min(len(jobs), total)
	counts := []int{max(1, len(jobs)/2)}
	for g := 1; g <= most; g *= 2 {
		counts = append(counts, g)
	}
	counts = append(counts, most)
	var best *Grouping
	bestU := -1.0
	for _, n := range counts {
		if n > most {
			continue
		}
		g := assign(jobs, n, total)
		if u := g.Utilisation(jobs, total, alpha); best == nil || u > bestU {
			best, bestU = g, u
		}
	}
	return best
}

// assign puts jobs into n groups (Algorithm 2): the most lopsided jobs
// first, each into the group whose CPU-minus-network time, on the
// machines a group would have at n groups, it best offsets, or into an
// empty group when joining would make the group job-bound; then
// allocates machines.
func assign(jobs []Job, n, total int) *Grouping {
	m := max(1, total/n)
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	lopsided := func(i int) float64 { return math.Abs(jobs[i].CPU(m) - jobs[i].Net) }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(lopsided(b), lopsided(a)) })
	groups := make([][]int, n)
	aggs := make([]agg, n)
	for k := range aggs {
		aggs[k] = agg{m: m, top1Job: -1}
	}
	excess := make([]float64, n) // Σ C − Σ N of each group at m machines
	// heap of groups by excess: a CPU-heavy job takes the lowest, a
	// network-heavy one the highest.
	low := newGroupHeap(excess, false)
	high := newGroupHeap(excess, true)
	empty := 0 // groups before it have members
	for _, i := range order {
		d := jobs[i].CPU(m) - jobs[i].Net
		k := high.top()
		if d >= 0 {
			k = low.top()
		}
		// A job that would set its group's pace by its own iteration
		// (job-bound) goes to an empty group while there is one.
		if len(groups[k]) > 0 && aggs[k].bound(jobs, -1, i, len(groups[k])+1) {
			for empty < n && len(groups[empty]) > 0 {
				empty++
			}
			if empty < n {
				k = empty
			}
		}
		groups[k] = append(groups[k], i)
		aggs[k].add(jobs, i)
		excess[k] += d
		low.fix(k)
		high.fix(k)
	}
	g := &Grouping{}
	for _, members := range groups {
		if len(members) > 0 {
			g.Groups = append(g.Groups, members)
		}
	}
	g.Machines = Allocate(jobs, g.Groups, total)
	return g
}

// groupHeap orders groups by their excess, lowest (or highest) first.
type groupHeap struct {
	key     []float64
	highest bool
	heap    []int // group indexes
	pos     []int // group → position in heap
}

func newGroupHeap(key []float64, highest bool) *groupHeap {
	h := &groupHeap{key: key, highest: highest, heap: make([]int, len(key)), pos: make([]int, len(key))}
	for k := range key {
		h.heap[k], h.pos[k] = k, k
	}
	return h
}

func (h *groupHeap) less(a, b int) bool {
	ka, kb := h.key[h.heap[a]], h.key[h.heap[b]]
	if ka != kb {
		return ka < kb != h.highest
	}
	return h.heap[a] < h.heap[b]
}

func (h *groupHeap) swap(a, b int) {
	h.heap[a], h.heap[b] = h.heap[b], h.heap[a]
	h.pos[h.heap[a]], h.pos[h.heap[b]] = a, b
}

func (h *groupHeap) top() int { return h.heap[0] }

// fix restores the heap after group k's key changed.
func (h *groupHeap) fix(k int) {
	i := h.pos[k]
	for i > 0 && h.less(i, (i-1)/2) {
		h.swap(i, (i-1)/2)
		i = (i - 1) / 2
	}
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h.heap) && h.less(l, m) {
			m = l
		}
		if r < len(h.heap) && h.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		h.swap(i, m)
		i = m
	}
}

// imbalance is a group's Σ C − Σ N on m machines, relative to its time:
// positive when CPU-heavy.
func imbalance(jobs []Job, members []int, m int) float64 {
	var c, n float64
	for _, i := range members {
		c += jobs[i].CPU(m)
		n += jobs[i].Net
	}
	if c+n == 0 {
		return 0
	}
	return (c - n) / (c + n)
}

// complements orders the groups of g by imbalance, for complementary.
type complements struct {
	order []int // groups, most network-heavy first
}

func newComplements(jobs []Job, g *Grouping) complements {
	imb := make([]float64, len(g.Groups))
	order := make([]int, len(g.Groups))
	for k, members := range g.Groups {
		order[k] = k
		imb[k] = imbalance(jobs, members, g.Machines[k])
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(imb[a], imb[b]) })
	return complements{order: order}
}

// of returns up to candidates groups whose imbalance best offsets that of
// a job, d (positive when CPU-heavy): the most network-heavy groups for a
// CPU-heavy job, the most CPU-heavy ones for a network-heavy job.
func (c complements) of(d float64) []int {
	n := min(len(c.order), candidates)
	if d >= 0 {
		return c.order[:n]
	}
	return c.order[len(c.order)-n:]
}

// Allocate divides total machines among groups, at least one each: first
// where each group's computation and communication balance, Σ CPU1 / Σ Net
// machines (in proportion to those when they ask for more than there
// are), then the machines left over in proportion to the same. A machine
// beyond a group's balance point no longer shortens its iteration, but it
// still works: its network is busy for the whole iteration, so in
// utilisation (eq. 4.4) it counts. groups must not outnumber total.
func Allocate(jobs []Job, groups [][]int, total int) []int {
	if len(groups) == 0 {
		return nil
	}
	want := make([]float64, len(groups))
	var sum float64
	for k, members := range groups {
		var c, n float64
		for _, i := range members {
			c += jobs[i].CPU1
			n += jobs[i].Net
		}
		want[k] = float64(total)
		if n > 0 {
			want[k] = math.Max(1, math.Min(c/n, float64(total)))
		}
		sum += want[k]
	}
	// Every machine is given: in proportion to the balance points, whether
	// they ask for more or fewer machines than there are.
	scale := float64(total) / sum
	out := make([]int, len(groups))
	type rem struct {
		k    int
		frac float64
	}
	rems := make([]rem, len(groups))
	used := 0
	for k := range groups {
		x := math.Max(1, want[k]*scale)
		out[k] = int(x)
		used += out[k]
		rems[k] = rem{k, x - float64(out[k])}
	}
	// Largest remainders first, while machines are left.
	slices.SortStableFunc(rems, func(a, b rem) int { return cmp.Compare(b.frac, a.frac) })
	for i := 0; used < total; i = (i + 1) % len(rems) {
		out[rems[i].k]++
		used++
	}
	// Rounding groups up to one machine each may overshoot: take back
	// from the largest.
	for used > total {
		k := slices.Index(out, slices.Max(out))
		out[k]--
		used--
	}
	return out
}

// swapTries is how many jobs of a candidate group fine-tuning tries to
// swap a job with: those most opposite to it.
const swapTries = 8

// agg is a group's aggregates on its machines m, for evaluating moves in
// O(1): Σ C, Σ N, and the two largest of its jobs' own C + N.
type agg struct {
	m          int
	c, n       float64
	top1, top2 float64
	top1Job    int
}

func newAgg(jobs []Job, members []int, m int) agg {
	a := agg{m: m, top1Job: -1}
	for _, i := range members {
		a.add(jobs, i)
	}
	return a
}

func (a *agg) add(jobs []Job, i int) {
	c := jobs[i].CPU(a.m)
	a.c += c
	a.n += jobs[i].Net
	switch own := c + jobs[i].Net; {
	case own > a.top1:
		a.top2, a.top1, a.top1Job = a.top1, own, i
	case own > a.top2:
		a.top2 = own
	}
}

// with returns the group's Σ C, Σ N and longest own C + N with job out
// removed (-1: none) and job in added (-1: none).
func (a agg) with(jobs []Job, out, in int) (c, n, own float64) {
	c, n, own = a.c, a.n, a.top1
	if out >= 0 {
		c -= jobs[out].CPU(a.m)
		n -= jobs[out].Net
		if out == a.top1Job {
			own = a.top2
		}
	}
	if in >= 0 {
		ci := jobs[in].CPU(a.m)
		c += ci
		n += jobs[in].Net
		own = math.Max(own, ci+jobs[in].Net)
	}
	return c, n, own
}

// util is m·U_g (eq. 4.3) with job out removed (-1: none) and job in
// added (-1: none).
func (a agg) util(jobs []Job, alpha float64, out, in int) float64 {
	c, n, own := a.with(jobs, out, in)
	t := math.Max(math.Max(c, n), own)
	if t <= 0 {
		return 0
	}
	return float64(a.m) * (alpha*c + (1-alpha)*n) / t
}

// bound reports whether the group, so changed, is job-bound.
func (a agg) bound(jobs []Job, out, in int, size int) bool {
	if size < 2 {
		return false
	}
	c, n, own := a.with(jobs, out, in)
	return own > math.Max(c, n)
}

// fineTune moves single jobs to other groups, and swaps pairs of jobs
// between groups, while that raises the machine-weighted utilisation of
// the two groups (on their machines) and makes neither job-bound, for at
// most opts.Passes passes; then reallocates machines. Each job is tried
// against the candidates most complementary groups, and for swaps the
// swapTries jobs of each most opposite to it.
func fineTune(jobs []Job, g *Grouping, total int, opts Options) {
	alpha := opts.CPUWeight
	aggs := make([]agg, len(g.Groups))
	for k, members := range g.Groups {
		aggs[k] = newAgg(jobs, members, g.Machines[k])
	}
	excess := func(i, m int) float64 { return jobs[i].CPU(m) - jobs[i].Net }
	groupOf := make([]int, len(jobs))
	for i := range groupOf {
		groupOf[i] = -1
	}
	for k, members := range g.Groups {
		for _, i := range members {
			groupOf[i] = k
		}
	}
	for range opts.Passes {
		improved := false
		comp := newComplements(jobs, g)
		// Each group's jobs by excess, ascending, as the pass starts.
		byExcess := make([][]int, len(g.Groups))
		for k, members := range g.Groups {
			byExcess[k] = slices.Clone(members)
			m := g.Machines[k]
			slices.SortFunc(byExcess[k], func(a, b int) int { return cmp.Compare(excess(a, m), excess(b, m)) })
		}
		for from := range g.Groups {
			for x := 0; x < len(g.Groups[from]); x++ {
				i := g.Groups[from][x]
				for _, to := range comp.of(excess(i, g.Machines[from])) {
					if to == from {
						continue
					}
					af, at := aggs[from], aggs[to]
					before := af.util(jobs, alpha, -1, -1) + at.util(jobs, alpha, -1, -1)
					sizeF, sizeT := len(g.Groups[from]), len(g.Groups[to])
					// Move i alone.
					if sizeF > 1 && af.util(jobs, alpha, i, -1)+at.util(jobs, alpha, -1, i) > before*(1+1e-9) &&
						!at.bound(jobs, -1, i, sizeT+1) {
						g.Groups[from] = slices.Delete(g.Groups[from], x, x+1)
						g.Groups[to] = append(g.Groups[to], i)
						groupOf[i] = to
						aggs[from], aggs[to] = newAgg(jobs, g.Groups[from], af.m), newAgg(jobs, g.Groups[to], at.m)
						improved = true
						x--
						break
					}
					// Swap i with one of the other group's most opposite jobs:
					// the lowest excesses for a CPU-heavy i, else the highest.
					others := byExcess[to]
					if excess(i, at.m) < 0 {
						others = slices.Clone(others)
						slices.Reverse(others)
					}
					swapped := false
					tried := 0
					for _, j := range others {
						if groupOf[j] != to {
							continue // moved since the pass started
						}
						if tried++; tried > swapTries {
							break
						}
						if af.util(jobs, alpha, i, j)+at.util(jobs, alpha, j, i) > before*(1+1e-9) &&
							!af.bound(jobs, i, j, sizeF) && !at.bound(jobs, j, i, sizeT) {
							y := slices.Index(g.Groups[to], j)
							g.Groups[from][x], g.Groups[to][y] = j, i
							groupOf[i], groupOf[j] = to, from
							aggs[from], aggs[to] = newAgg(jobs, g.Groups[from], af.m), newAgg(jobs, g.Groups[to], at.m)
							swapped, improved = true, true
							break
						}
					}
					if swapped {
						break
					}
				}
			}
		}
		if !improved {
			break
		}
	}
	g.Machines = Allocate(jobs, g.Groups, total)
}
