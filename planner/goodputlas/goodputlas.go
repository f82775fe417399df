package goodputlas

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/pollux"
)

// Name is the algorithm's registry name.
const Name = "goodput-las"

// DefaultServiceScale is s₀, the attained service at which a job's weight
// has halved: four GPU-hours (measured against 15 min and 1 h, below
// in README.md).
const DefaultServiceScale = 4 * time.Hour

// GoodputLAS implements planner.Algorithm.
type GoodputLAS struct {
	scale float64 // s₀ in GPU-seconds
	// arrival keeps Pollux's arrival order in the repair (order =
	// "arrival") instead of attained service.
	arrival bool
	inner   *pollux.Pollux
}

var (
	_ planner.Algorithm    = (*GoodputLAS)(nil)
	_ planner.Describer    = (*GoodputLAS)(nil)
	_ planner.Configurable = (*GoodputLAS)(nil)
)

// New returns goodput-las with its defaults.
func New() planner.Algorithm {
	g := &GoodputLAS{scale: DefaultServiceScale.Seconds()}
	g.inner = pollux.NewWithOptions(g.options(false))
	return g
}

// options are Pollux's hooks for g, in arrival order or by service. The
// weight reads g.scale when it runs.
func (g *GoodputLAS) options(arrival bool) pollux.Options {
	o := pollux.Options{Weight: g.weight, Order: byService}
	if arrival {
		o.Order = nil
	}
	return o
}

// Name returns "goodput-las".
func (*GoodputLAS) Name() string { return Name }

// Capabilities: goodput-las reads the goodput models and the attained
// service, and chooses each job's batch size (planner.Describer).
func (*GoodputLAS) Capabilities() planner.Capabilities {
	return planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorAttainedService, planner.EstimatorGoodput}, ChoosesBatch: true}
}

// weight is s₀/(s₀ + a) for a job that has held a GPU-seconds.
func (g *GoodputLAS) weight(j *planner.Job) float64 {
	return g.scale / (g.scale + max(j.AttainedService, 0))
}

// byService orders jobs by attained service, least first.
func byService(a, b *planner.Job) int { return cmp.Compare(a.AttainedService, b.AttainedService) }

// SetConfig takes service_scale (a positive duration of GPU time, "4h"
// by default), order ("service", the default, or "arrival": the order in
// which jobs take capacity in the repair) and Pollux's options but fairness (population,
// generations, budget, restart_delay, max_nodes); unknown keys and bad values
// are errors, and then nothing changes.
func (g *GoodputLAS) SetConfig(options map[string]string) error {
	scale := DefaultServiceScale.Seconds()
	arrival := false
	rest := map[string]string{}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v := options[k]
		switch k {
		case "service_scale":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("service_scale = %q: must be a positive duration of GPU time such as \"1h\"", v))
			}
			scale = d.Seconds()
		case "order":
			switch v {
			case "service", "arrival":
				arrival = v == "arrival"
			default:
				errs = append(errs, fmt.Errorf("order = %q: must be \"service\" (least attained service first) or \"arrival\"", v))
			}
		case "fairness":
			errs = append(errs, fmt.Errorf("fairness = %q: %s keeps Pollux's p = -1; its weights set the priority", v, Name))
		default:
			rest[k] = v
		}
	}
	// The hooks are g's, so the new inner policy takes the new scale once
	// it is set below.
	inner := pollux.NewWithOptions(g.options(arrival))
	if err := inner.SetConfig(rest); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	g.scale, g.arrival, g.inner = scale, arrival, inner
	return nil
}

// Plan is Pollux's search with the weights and order above.
func (g *GoodputLAS) Plan(req *planner.Request) (*planner.Decision, error) {
	return g.inner.Plan(req)
}
