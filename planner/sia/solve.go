package sia

import (
	"cmp"
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
// It is exact: a depth-first branch and bound over the jobs, bounded by
// the Lagrangian relaxation of the capacity constraints, whose
// multipliers (one per GPU type) are set at the root by a subgradient
// search. Any non-negative multipliers give a valid bound, so the search
// proves optimality whatever they are; good ones only make it shorter. It
// returns each job's chosen cfg (-1 for none) and whether the search
// finished within nodeLimit nodes (the selection is then optimal).
//
// It is deterministic and allocates O(jobs + options).
func solve(jobs [][]option, capacity []int, nodeLimit int) (choice []int, optimal bool) {
	s := newSearch(jobs, capacity)
	s.greedy()
	s.multipliers()
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
	return choice, s.nodes < s.limit
}

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
	nodes      int
	limit      int
}

func newSearch(jobs [][]option, capacity []int) *search {
	s := &search{
		opts: make([][]option, len(jobs)), capacity: capacity, free: slices.Clone(capacity),
		mu: make([]float64, len(capacity)), perm: make([]int, len(jobs)),
		pick: make([]int, len(jobs)), best: make([]int, len(jobs)),
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
// Lagrangian dual with Polyak steps towards the greedy incumbent, keeping
// the multipliers of the lowest bound.
func (s *search) multipliers() {
	sub := make([]float64, len(s.capacity))
	bestMu := slices.Clone(s.mu)
	bestBound := s.bound(sub)
	for range 200 {
		norm := 0.0
		for _, g := range sub {
			norm += g * g
		}
		gap := bestBound - s.bestValue
		if norm == 0 || gap <= tolerance {
			break
		}
		step := gap / norm
		for t := range s.mu {
			s.mu[t] = max(0, s.mu[t]-step*sub[t])
		}
		if b := s.bound(sub); b < bestBound {
			bestBound = b
			copy(bestMu, s.mu)
		}
	}
	copy(s.mu, bestMu)
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
	s.pick[k] = -1
	s.dfs(k+1, value)
}
