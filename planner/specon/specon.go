package specon

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// Name is the algorithm's registry name.
const Name = "specon"

// Defaults, from §VI: α = 0.01 and |t_m − t_{m−1}| = 30 s (§VI-B), weights
// w_pc = 2, w_wc = 1.5, w_cc = 1 (§VI-A2). DefaultBase is the base
// allocation: fifo runs every job at its fixed request and never moves it,
// as the paper's baseline (Kubernetes' default scheduler) does; base
// roundrobin also places the jobs as the paper's fixed initial placement
// does, in turn.
const (
	DefaultAlpha    = 0.01
	DefaultInterval = 30 * time.Second
	DefaultWPC      = 2.0
	DefaultWWC      = 1.5
	DefaultWCC      = 1.0
	DefaultBase     = "fifo"
)

// Bases looks up the factory of a base algorithm by its registry name; ok
// is false for a name that is not a base (unknown, or specon itself).
type Bases func(name string) (f planner.Factory, ok bool)

// Options tune SpeCon; New fills zero fields with the defaults.
type Options struct {
	// Base names the algorithm that sizes and first places the jobs.
	Base string
	// Alpha is Algorithm 1's categorization threshold on the relative
	// gain; Interval its categorization interval.
	Alpha    float64
	Interval time.Duration
	// WPC, WWC and WCC are Algorithm 2's weights, WPC > WWC > WCC > 0.
	WPC, WWC, WCC float64
	// NoRebalance turns Algorithm 3 off.
	NoRebalance bool
	// Line15PerNode reads line 15 of Algorithm 1, |PC| + |WC| > 1, over
	// the requesting job's node (|PC_wi| + |WC_wi|) instead of over the
	// cluster, as the listing writes it (no w_i subscript).
	Line15PerNode bool
}

// SpeCon implements planner.Algorithm. It is not safe for concurrent use.
type SpeCon struct {
	bases Bases
	opts  Options
	base  planner.Algorithm
}

var (
	_ planner.Algorithm    = (*SpeCon)(nil)
	_ planner.Configurable = (*SpeCon)(nil)
	_ planner.ModelDriven  = (*SpeCon)(nil)
	_ planner.Describer    = (*SpeCon)(nil)
)

// New returns SpeCon over the default base (fifo), looked up in bases.
// It panics when bases has no fifo, a wiring error of the registry.
func New(bases Bases) *SpeCon {
	s, err := NewWithOptions(bases, Options{})
	if err != nil {
		panic(fmt.Sprintf("specon: %v", err))
	}
	return s
}

// NewWithOptions returns SpeCon with opts, zero fields taking the
// defaults, or an error when the options are invalid or the base unknown.
func NewWithOptions(bases Bases, opts Options) (*SpeCon, error) {
	if opts.Base == "" {
		opts.Base = DefaultBase
	}
	if opts.Alpha == 0 {
		opts.Alpha = DefaultAlpha
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.WPC == 0 && opts.WWC == 0 && opts.WCC == 0 {
		opts.WPC, opts.WWC, opts.WCC = DefaultWPC, DefaultWWC, DefaultWCC
	}
	var errs []error
	if !(opts.Alpha > 0) {
		errs = append(errs, fmt.Errorf("alpha %v: must be positive", opts.Alpha))
	}
	if opts.Interval < 0 {
		errs = append(errs, fmt.Errorf("interval %v: must be positive", opts.Interval))
	}
	if !(opts.WPC > opts.WWC && opts.WWC > opts.WCC && opts.WCC > 0) {
		errs = append(errs, fmt.Errorf("weights %v, %v, %v: must keep w_pc > w_wc > w_cc > 0 (§V-B)", opts.WPC, opts.WWC, opts.WCC))
	}
	f, ok := bases(opts.Base)
	if !ok {
		errs = append(errs, fmt.Errorf("base %q: not a base algorithm", opts.Base))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &SpeCon{bases: bases, opts: opts, base: f()}, nil
}

// Name returns "specon".
func (*SpeCon) Name() string { return Name }

// Options returns the options in force.
func (s *SpeCon) Options() Options { return s.opts }

// SpeedModels reports whether the base sizes jobs from speed models, so
// that the server profiles new jobs when the base needs it
// (planner.ModelDriven).
func (s *SpeCon) SpeedModels() bool {
	m, ok := s.base.(planner.ModelDriven)
	return ok && m.SpeedModels()
}

// Capabilities are the base's, as it runs now under SpeCon's options,
// with the jobs' progress, which SpeCon categorizes them by: SpeCon only
// moves what the base decided, so it runs jobs at the sizes and batches
// the base chose (planner.Describer).
func (s *SpeCon) Capabilities() planner.Capabilities {
	c := planner.CapabilitiesOf(s.base)
	if !c.ReadsEstimator(planner.EstimatorProgress) {
		c.Reads = append(slices.Clone(c.Reads), planner.EstimatorProgress)
	}
	return c
}

// SetConfig sets base (a built-in algorithm's name other than specon),
// alpha (a positive number), interval (a positive duration such as
// "30s"), w_pc, w_wc and w_cc (numbers with w_pc > w_wc > w_cc > 0),
// rebalance ("true" or "false") and line15 ("cluster", the listing's
// reading of Algorithm 1 line 15, or "node"). Unknown keys and bad values are errors,
// and then nothing changes. Keys left out take their defaults
// (planner.Configurable). The base runs with its own defaults.
func (s *SpeCon) SetConfig(options map[string]string) error {
	var opts Options
	var errs []error
	num := func(k, v string) float64 {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) {
			errs = append(errs, fmt.Errorf("%s = %q: must be a positive number", k, v))
		}
		return f
	}
	weights := 0
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v := options[k]
		switch k {
		case "base":
			opts.Base = v
		case "alpha":
			opts.Alpha = num(k, v)
		case "interval":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("interval = %q: must be a positive duration such as \"30s\"", v))
			}
			opts.Interval = d
		case "w_pc":
			opts.WPC = num(k, v)
			weights++
		case "w_wc":
			opts.WWC = num(k, v)
			weights++
		case "w_cc":
			opts.WCC = num(k, v)
			weights++
		case "rebalance":
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("rebalance = %q: must be true or false", v))
			}
			opts.NoRebalance = !b
		case "line15":
			switch v {
			case "cluster":
			case "node":
				opts.Line15PerNode = true
			default:
				errs = append(errs, fmt.Errorf("line15 = %q: must be cluster or node", v))
			}
		default:
			errs = append(errs, fmt.Errorf("unknown option %q; %s takes base, alpha, interval, w_pc, w_wc, w_cc, rebalance and line15", k, Name))
		}
	}
	if weights != 0 && weights != 3 {
		errs = append(errs, errors.New("w_pc, w_wc and w_cc: set all three or none"))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	n, err := NewWithOptions(s.bases, opts)
	if err != nil {
		return err
	}
	*s = *n
	return nil
}

// Plan runs the base, then moves running jobs as Algorithms 2 and 3
// decide; see the package documentation. It is deterministic for the same
// request, whatever the order of its jobs.
func (s *SpeCon) Plan(req *planner.Request) (*planner.Decision, error) {
	dec, err := s.base.Plan(req)
	if err != nil {
		return nil, fmt.Errorf("specon: base %s: %w", s.opts.Base, err)
	}
	st, err := newState(req, dec, s.opts)
	if err != nil {
		return nil, err
	}
	st.schedule()
	if !s.opts.NoRebalance {
		st.rebalance()
	}
	out := st.placements()
	planner.SortPlacements(out)
	return &planner.Decision{Placements: out}, nil
}

// Reason markers. A job SpeCon has decided on (Algorithm 2 line 9, 15 or
// 20: c.migrated = True) carries, while it runs, a reason that starts with
// markPrefix and the time it was marked (t_cj of Algorithm 3), Unix
// nanoseconds; a job Algorithm 3 moved has rebalancedTag after it.
const (
	markPrefix    = "specon: converged at "
	rebalancedTag = ", rebalanced"
)

// mark is what a job's current reason says SpeCon decided about it.
type mark struct {
	migrated   bool
	since      int64
	rebalanced bool
}

// parseMark reads the mark of a job's current placement; a job that does
// not run, or whose reason has no mark, is unmarked.
func parseMark(cur *structs.Placement) mark {
	if cur == nil || cur.Paused() || !strings.HasPrefix(cur.Reason, markPrefix) {
		return mark{}
	}
	rest := cur.Reason[len(markPrefix):]
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end <= 0 {
		return mark{}
	}
	since, err := strconv.ParseInt(rest[:end], 10, 64)
	if err != nil {
		return mark{}
	}
	return mark{migrated: true, since: since, rebalanced: strings.HasPrefix(rest[end:], rebalancedTag)}
}

// reason renders a mark ahead of what was done.
func (m mark) reason(what string) string {
	r := markPrefix + strconv.FormatInt(m.since, 10)
	if m.rebalanced {
		r += rebalancedTag
	}
	return r + "; " + what
}
