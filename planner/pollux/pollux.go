package pollux

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/caravan-sched/caravan/planner"
)

// Name is the algorithm's registry name.
const Name = "pollux"

// Options tune the policy; the zero value of a field takes its default,
// the artifact's value.
type Options struct {
	// Population and Generations size the genetic search (100 and 100).
	Population  int
	Generations int
	// Budget bounds the search's work per round: the job allocations it
	// mutates, repairs and evaluates, (population × (generations + 1)) ×
	// jobs (10⁷). Past it, population and generations shrink alike
	// (sizes). Caravan's bound, not the artifact's: the artifact's work
	// grows with the jobs, and the budget keeps a round of 10,000 jobs
	// near a second.
	Budget int
	// Fairness is the exponent p of the power mean of speed-ups (−1); 0
	// is the geometric mean. It must be at most 1.
	Fairness *float64
	// RestartDelay is the cost of a restart the penalty assumes (30 s).
	RestartDelay time.Duration
	// MaxNodes bounds the nodes a job spans (16).
	MaxNodes int
	// Weight, when not nil, weighs each job's term of the power mean
	// (1 without it, as Pollux does): a job of weight w counts as w jobs
	// of its speed-up. It must return a positive number and depend on the
	// request alone. Policies built on Pollux's search set it; SetConfig
	// leaves it.
	Weight func(*planner.Job) float64
	// Order, when not nil, orders the jobs before arrival order breaks
	// ties: earlier jobs take node capacity first in the search's repair
	// (arrival order without it). SetConfig leaves it.
	Order func(a, b *planner.Job) int
}

func (o Options) withDefaults() Options {
	if o.Population <= 0 {
		o.Population = 100
	}
	if o.Generations <= 0 {
		o.Generations = 100
	}
	if o.Fairness == nil {
		p := -1.0
		o.Fairness = &p
	}
	if o.RestartDelay <= 0 {
		o.RestartDelay = 30 * time.Second
	}
	if o.MaxNodes <= 0 {
		o.MaxNodes = 16
	}
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	return o
}

// DefaultBudget is Options.Budget's default: ten million job
// allocations, which the artifact's full search (100 generations of 100)
// stays within up to 990 jobs.
const DefaultBudget = 10_000_000

// sizes returns the population and generations of a search over jobs:
// Population and Generations, or, when their work would exceed the
// budget, both scaled by √(budget/work) so that population ×
// (generations + 1) × jobs stays within it, the population even, with at
// least 4 individuals (or Population, if fewer) and 1 generation, and
// never more generations than Generations.
func (o Options) sizes(jobs int) (population, generations int) {
	population, generations = o.Population, o.Generations
	work := float64(population) * float64(generations+1) * float64(max(jobs, 1))
	if work <= float64(o.Budget) {
		return population, generations
	}
	// Offspring come in pairs: an even population breeds as many as it
	// holds.
	f := math.Sqrt(float64(o.Budget) / work)
	population = max(int(float64(population)*f)&^1, min(4, population))
	generations = min(max(o.Budget/(population*max(jobs, 1))-1, 1), o.Generations)
	return population, generations
}

// Pollux implements planner.Algorithm.
type Pollux struct {
	opts Options
}

var (
	_ planner.Algorithm    = (*Pollux)(nil)
	_ planner.Describer    = (*Pollux)(nil)
	_ planner.Configurable = (*Pollux)(nil)
)

// New returns Pollux with the artifact's settings.
func New() planner.Algorithm { return NewWithOptions(Options{}) }

// NewWithOptions returns Pollux with opts.
func NewWithOptions(opts Options) *Pollux { return &Pollux{opts: opts.withDefaults()} }

// Name returns "pollux".
func (*Pollux) Name() string { return Name }

// Capabilities: Pollux reads the goodput models and chooses each job's
// batch size (planner.Describer).
func (*Pollux) Capabilities() planner.Capabilities {
	return planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorGoodput}, ChoosesBatch: true}
}

// SetConfig takes population, generations and budget (positive integers),
// fairness (a number at most 1), restart_delay (a positive duration) and
// max_nodes (a positive integer); unknown keys and bad values are errors,
// and then nothing changes. Keys left out take their defaults.
func (p *Pollux) SetConfig(options map[string]string) error {
	var opts Options
	var errs []error
	positive := func(k, v string) int {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s = %q: must be a positive integer", k, v))
		}
		return n
	}
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v := options[k]
		switch k {
		case "population":
			opts.Population = positive(k, v)
		case "generations":
			opts.Generations = positive(k, v)
		case "max_nodes":
			opts.MaxNodes = positive(k, v)
		case "budget":
			opts.Budget = positive(k, v)
		case "fairness":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f > 1 || math.IsNaN(f) || math.IsInf(f, 0) {
				errs = append(errs, fmt.Errorf("fairness = %q: must be a number at most 1 (-1 is Pollux's)", v))
			}
			opts.Fairness = &f
		case "restart_delay":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("restart_delay = %q: must be a positive duration such as \"30s\"", v))
			}
			opts.RestartDelay = d
		default:
			errs = append(errs, fmt.Errorf("unknown option %q; pollux takes population, generations, budget, fairness, restart_delay and max_nodes", k))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	opts.Weight, opts.Order = p.opts.Weight, p.opts.Order
	p.opts = opts.withDefaults()
	return nil
}

// Plan searches for the allocation with the largest power mean of
// speed-ups, places it, and gives each adaptive job the batch that
// maximises its goodput there. On a cluster of several GPU types it
// searches as if the GPUs were one type, then keeps each job on one
// (keepOneType), as Sia's evaluation runs Pollux.
func (p *Pollux) Plan(req *planner.Request) (*planner.Decision, error) {
	pr := newProblem(req, p.opts)
	best := pr.search()
	if pr.mixedTypes() {
		pr.keepOneType(best)
	}
	return &planner.Decision{Placements: pr.place(best)}, nil
}
