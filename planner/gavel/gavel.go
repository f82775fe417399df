package gavel

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// Name is the algorithm's registry name.
const Name = "gavel"

// DefaultRound is the round Sia's evaluation runs Gavel at (§4.2: 360 s;
// run_experiment.sh: --interval=360).
const DefaultRound = 360 * time.Second

// Gavel implements planner.Algorithm. Unlike most of Caravan's
// algorithms it keeps state between rounds: the time each job has run on
// each GPU type (see the package doc). It is not safe for concurrent
// use.
type Gavel struct {
	// round is Options' round in seconds.
	round float64
	// received is the time each active job has run on each GPU type, in
	// seconds, starting at half a round (gavel.py add_jobs: _job_time).
	received map[structs.JobKey]map[string]float64
	// typeTime sums, per GPU type, the starting credits of every job
	// ever seen and the time jobs ran there (gavel.py _cluster_time).
	typeTime map[string]float64
	// last is the previous request's Now; 0 before the first.
	last int64
}

var (
	_ planner.Algorithm    = (*Gavel)(nil)
	_ planner.Describer    = (*Gavel)(nil)
	_ planner.Configurable = (*Gavel)(nil)
)

// New returns Gavel with DefaultRound.
func New() planner.Algorithm { return newGavel(DefaultRound) }

func newGavel(round time.Duration) *Gavel {
	return &Gavel{round: round.Seconds(), received: map[structs.JobKey]map[string]float64{}, typeTime: map[string]float64{}}
}

// Name returns "gavel".
func (*Gavel) Name() string { return Name }

// Capabilities: Gavel runs every job at its fixed request, on the GPU
// type its throughput model there favours (planner.Describer); it plans
// from a job's throughput on every GPU type (Job.PerfByType), so the
// server profiles new jobs on each.
func (*Gavel) Capabilities() planner.Capabilities {
	return planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorGoodput}, FixedSize: true, GPUTypes: true}
}

// SetConfig takes round, a positive duration ("360s"): the length of
// Gavel's rounds it assumes, which sets only the credit a new job starts
// with on every GPU type (half a round). The server's rounds are its
// scheduler block's interval; Sia's evaluation sets both to 360 s.
// Unknown keys and bad values are errors, and then nothing changes; a key
// left out takes its default. Setting options forgets the time jobs have
// received.
func (g *Gavel) SetConfig(options map[string]string) error {
	round := DefaultRound
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v := options[k]
		switch k {
		case "round":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("round = %q: must be a positive duration such as \"360s\"", v))
			}
			round = d
		default:
			errs = append(errs, fmt.Errorf("unknown option %q; %s takes round", k, Name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	*g = *newGavel(round)
	return nil
}

// Plan credits the time jobs ran since the previous request, solves the
// max-sum-throughput program, turns its time fractions into priorities,
// and runs the jobs of highest priority that fit, each on one GPU type
// (see the package doc).
func (g *Gavel) Plan(req *planner.Request) (*planner.Decision, error) {
	r := newRound(req)
	g.account(req, r)
	x, err := solve(r)
	if err != nil {
		return nil, fmt.Errorf("gavel: %w", err)
	}
	return &planner.Decision{Placements: r.schedule(x, g.priorities(r, x))}, nil
}

// account brings the time each job received up to date (gavel.py add_jobs
// and the end of optimize): a job seen for the first time, or a GPU type
// new to a job, starts at half a round there, which the type's total
// takes too; each job that ran since the previous request is credited the
// time since then on the GPU type it ran on, as is that type's total.
// What ran is read from the jobs' current placements, not from the
// previous decision. Jobs absent from the request are forgotten: the
// request lists every active job.
func (g *Gavel) account(req *planner.Request, r *round) {
	dt := 0.0
	if g.last > 0 && req.Now > g.last {
		dt = float64(req.Now-g.last) / 1e9
	}
	g.last = req.Now
	active := make(map[structs.JobKey]bool, len(r.jobs))
	for _, j := range r.jobs {
		k := j.view.Job.Key()
		active[k] = true
		got := g.received[k]
		if got == nil {
			got = map[string]float64{}
			g.received[k] = got
		}
		for _, t := range r.types {
			if _, ok := got[t.name]; !ok {
				got[t.name] = g.round / 2
				g.typeTime[t.name] += g.round / 2
			}
		}
		if t, ok := r.ranOn(j.view.Current); ok && dt > 0 {
			got[t] += dt
			g.typeTime[t] += dt
		}
	}
	for k := range g.received {
		if !active[k] {
			delete(g.received, k)
		}
	}
}

// priorities returns each pair's priority (gavel.py update_priorities):
// its share of the job's time x over the share of the type's time the job
// has received; 0 where x is 0.
func (g *Gavel) priorities(r *round, x []float64) []float64 {
	prio := make([]float64, len(r.pairs))
	for p, pr := range r.pairs {
		if x[p] == 0 {
			continue
		}
		t := r.types[pr.typ].name
		total := g.typeTime[t]
		if total <= 0 {
			prio[p] = x[p] * 1e9 // gavel.py: a type no job has time on
			continue
		}
		prio[p] = x[p] / (g.received[r.jobs[pr.job].view.Job.Key()][t] / total)
	}
	return prio
}
