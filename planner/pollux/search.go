package pollux

import (
	"cmp"
	"math"
	"slices"

	"github.com/caravan-sched/caravan/planner/internal/pq"
)

// individual is one allocation: for each job (in the problem's order), at
// most width entries of workers per node, sorted by node, and the
// allocation's objective.
type individual struct {
	node, count []int32 // job j's at [off[j], off[j+1])
	n           []int32 // entries per job
	fit         float64
}

func (pr *problem) newIndividual() *individual {
	if k := len(pr.spare); k > 0 {
		ind := pr.spare[k-1]
		pr.spare = pr.spare[:k-1]
		return ind
	}
	size := pr.off[len(pr.jobs)]
	return &individual{node: make([]int32, size), count: make([]int32, size), n: make([]int32, len(pr.jobs))}
}

func (pr *problem) release(ind *individual) { pr.spare = append(pr.spare, ind) }

// copyJobs copies the allocations of jobs [from, to) of src into dst.
func (pr *problem) copyJobs(dst, src *individual, from, to int) {
	copy(dst.node[pr.off[from]:pr.off[to]], src.node[pr.off[from]:pr.off[to]])
	copy(dst.count[pr.off[from]:pr.off[to]], src.count[pr.off[from]:pr.off[to]])
	copy(dst.n[from:to], src.n[from:to])
}

// setCurrent gives job j its current allocation in ind.
func (pr *problem) setCurrent(ind *individual, j int) {
	cur := pr.jobs[j].current
	o := pr.off[j]
	k := 0
	for _, e := range cur {
		if k == pr.width(j) {
			break
		}
		ind.node[o+k], ind.count[o+k] = e.node, e.count
		k++
	}
	ind.n[j] = int32(k)
}

// compact drops job j's entries with no worker.
func (pr *problem) compact(ind *individual, j int) {
	o := pr.off[j]
	k := 0
	for e := range int(ind.n[j]) {
		if ind.count[o+e] > 0 {
			ind.node[o+k], ind.count[o+k] = ind.node[o+e], ind.count[o+e]
			k++
		}
	}
	ind.n[j] = int32(k)
}

// replicas is job j's workers in ind.
func (pr *problem) replicas(ind *individual, j int) int {
	o, r := pr.off[j], 0
	for e := range int(ind.n[j]) {
		r += int(ind.count[o+e])
	}
	return r
}

// isCurrent reports whether job j's allocation in ind is its current one.
func (pr *problem) isCurrent(ind *individual, j int) bool {
	cur := pr.jobs[j].current
	if int(ind.n[j]) != len(cur) {
		return false
	}
	o := pr.off[j]
	for e, c := range cur {
		if ind.node[o+e] != c.node || ind.count[o+e] != c.count {
			return false
		}
	}
	return true
}

// evaluate sets ind.fit: the power mean of the jobs' speed-ups, each
// penalised when its allocation changed (pollux.py _evaluate).
func (pr *problem) evaluate(ind *individual) {
	pr.evaluated++
	sum := 0.0
	for j, jb := range pr.jobs {
		s := 0.0
		if r := pr.replicas(ind, j); r > 0 {
			s = pr.speedup(jb, int(ind.n[j]), r)
			if !pr.isCurrent(ind, j) {
				s *= jb.restart
			}
		}
		sum += jb.weight * pr.term(s)
	}
	ind.fit = pr.mean(sum, pr.weights)
}

// fitsOne reports whether one more worker of job jb fits on node i given
// the capacity used in pr.used.
func (pr *problem) fitsOne(jb *job, i int) bool {
	row := i * pr.k
	for d, c := range jb.demand {
		if c > 0 && pr.used[row+d]+c > pr.capacity[row+d] {
			return false
		}
	}
	return true
}

// computeUsed fills pr.used with the capacity ind's workers take.
func (pr *problem) computeUsed(ind *individual) {
	clear(pr.used)
	for j, jb := range pr.jobs {
		o := pr.off[j]
		for e := range int(ind.n[j]) {
			row := int(ind.node[o+e]) * pr.k
			c := int(ind.count[o+e])
			for d, v := range jb.demand {
				pr.used[row+d] += c * v
			}
		}
	}
}

// mutate is pollux.py Problem._mutation: each job is reset to its current
// allocation with probability 0.1; a tenth of the jobs lose each node
// with probability 0.1; then each job grows, on about one of its nodes
// where another worker fits and on a random node it may run on, to a
// random count up to what the node holds of it.
func (pr *problem) mutate(ind *individual) {
	rng := pr.rng
	jobs := len(pr.jobs)
	for j := pr.skip(); j < jobs; j += 1 + pr.skip() {
		pr.setCurrent(ind, j)
	}
	for j := pr.skip(); j < jobs; j += 1 + pr.skip() {
		o := pr.off[j]
		for e := range int(ind.n[j]) {
			if rng.Float64() < 0.1 {
				ind.count[o+e] = 0
			}
		}
		pr.compact(ind, j)
	}
	pr.computeUsed(ind)
	for j, jb := range pr.jobs {
		o := pr.off[j]
		fits := 0
		for e := range int(ind.n[j]) {
			if pr.fitsOne(jb, int(ind.node[o+e])) {
				fits++
			}
		}
		for e := range int(ind.n[j]) {
			i := ind.node[o+e]
			if fits > 0 && pr.fitsOne(jb, int(i)) && rng.IntN(fits) == 0 {
				cur := ind.count[o+e]
				ind.count[o+e] = cur + rng.Int32N(max(jb.maxRep(i)-cur, 0)+1)
			}
		}
		if len(jb.feasible) == 0 || int(ind.n[j]) >= pr.width(j) {
			continue
		}
		i := jb.feasible[rng.IntN(len(jb.feasible))]
		if !pr.fitsOne(jb, int(i)) {
			continue
		}
		if c := rng.Int32N(jb.maxRep(i) + 1); c > 0 {
			pr.insert(ind, j, i, c)
		}
	}
}

// logTenth is log(1 − 0.1), for skip.
var logTenth = math.Log(0.9)

// skip returns how many jobs to pass over before the next one an event
// of probability 0.1 befalls: a geometric draw, so that choosing a tenth
// of the jobs costs a random number per chosen job, not per job.
func (pr *problem) skip() int {
	return int(math.Log(1-pr.rng.Float64()) / logTenth)
}

// insert adds c workers of job j on node i to ind, keeping the entries
// sorted; a node the job is on already keeps its count.
func (pr *problem) insert(ind *individual, j int, i, c int32) {
	o, n := pr.off[j], int(ind.n[j])
	k := 0
	for k < n && ind.node[o+k] < i {
		k++
	}
	if k < n && ind.node[o+k] == i {
		return
	}
	copy(ind.node[o+k+1:o+n+1], ind.node[o+k:o+n])
	copy(ind.count[o+k+1:o+n+1], ind.count[o+k:o+n])
	ind.node[o+k], ind.count[o+k] = i, c
	ind.n[j]++
}

// repair is pollux.py Problem._repair: at most one distributed job on a
// node (the first in order keeps it); at most maxR workers a job, cut on
// its nodes in random order; node capacity taken by jobs in order, each
// entry cut to what fits; and a job below its minimum gets nothing, so
// that the capacity goes to the jobs after it.
func (pr *problem) repair(ind *individual) {
	for i := range pr.owner {
		pr.owner[i] = -1
	}
	for j := range pr.jobs {
		if ind.n[j] <= 1 {
			continue
		}
		o := pr.off[j]
		for e := range int(ind.n[j]) {
			i := ind.node[o+e]
			switch pr.owner[i] {
			case -1:
				pr.owner[i] = int32(j)
			case int32(j):
			default:
				ind.count[o+e] = 0
			}
		}
		pr.compact(ind, j)
	}
	copy(pr.free, pr.capacity)
	for j, jb := range pr.jobs {
		o, n := pr.off[j], int(ind.n[j])
		if n == 0 {
			continue
		}
		if r := pr.replicas(ind, j); r > jb.maxR {
			perm := pr.perm[:n]
			for e := range perm {
				perm[e] = e
			}
			pr.rng.Shuffle(n, func(a, b int) { perm[a], perm[b] = perm[b], perm[a] })
			left := int32(jb.maxR)
			for _, e := range perm {
				c := min(ind.count[o+e], left)
				ind.count[o+e] = c
				left -= c
			}
		}
		total := 0
		for e := range n {
			row := int(ind.node[o+e]) * pr.k
			c := int(min(ind.count[o+e], jb.maxRep(ind.node[o+e])))
			for d, v := range jb.demand {
				if v > 0 {
					c = min(c, pr.free[row+d]/v)
				}
			}
			ind.count[o+e] = int32(c)
			total += c
		}
		if total < jb.minW {
			ind.n[j] = 0
			continue
		}
		for e := range n {
			row := int(ind.node[o+e]) * pr.k
			for d, v := range jb.demand {
				pr.free[row+d] -= int(ind.count[o+e]) * v
			}
		}
		pr.compact(ind, j)
	}
}

// search runs the genetic algorithm and returns the best allocation
// found: from the current allocation and the greedy seed, each
// generation breeds a population's worth of offspring from parents
// chosen by binary tournament (single-point crossover over jobs with
// probability 0.9, then mutation and repair), and the best of parents
// and offspring survive.
func (pr *problem) search() *individual {
	size, generations := pr.opts.sizes(len(pr.jobs))
	pop := make([]*individual, 0, 2*size)
	base := pr.newIndividual()
	for j := range pr.jobs {
		pr.setCurrent(base, j)
	}
	pr.repair(base)
	pr.evaluate(base)
	greedy := pr.greedy()
	pr.repair(greedy)
	pr.evaluate(greedy)
	pop = append(pop, base, greedy)
	for len(pop) < size {
		ind := pr.newIndividual()
		pr.copyJobs(ind, pop[len(pop)%2], 0, len(pr.jobs))
		pr.mutate(ind)
		pr.repair(ind)
		pr.evaluate(ind)
		pop = append(pop, ind)
	}
	byFit := func(a, b *individual) int { return cmp.Compare(b.fit, a.fit) }
	slices.SortStableFunc(pop, byFit)
	tournament := func() *individual {
		a, b := pop[pr.rng.IntN(size)], pop[pr.rng.IntN(size)]
		if b.fit > a.fit {
			return b
		}
		return a
	}
	jobs := len(pr.jobs)
	for range generations {
		for len(pop) < 2*size {
			a, b := tournament(), tournament()
			c1, c2 := pr.newIndividual(), pr.newIndividual()
			if pr.rng.Float64() < 0.9 && jobs > 0 {
				point := pr.rng.IntN(jobs)
				pr.copyJobs(c1, a, 0, point)
				pr.copyJobs(c1, b, point, jobs)
				pr.copyJobs(c2, b, 0, point)
				pr.copyJobs(c2, a, point, jobs)
			} else {
				pr.copyJobs(c1, a, 0, jobs)
				pr.copyJobs(c2, b, 0, jobs)
			}
			for _, c := range []*individual{c1, c2} {
				pr.mutate(c)
				pr.repair(c)
				pr.evaluate(c)
			}
			pop = append(pop, c1, c2)
		}
		slices.SortStableFunc(pop, byFit)
		for _, ind := range pop[size:] {
			pr.release(ind)
		}
		pop = pop[:size]
	}
	return pop[0]
}

// greedy is a seed for the search: from nothing, one worker at a time to
// the job whose term of the power mean improves most per unit of its
// dominant share, while the cluster's aggregate capacity lasts, each job
// on as few nodes as hold it; then packed onto nodes, largest job first.
func (pr *problem) greedy() *individual {
	jobs := len(pr.jobs)
	r := make([]int, jobs)
	perNode := make([]int, jobs)
	left := make([]int, pr.k)
	for i := range pr.n {
		for d := range pr.k {
			left[d] += pr.capacity[i*pr.k+d]
		}
	}
	take := func(j, n int) bool {
		for d, v := range pr.jobs[j].demand {
			if left[d] < n*v {
				return false
			}
		}
		for d, v := range pr.jobs[j].demand {
			left[d] -= n * v
		}
		r[j] += n
		return true
	}
	nodesFor := func(j, replicas int) int {
		return min(max((replicas+perNode[j]-1)/max(perNode[j], 1), 1), pr.opts.MaxNodes)
	}
	gain := make([]float64, jobs)
	update := func(j int) {
		jb := pr.jobs[j]
		next := r[j] + 1
		now := pr.term(pr.speedup(jb, nodesFor(j, r[j]), r[j]))
		then := pr.term(pr.speedup(jb, nodesFor(j, next), next))
		d := then - now
		if pr.p < 0 {
			d = -d
		}
		gain[j] = jb.weight * d / jb.share
	}
	h := pq.Heap[int]{Less: func(a, b int) bool { return gain[a] > gain[b] || gain[a] == gain[b] && a < b }}
	for j, jb := range pr.jobs {
		for _, i := range jb.feasible {
			perNode[j] = max(perNode[j], int(jb.maxRep(i)))
		}
		if perNode[j] == 0 || !take(j, jb.minW) {
			continue
		}
		update(j)
		h.Push(j)
	}
	for h.Len() > 0 {
		j := h.Pop()
		if r[j] >= pr.jobs[j].maxR || gain[j] <= 0 || !take(j, 1) {
			continue
		}
		update(j)
		h.Push(j)
	}

	// Pack: largest first, each on the nodes with the most room for it.
	ind := pr.newIndividual()
	clear(ind.n)
	order := make([]int, jobs)
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(r[b], r[a]) })
	clear(pr.used)
	room := func(jb *job, i int32) int {
		m := int(jb.maxRep(i))
		row := int(i) * pr.k
		for d, v := range jb.demand {
			if v > 0 {
				m = min(m, (pr.capacity[row+d]-pr.used[row+d])/v)
			}
		}
		return m
	}
	cand := make([]int32, 0, pr.n)
	for _, j := range order {
		jb := pr.jobs[j]
		want := r[j]
		if want == 0 {
			continue
		}
		cand = append(cand[:0], jb.feasible...)
		slices.SortStableFunc(cand, func(a, b int32) int { return cmp.Compare(room(jb, b), room(jb, a)) })
		for _, i := range cand {
			if want == 0 || int(ind.n[j]) == pr.width(j) {
				break
			}
			c := min(room(jb, i), want)
			if c <= 0 {
				break
			}
			pr.insert(ind, j, i, int32(c))
			row := int(i) * pr.k
			for d, v := range jb.demand {
				pr.used[row+d] += c * v
			}
			want -= c
		}
	}
	return ind
}
