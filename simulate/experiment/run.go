package experiment

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/caravan-sched/caravan/queuespec"
	"github.com/caravan-sched/caravan/simulate"
	"github.com/caravan-sched/caravan/structs"
)

// Options configure Execute.
type Options struct {
	// Short runs the short version: each run's Short workload at the
	// first seed.
	Short bool
	// Out, when set, is the directory each run's results and plots are
	// written to, as Out/RUN/seed-N (simulate.WriteAll).
	Out string
	// Progress, when set, is told of each policy's run as it ends.
	Progress func(msg string)
}

// Outcome is what an experiment measured.
type Outcome struct {
	Experiment *Experiment
	Short      bool
	Seeds      []Seed
	// Values holds each metric's result, in the order of Metrics.
	Values []Value
	// Clusters describes each run's cluster, by run.
	Clusters map[string]string
	// Queues are the queues each run's server held (Run.Queues), by run;
	// a run without queues has none.
	Queues map[string][]*structs.Queue
	// Warnings name the policies that plan from what a run's workload
	// lacks (simulate.Fit), by run.
	Warnings []string
	// Wall is how long the runs took in real time.
	Wall time.Duration
}

// Value is one metric's result.
type Value struct {
	Metric *Metric
	// Mean is the mean over the seeds of PerSeed.
	Mean    float64
	PerSeed []float64
}

// Met says whether the value reaches the paper's.
func (v Value) Met() bool { return v.Metric.Met(v.Mean) }

// DirectionHolds says whether the value is on the side of the neutral
// value the metric expects (Metric.Direction); a level's and a target's
// always do.
func (v Value) DirectionHolds() bool {
	return v.Metric.Level || v.Metric.Target || sign(v.Mean-v.Metric.neutral()) == v.Metric.direction()
}

// Execute runs every run of e at each of its seeds, as many policies at
// once as there are CPUs, and computes its metrics.
func Execute(e *Experiment, opts Options) (*Outcome, error) {
	began := time.Now()
	seeds := e.Seeds
	if len(seeds) == 0 {
		return nil, fmt.Errorf("experiment %s has no seeds", e.Name)
	}
	if opts.Short {
		seeds = seeds[:1]
	}
	o := &Outcome{Experiment: e, Short: opts.Short, Clusters: map[string]string{}, Queues: map[string][]*structs.Queue{}}
	type task struct {
		run  Run
		seed int // index into seeds
		prep *simulate.Prepared
	}
	var tasks []*task
	for _, r := range e.Runs {
		for i, seed := range seeds {
			s := simulate.Setup{
				Workload: r.Workload, Cluster: cmp.Or(r.Cluster, "16x4"), Policies: r.Policies, Seed: seed,
				Interval: cmp.Or(r.Interval, time.Minute), RestartPenalty: cmp.Or(r.RestartPenalty, 30*time.Second),
				Assume: cmp.Or(r.Assume, simulate.AssumeCaravan),
			}
			if s.RestartPenalty == NoPenalty {
				s.RestartPenalty = 0
			}
			if opts.Short {
				s.Workload, s.Limit = cmp.Or(r.Short, r.Workload), r.ShortLimit
			}
			p, err := simulate.Prepare(s)
			if err != nil {
				return nil, fmt.Errorf("experiment %s, run %s, seed %d: %w", e.Name, r.Name, seed, err)
			}
			o.Clusters[r.Name] = p.Cluster
			if r.Queues != "" {
				if p.Options.Queues, err = simulate.TenantQueues(p.Workload, p.TotalGPUs(), r.Queues); err != nil {
					return nil, fmt.Errorf("experiment %s, run %s, seed %d: %w", e.Name, r.Name, seed, err)
				}
				o.Queues[r.Name] = p.Options.Queues
			}
			if i == 0 {
				for _, w := range p.Warnings {
					o.Warnings = append(o.Warnings, fmt.Sprintf("run %s: %s", r.Name, w))
				}
			}
			tasks = append(tasks, &task{run: r, seed: i, prep: p})
		}
	}
	// Every policy of every run and seed at once, as many as there are
	// CPUs.
	batches := make([]simulate.Batch, len(tasks))
	for i, t := range tasks {
		batches[i] = simulate.Batch{Workload: t.prep.Workload, Specs: t.prep.Specs, Options: t.prep.Options}
	}
	var done func(i int, r *simulate.Result)
	if opts.Progress != nil {
		done = func(i int, r *simulate.Result) {
			t := tasks[i]
			opts.Progress(fmt.Sprintf("%s/%s seed %d: %s done in %s", e.Name, t.run.Name, seeds[t.seed], r.Policy, r.Wall.Round(time.Millisecond)))
		}
	}
	results, err := simulate.RunBatches(batches, nil, done)
	if err != nil {
		return nil, fmt.Errorf("experiment %s: %w", e.Name, err)
	}
	for _, seed := range seeds {
		o.Seeds = append(o.Seeds, Seed{Seed: seed, Results: map[string]map[string]*simulate.Result{}})
	}
	for i, t := range tasks {
		byPolicy := map[string]*simulate.Result{}
		for _, r := range results[i] {
			byPolicy[r.Policy] = r
		}
		o.Seeds[t.seed].Results[t.run.Name] = byPolicy
		if opts.Out != "" {
			dir := filepath.Join(opts.Out, t.run.Name, fmt.Sprintf("seed-%d", seeds[t.seed]))
			report := simulate.NewReport(t.run.Workload, t.prep.Cluster, seeds[t.seed], results[i])
			if err := simulate.WriteAll(dir, report, results[i]); err != nil {
				return nil, fmt.Errorf("writing %s: %w", dir, err)
			}
			if len(t.prep.Options.Queues) > 0 {
				if err := writeQueues(filepath.Join(dir, "queues.hcl"), t.run, t.prep); err != nil {
					return nil, err
				}
			}
		}
	}
	for i := range e.Metrics {
		m := &e.Metrics[i]
		v := Value{Metric: m}
		for _, s := range o.Seeds {
			x, err := m.Value(s)
			if err != nil {
				return nil, fmt.Errorf("experiment %s, metric %q: %w", e.Name, m.Name, err)
			}
			v.PerSeed = append(v.PerSeed, x)
			v.Mean += x / float64(len(o.Seeds))
		}
		o.Values = append(o.Values, v)
	}
	o.Wall = time.Since(began)
	return o, nil
}

// writeQueues writes the queues a run's server held as a queue file
// (queuespec.Format), which `caravan sim -queues` takes. A run without
// queues (the variant "none") writes none: a queue file holds at least
// one queue, and `caravan sim` without -queues runs the same.
func writeQueues(path string, r Run, p *simulate.Prepared) error {
	head := fmt.Sprintf("# Queues %q of the tenants of %s on %d GPUs (simulate.TenantQueues).\n", r.Queues, p.Workload.Name, p.TotalGPUs())
	if err := os.WriteFile(path, append([]byte(head), queuespec.Format(p.Options.Queues)...), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
