// Package experiment holds each seed paper's evaluation as a named,
// versioned experiment: the workload, the cluster, the baselines, the
// seeds and the numbers the paper reports, run through the server's own
// loop on the simulated cluster (simulate.Run). `caravan sim -experiment
// NAME` runs one and prints its metrics beside the paper's; `make
// experiments` runs them all; `make test` runs each one's short version
// and checks the direction of every metric (TestExperiments_Short).
//
// Each paper's experiment is in a file of its own, registered in init.
package experiment

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/caravan-sched/caravan/simulate"
)

// Experiment is one paper's evaluation.
type Experiment struct {
	// Name is what `caravan sim -experiment` takes, the paper and its
	// venue: "optimus-eurosys18".
	Name string
	// Version counts changes of the set-up: results of two versions do
	// not compare.
	Version int
	// Paper cites the evaluation: "Optimus (EuroSys'18) §6, Figure 11".
	Paper string
	// About says the set-up in a few sentences, and where it differs from
	// the paper's.
	About string
	// Seeds are the seeds every run runs at; a metric is the mean of its
	// values over them. The short version runs the first.
	Seeds []uint64
	Runs  []Run
	// Metrics are the results the paper reports, computed from the runs.
	Metrics []Metric
	// Tables, when set, adds tables of its own after the metrics, such
	// as a paper's table laid out as the paper lays it out; nil for none.
	Tables func(o *Outcome) []Table
	// Against names what the metrics are compared with in the tables,
	// "" for "paper": "goal" for an issue's targets.
	Against string
}

// Table is one of an experiment's own tables: a title and its rows, the
// first the header.
type Table struct {
	Title string
	Rows  [][]string
}

// Run is one `caravan sim` invocation of an experiment, at each seed.
type Run struct {
	// Name is the key metrics refer to it by.
	Name string
	// Workload, Cluster and Policies are as `caravan sim` takes them;
	// Cluster "" is 16x4.
	Workload string
	Cluster  string
	Policies []string
	// Interval is the time between rounds, 0 for 60 s; RestartPenalty
	// the progress a restart costs, 0 for 30 s (NoPenalty for none).
	Interval       time.Duration
	RestartPenalty time.Duration
	// Assume names the simulator's assumptions, "" for caravan's.
	Assume string
	// Short is the workload of the short version, which must take
	// seconds; "" runs Workload. ShortLimit > 0 keeps only the short
	// version's first ShortLimit jobs.
	Short      string
	ShortLimit int
	// Queues, when set, names the queues of the workload's tenants the
	// run's server holds before any job (a simulate.QueueVariants name,
	// built by simulate.TenantQueues); "" for none.
	Queues string
}

// NoPenalty is a Run's RestartPenalty for restarts that cost nothing.
const NoPenalty time.Duration = -1

// Metric is one number the paper reports.
type Metric struct {
	// Name says what is measured, against what: "avg JCT speed-up,
	// optimus over drf".
	Name string
	// Paper is the paper's number, in Unit.
	Paper float64
	// Unit is "×" (a ratio, neutral at 1), "%" (a change in percent or a
	// share, neutral at 0) or "" (neutral at 0).
	Unit string
	// Higher says a higher value is better.
	Higher bool
	// Value computes the metric from one seed's results.
	Value func(s Seed) (float64, error)
	// Direction is the side of the neutral value the short version must
	// show: +1 above, -1 below, 0 the paper's side. It differs from the
	// paper's only where the full run misses the paper's direction, which
	// the algorithm's package README explains.
	Direction int
	// Neutral, when set, replaces the unit's neutral value: a share
	// whose paper number is 93% might compare to 50%.
	Neutral *float64
	// Level marks a level the paper reports, such as a utilisation,
	// rather than a comparison: it has no neutral value, so the short
	// version checks no direction; Met still compares it with the
	// paper's.
	Level bool
	// Within, when positive, makes Met two-sided: the value must lie
	// within this fraction of the paper's number either way, as a
	// fidelity target does ("within 15% of 0.7 h").
	Within float64
	// Target marks a number the paper does not report but Caravan aims
	// at, such as beating the paper's best: Met means at least as good
	// as Paper, with no tolerance. The short version, too small to show
	// it, checks no direction.
	Target bool
}

// neutral is the value of no effect m's direction is taken against.
func (m *Metric) neutral() float64 {
	switch {
	case m.Neutral != nil:
		return *m.Neutral
	case m.Unit == "×":
		return 1
	}
	return 0
}

// direction is the side of the neutral value the short version must
// show.
func (m *Metric) direction() int {
	if m.Direction != 0 {
		return m.Direction
	}
	return sign(m.Paper - m.neutral())
}

// Met says whether here reaches the paper's number: at least as good, or
// within a tenth of the paper's distance from the neutral value (of the
// paper's number, for a level); with Within, within that fraction of the
// paper's number either way.
func (m *Metric) Met(here float64) bool {
	switch {
	case m.Target && m.Higher:
		return here > m.Paper
	case m.Target:
		return here < m.Paper
	}
	if m.Within > 0 {
		return math.Abs(here-m.Paper) <= m.Within*math.Abs(m.Paper)
	}
	tol := 0.1 * math.Abs(m.Paper-m.neutral())
	if m.Level {
		tol = 0.1 * math.Abs(m.Paper)
	}
	if m.Higher {
		return here >= m.Paper-tol
	}
	return here <= m.Paper+tol
}

func sign(v float64) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

var registry = map[string]*Experiment{}

// Register adds e to the experiments `caravan sim -experiment` knows; a
// name registered twice panics.
func Register(e *Experiment) {
	if _, dup := registry[e.Name]; dup {
		panic("experiment " + e.Name + " registered twice")
	}
	registry[e.Name] = e
}

// Get returns the experiment of that name.
func Get(name string) (*Experiment, bool) {
	e, ok := registry[name]
	return e, ok
}

// All returns every experiment, by name.
func All() []*Experiment {
	var out []*Experiment
	for _, e := range registry {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *Experiment) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Seed is one seed's results of every run of an experiment.
type Seed struct {
	Seed uint64
	// Results holds each run's results by run and policy name (as
	// simulate.PolicySpec.String writes it).
	Results map[string]map[string]*simulate.Result
}

// Result returns run's result of policy.
func (s Seed) Result(run, policy string) (*simulate.Result, error) {
	r, ok := s.Results[run][policy]
	if !ok {
		return nil, fmt.Errorf("seed %d: no result of policy %q in run %q", s.Seed, policy, run)
	}
	return r, nil
}

// Measure picks a Summary's field for Speedup and Change.
type Measure func(simulate.Summary) float64

// JCT and Makespan are the measures papers report most.
var (
	JCT      Measure = func(s simulate.Summary) float64 { return s.AvgJCT }
	Makespan Measure = func(s simulate.Summary) float64 { return s.Makespan }
)

// Field is a metric's Value: f of policy's summary in run.
func Field(run, policy string, f Measure) func(Seed) (float64, error) {
	return func(s Seed) (float64, error) {
		r, err := s.Result(run, policy)
		if err != nil {
			return 0, err
		}
		return f(r.Summary), nil
	}
}

// Speedup is a metric's Value: baseline's measure over policy's, the
// speed-up of policy where the measure is a time (unit ×).
func Speedup(run, policy, baseline string, f Measure) func(Seed) (float64, error) {
	return SpeedupAcross(run, policy, run, baseline, f)
}

// SpeedupAcross is Speedup with policy's result from one run and
// baseline's from another (a policy run on a variant of the workload).
func SpeedupAcross(run, policy, baseRun, baseline string, f Measure) func(Seed) (float64, error) {
	return ratio(run, policy, baseRun, baseline, f, func(p, b float64) float64 { return b / p })
}

// Change is a metric's Value: the change of policy's measure against
// baseline's, in percent (unit %).
func Change(run, policy, baseline string, f Measure) func(Seed) (float64, error) {
	return ratio(run, policy, run, baseline, f, func(p, b float64) float64 { return 100 * (p/b - 1) })
}

func ratio(run, policy, baseRun, baseline string, f Measure, g func(p, b float64) float64) func(Seed) (float64, error) {
	return func(s Seed) (float64, error) {
		p, err := s.Result(run, policy)
		if err != nil {
			return 0, err
		}
		b, err := s.Result(baseRun, baseline)
		if err != nil {
			return 0, err
		}
		pv, bv := f(p.Summary), f(b.Summary)
		if pv <= 0 || bv <= 0 {
			return 0, fmt.Errorf("seed %d: %s (run %q) measures %g and %s (run %q) %g; a ratio needs both positive", s.Seed, policy, run, pv, baseline, baseRun, bv)
		}
		return g(pv, bv), nil
	}
}
