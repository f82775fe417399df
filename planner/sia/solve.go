package sia

import (
	"cmp"
	"math"
	"slices"
)

// option is one configuration a job may take in the selection problem: the
// GPUs it holds of one type and what choosing it is worth.
type option struct {
	typ   int // index of the GPU type
	gpus  int
	value float64
	// cfg is the configuration's index in its job's list, returned by
	// solve.
	cfg int
}

// DefaultNodeLimit bounds the branch-and-bound nodes one solve visits.
// Sia's instances (tens to thousands of jobs, a few dozen configurations
// each, one capacity per GPU type) close in a few thousand nodes; an
// instance that reaches the limit keeps the best selection found, which
// Plan reports as not proven optimal.
const DefaultNodeLimit = 1 << 20

// tolerance is the gain below which a branch cannot improve the
// incumbent: values are sums of goodputs of order one.
const tolerance = 1e-9

// solve selects at most one option per job, keeping the GPUs chosen of
// each type within capacity, to maximise the sum of the chosen values: the
// binary integer program of Sia's Eq. (1) with its two constraints (§3.3),
// once the objective is written as a value per (job, configuration).
// Options of value ≤ 0 are never worth choosing and are ignored.
//
// It is exact. The Lagrangian relaxation of the capacity constraints (one
// multiplier per GPU type, set by a subgradient search) bounds the
// optimum; reduced-cost fixing then drops every choice that cannot beat
// the best selection found so far, which leaves most jobs a single choice.
// The jobs left undecided are solved by dynamic programming over the GPUs
// of each type they may use; when that table would be too large, by a
// depth-first branch and bound under the same bound, which stops after
// nodeLimit nodes. It returns each job's chosen cfg (-1 for none) and
// whether the selection is proven optimal (false only when the branch and
// bound stopped at its limit).
//
// It is deterministic and allocates O(jobs + options), plus the table.
func solve(jobs [][]option, capacity []int, nodeLimit int) (choice []int, optimal bool) {
	choice, optimal, _ = solveCounting(jobs, capacity, nodeLimit)
	return choice, optimal
}

// solveCounting is solve, also returning the nodes the search visited.
func solveCounting(jobs [][]option, capacity []int, nodeLimit int) (choice []int, optimal bool, nodes int) {
	s := newSearch(jobs, capacity)
	s.greedy()
	s.multipliers()
	s.fix()
	if choice, ok := s.dp(); ok {
		return choice, true, 0
	}
	s.order()
	s.limit = nodeLimit
	s.dfs(0, 0)
	choice = make([]int, len(jobs))
	for i := range choice {
		choice[i] = -1
	}
	for k, o := range s.best {
		if o >= 0 {
			choice[s.perm[k]] = s.opts[s.perm[k]][o].cfg
		}
	}
	return choice, s.nodes < s.limit, s.nodes
}

// dpLimit bounds the table dp fills: states times undecided jobs (16 Mi
// entries, 48 MiB). A variable so that tests can send the search down
// the branch and bound.
var dpLimit = 1 << 24

// dp solves what fix leaves undecided by dynamic programming over the GPUs
// used of each type: the jobs fix left one choice are set, and the others
// choose within the capacity those leave. It returns each job's cfg and
// true, or false when the table would exceed dpLimit. Run after fix,
// before order.
func (s *search) dp() ([]int, bool) {
	choice := make([]int, len(s.opts))
	res := slices.Clone(s.capacity)
	var open []int
	for j, os := range s.opts {
		choice[j] = -1
		if s.taken[j] && len(os) == 1 {
			choice[j] = os[0].cfg
			res[os[0].typ] -= os[0].gpus
			continue
		}
		if len(os) > 0 {
			open = append(open, j)
		}
	}
	for _, r := range res {
		if r < 0 {
			// The choices fix forces do not fit together: no selection
			// beats the incumbent.
			return s.incumbent(), true
		}
	}
	stride := make([]int, len(res))
	states := 1
	for t, r := range res {
		stride[t] = states
		states *= r + 1
		if states*max(len(open), 1) > dpLimit {
			return nil, false
		}
	}
	// f[state] is the best value of the jobs so far using state's GPUs;
	// from[k][state] the option job open[k] took to reach it (+1; 0 for
	// none), -1 when unreachable.
	f := make([]float64, states)
	for i := range f {
		f[i] = math.Inf(-1)
	}
	f[0] = 0
	from := make([][]int16, len(open))
	used := make([]int, len(res))
	for k, j := range open {
		g := make([]float64, states)
		for i := range g {
			g[i] = math.Inf(-1)
		}
		fr := make([]int16, states)
		for i := range fr {
			fr[i] = -1
		}
		for st := range states {
			if math.IsInf(f[st], -1) {
				continue
			}
			rem := st
			for t := len(res) - 1; t >= 0; t-- {
				used[t] = rem / stride[t]
				rem %= stride[t]
			}
			if !s.taken[j] && f[st] > g[st] {
				g[st], fr[st] = f[st], 0
			}
			for o, opt := range s.opts[j] {
				if used[opt.typ]+opt.gpus > res[opt.typ] {
					continue
				}
				ns := st + opt.gpus*stride[opt.typ]
				if v := f[st] + opt.value; v > g[ns] {
					g[ns], fr[ns] = v, int16(o+1)
				}
			}
		}
		f, from[k] = g, fr
	}
	best := 0
	for st := range states {
		if f[st] > f[best] {
			best = st
		}
	}
	if math.IsInf(f[best], -1) {
		return s.incumbent(), true // forced jobs cannot all fit: as above
	}
	st := best
	for k := len(open) - 1; k >= 0; k-- {
		j, o := open[k], from[k][st]
		if o > 0 {
			opt := s.opts[j][o-1]
			choice[j] = opt.cfg
			st -= opt.gpus * stride[opt.typ]
		}
	}
	total := 0.0
	for j, c := range choice {
		for _, o := range s.opts[j] {
			if o.cfg == c {
				total += o.value
			}
		}
	}
	if total < s.bestValue-tolerance {
		return s.incumbent(), true
	}
	return choice, true
}

// incumbent returns the incumbent's cfg per job; before order, best holds
// them by job.
func (s *search) incumbent() []int { return slices.Clone(s.best) }

// search is one solve's state. Jobs are visited in the order perm; opts[j]
// are job j's options worth choosing, best reduced value first.
type search struct {
	opts     [][]option
	capacity []int
	free     []int
	mu       []float64
	perm     []int
	// suffix[k] is the sum over jobs perm[k:] of their best reduced value
	// (at least 0), the Lagrangian bound of those jobs but for the
	// multipliers' capacity term.
	suffix []float64
	// pick is the option each job takes on the current path (-1 none),
	// best the incumbent's, indexed by position in perm.
	pick, best []int
	bestValue  float64
	// taken[j] is set when job j must take one of its options: leaving
	// it out cannot beat the incumbent (fix).
	taken []bool
	nodes int
	limit int
}

func newSearch(jobs [][]option, capacity []int) *search {
	s := &search{
		opts: make([][]option, len(jobs)), capacity: capacity, free: slices.Clone(capacity),
		mu: make([]float64, len(capacity)), perm: make([]int, len(jobs)),
		pick: make([]int, len(jobs)), best: make([]int, len(jobs)), taken: make([]bool, len(jobs)),
	}
	for j, os := range jobs {
		for _, o := range os {
			if o.value > 0 && o.gpus <= capacity[o.typ] {
				s.opts[j] = append(s.opts[j], o)
			}
		}
		s.perm[j] = j
		s.best[j] = -1
	}
	return s
}

// reduced is an option's value less the multipliers' price of its GPUs.
func (s *search) reduced(o option) float64 { return o.value - s.mu[o.typ]*float64(o.gpus) }

// bestReduced is the largest reduced value of job j's options, at least
// 0 (taking none).
func (s *search) bestReduced(j int) float64 {
	b := 0.0
	for _, o := range s.opts[j] {
		b = max(b, s.reduced(o))
	}
	return b
}

// bound is the Lagrangian bound of the whole problem at the multipliers,
// with a subgradient: capacity less the GPUs each job's best option takes.
func (s *search) bound(sub []float64) float64 {
	total := 0.0
	for t, c := range s.capacity {
		sub[t] = float64(c)
		total += s.mu[t] * float64(c)
	}
	for j := range s.opts {
		b, arg := 0.0, -1
		for k, o := range s.opts[j] {
			if r := s.reduced(o); r > b {
				b, arg = r, k
			}
		}
		total += b
		if arg >= 0 {
			o := s.opts[j][arg]
			sub[o.typ] -= float64(o.gpus)
		}
	}
	return total
}

// multipliers sets the multipliers by a subgradient search of the
// Lagrangian dual, keeping those of the lowest bound. Steps are Polyak's
// towards the incumbent, which a greedy selection at the current
// multipliers improves as they converge; the step's scale halves when
// the bound stalls.
func (s *search) multipliers() {
	sub := make([]float64, len(s.capacity))
	bestMu := slices.Clone(s.mu)
	bestBound := s.bound(sub)
	cur := bestBound
	theta, stall := 1.0, 0
	for iter := range 400 {
		if iter%10 == 0 {
			s.greedyReduced()
		}
		norm := 0.0
		for _, g := range sub {
			norm += g * g
		}
		if norm == 0 || bestBound-s.bestValue <= tolerance || theta < 1e-4 {
			break
		}
		step := theta * (cur - s.bestValue) / norm
		for t := range s.mu {
			s.mu[t] = max(0, s.mu[t]-step*sub[t])
		}
		cur = s.bound(sub)
		if cur < bestBound-tolerance {
			bestBound, stall = cur, 0
			copy(bestMu, s.mu)
		} else if stall++; stall >= 10 {
			theta, stall = theta/2, 0
		}
	}
	copy(s.mu, bestMu)
	s.greedyReduced()
}

// greedyReduced offers the incumbent a selection: jobs by their best
// reduced value, largest first, each taking the option of the largest
// reduced value that fits, then of the largest value.
func (s *search) greedyReduced() {
	perm := slices.Clone(s.perm)
	best := make([]float64, len(s.opts))
	for j := range s.opts {
		best[j] = s.bestReduced(j)
	}
	slices.SortStableFunc(perm, func(a, b int) int { return cmp.Compare(best[b], best[a]) })
	free := slices.Clone(s.capacity)
	pick := make([]int, len(s.opts))
	total := 0.0
	for _, j := range perm {
		arg := -1
		for k, o := range s.opts[j] {
			if o.gpus <= free[o.typ] && (arg < 0 || s.reduced(o) > s.reduced(s.opts[j][arg])) {
				arg = k
			}
		}
		pick[j] = -1
		if arg >= 0 {
			o := s.opts[j][arg]
			free[o.typ] -= o.gpus
			pick[j] = o.cfg
			total += o.value
		}
	}
	if total > s.bestValue+tolerance {
		s.bestValue = total
		copy(s.best, pick)
	}
}

// fix drops the choices that cannot be part of a selection better than
// the incumbent (reduced-cost fixing): forcing job j to a choice of
// reduced value r lowers the Lagrangian bound U by j's best reduced value
// less r, so a choice that lowers it to the incumbent or below is never
// needed. Taking no option is a choice of reduced value 0.
func (s *search) fix() {
	sub := make([]float64, len(s.capacity))
	gap := s.bound(sub) - s.bestValue
	for j := range s.opts {
		best := s.bestReduced(j)
		s.opts[j] = slices.DeleteFunc(s.opts[j], func(o option) bool {
			// The incumbent's own choice stays, so that it remains a
			// path of the search.
			return best-s.reduced(o) > gap+tolerance && o.cfg != s.best[j]
		})
		s.taken[s.perm[j]] = best > gap+tolerance && s.best[j] >= 0
	}
}

// order sorts each job's options by reduced value, best first, and the
// jobs by their best reduced value, largest first, so that the search
// meets good selections early; then it sums the suffix bounds.
func (s *search) order() {
	best := make([]float64, len(s.opts))
	for j := range s.opts {
		slices.SortStableFunc(s.opts[j], func(a, b option) int { return cmp.Compare(s.reduced(b), s.reduced(a)) })
		best[j] = s.bestReduced(j)
	}
	// The incumbent was found on the options' old order; map it by cfg.
	incumbent := make([]int, len(s.opts))
	for j := range s.opts {
		incumbent[j] = -1
	}
	for j, o := range s.best {
		if o >= 0 {
			incumbent[j] = s.best[j]
		}
	}
	slices.SortStableFunc(s.perm, func(a, b int) int { return cmp.Compare(best[b], best[a]) })
	s.suffix = make([]float64, len(s.perm)+1)
	for k := len(s.perm) - 1; k >= 0; k-- {
		s.suffix[k] = s.suffix[k+1] + best[s.perm[k]]
	}
	// Re-express the incumbent by position and option order.
	for k, j := range s.perm {
		s.best[k] = -1
		if c := incumbent[j]; c >= 0 {
			s.best[k] = slices.IndexFunc(s.opts[j], func(o option) bool { return o.cfg == c })
		}
	}
}

// greedy sets the incumbent: each job in turn takes its most valuable
// option that still fits. Before order, best is indexed by job and holds
// the chosen option's cfg.
func (s *search) greedy() {
	free := slices.Clone(s.capacity)
	for j, os := range s.opts {
		arg := -1
		for k, o := range os {
			if o.gpus <= free[o.typ] && (arg < 0 || o.value > os[arg].value) {
				arg = k
			}
		}
		s.best[j] = -1
		if arg >= 0 {
			o := os[arg]
			free[o.typ] -= o.gpus
			s.best[j] = o.cfg
			s.bestValue += o.value
		}
	}
}

// dfs extends the path at position k with value so far; it returns when
// the node limit is reached.
func (s *search) dfs(k int, value float64) {
	s.nodes++
	if value > s.bestValue+tolerance {
		s.bestValue = value
		copy(s.best[:k], s.pick[:k])
		for i := k; i < len(s.best); i++ {
			s.best[i] = -1
		}
	}
	if k == len(s.perm) || s.nodes >= s.limit {
		return
	}
	capTerm := 0.0
	for t, f := range s.free {
		capTerm += s.mu[t] * float64(f)
	}
	if value+s.suffix[k]+capTerm <= s.bestValue+tolerance {
		return // nothing below beats the incumbent
	}
	j := s.perm[k]
	for o, opt := range s.opts[j] {
		if opt.gpus > s.free[opt.typ] {
			continue
		}
		s.free[opt.typ] -= opt.gpus
		s.pick[k] = o
		s.dfs(k+1, value+opt.value)
		s.free[opt.typ] += opt.gpus
		if s.nodes >= s.limit {
			return
		}
	}
	if s.taken[j] {
		return
	}
	s.pick[k] = -1
	s.dfs(k+1, value)
}
