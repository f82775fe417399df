package simulate

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/planner/harmony"
	"github.com/caravan-sched/caravan/server/scheduler"
	"github.com/caravan-sched/caravan/structs"
)

// FixedPolicies run every job at its fixed request instead of within its
// elastic bounds: they do not rescale.
var FixedPolicies = map[string]bool{"fifo": true, "tetris": true}

// Baselines are policies only `caravan sim` runs, beside the built-in
// algorithms: comparison baselines that leave jobs waiting while there is
// room, which the server's algorithms never do.
var Baselines = map[string]planner.Factory{harmony.IsolatedName: harmony.NewIsolated}

// Policy returns the algorithm of a built-in or a baseline by name.
func Policy(name string) (planner.Algorithm, bool) {
	if f, ok := builtin.Algorithms[name]; ok {
		return f(), true
	}
	if f, ok := Baselines[name]; ok {
		return f(), true
	}
	return nil, false
}

// Options configure one run.
type Options struct {
	Cluster sim.Config
	// Interval is the time between scheduling rounds (default 60 s, as in
	// the Pollux simulator).
	Interval time.Duration
	// Progress, when set, is called whenever jobs finish, with how many
	// have finished so far and how many the workload has.
	Progress func(done, total int)
}

// Result is the outcome of one policy on one workload.
type Result struct {
	Policy    string
	Jobs      []sim.JobResult
	Usage     []sim.UsePoint
	Allocs    []sim.AllocChange
	TotalGPUs int
	Rounds    int
	Summary   Summary
	// Wall is how long the run took in real time.
	Wall time.Duration
}

// Summary is what summary.json reports per policy.
type Summary struct {
	AvgJCT   float64 `json:"avg_jct_s"`
	P50JCT   float64 `json:"p50_jct_s"`
	P99JCT   float64 `json:"p99_jct_s"`
	Makespan float64 `json:"makespan_s"`
	GPUUtil  float64 `json:"gpu_util"`
	// CPUUtil and NetUtil are the cluster's average utilisation by subtask
	// jobs (Harmony's workloads; 0 for others), over the same span.
	CPUUtil  float64 `json:"cpu_util"`
	NetUtil  float64 `json:"net_util"`
	Rescales int     `json:"rescales"`
	Jobs     int     `json:"jobs"`
}

// Run runs wl under the algorithm alg until every job has finished. The run
// is deterministic for the cluster's seed.
func Run(wl *sim.Workload, alg planner.Algorithm, opts Options) (*Result, error) {
	start := time.Now()
	if opts.Interval == 0 {
		opts.Interval = time.Minute
	}
	interval := opts.Interval.Seconds()
	fixed := FixedPolicies[alg.Name()]
	s := sim.New(opts.Cluster)
	sched := scheduler.New(alg, scheduler.Options{})
	res := &Result{Policy: alg.Name(), TotalGPUs: s.TotalGPUs()}

	next, sampleCursor, doneCursor := 0, 0, 0
	keys := make(map[string]structs.JobKey, len(wl.Arrivals)) // by job ID
	nextRound, last, stuck := 0.0, -1.0, 0
	arrivals := wl.Arrivals
	for next < len(arrivals) || !s.Done() {
		t := nextRound
		if next < len(arrivals) {
			t = min(t, arrivals[next].Time)
		}
		t = min(t, s.NextEvent())
		if t <= last {
			if stuck++; stuck > 1000 {
				return nil, fmt.Errorf("simulation made no progress at %.3fs", t)
			}
		} else {
			stuck = 0
		}
		last = t
		s.Advance(t)

		for next < len(arrivals) && arrivals[next].Time <= t {
			a := &arrivals[next]
			job := a.Job
			if fixed {
				job = a.FixedJob()
			}
			// Workloads are shared by runs in parallel: the simulator and
			// the scheduler get their own canonical copy.
			job = job.Copy()
			job.Canonicalize()
			if err := s.Submit(job, a.Truth); err != nil {
				return nil, err
			}
			keys[job.ID] = job.Key()
			if err := sched.Register(job); err != nil {
				return nil, err
			}
			next++
		}
		for _, pr := range sched.ProfileRequests() {
			if err := s.Profile(pr.Job.ID, pr.Configs); err != nil {
				return nil, err
			}
		}
		var done []string
		done, doneCursor = s.Completions(doneCursor)
		for _, id := range done {
			sched.Complete(keys[id])
		}
		if opts.Progress != nil && len(done) > 0 {
			opts.Progress(doneCursor, len(arrivals))
		}
		if t < nextRound {
			continue
		}
		nextRound = t + interval
		smp, cur := s.Samples(sampleCursor)
		sampleCursor = cur
		sched.Ingest(smp)
		if !sched.Changed() || sched.Active() == 0 {
			continue
		}
		plan, err := sched.Plan(s.Nodes(), int64(t*1e9))
		if err != nil {
			return nil, fmt.Errorf("round at %.0fs: %w", t, err)
		}
		if err := s.Enact(plan); err != nil {
			return nil, fmt.Errorf("round at %.0fs: %w", t, err)
		}
		for _, p := range plan.Placements {
			sched.Observe(p.Key(), p, nil)
		}
		res.Rounds++
	}
	res.Jobs = s.Results()
	res.Usage = s.Usage()
	res.Allocs = s.Allocations()
	res.Summary = summarize(res.Jobs, res.Usage, res.TotalGPUs)
	res.Wall = time.Since(start)
	return res, nil
}

func summarize(jobs []sim.JobResult, usage []sim.UsePoint, totalGPUs int) Summary {
	var s Summary
	jcts := make([]float64, 0, len(jobs))
	first, last := math.Inf(1), 0.0
	for _, j := range jobs {
		s.Rescales += j.Rescales
		first = min(first, j.Arrival)
		if j.Finish >= 0 {
			jcts = append(jcts, j.Finish-j.Arrival)
			last = max(last, j.Finish)
		}
	}
	s.Jobs = len(jcts)
	if len(jcts) == 0 {
		return s
	}
	slices.Sort(jcts)
	sum := 0.0
	for _, v := range jcts {
		sum += v
	}
	s.AvgJCT = sum / float64(len(jcts))
	s.P50JCT = percentile(jcts, 0.50)
	s.P99JCT = percentile(jcts, 0.99)
	s.Makespan = last - first
	// GPU utilisation: GPU-seconds held by jobs over GPU-seconds available
	// from the first arrival to the last completion.
	held, cpu, net := 0.0, 0.0, 0.0
	for i, u := range usage {
		end := last
		if i+1 < len(usage) {
			end = usage[i+1].Time
		}
		held += float64(u.GPUs) * max(end-u.Time, 0)
		cpu += u.CPU * max(end-u.Time, 0)
		net += u.Net * max(end-u.Time, 0)
	}
	if s.Makespan > 0 {
		s.CPUUtil, s.NetUtil = cpu/s.Makespan, net/s.Makespan
	}
	if s.Makespan > 0 && totalGPUs > 0 {
		s.GPUUtil = held / (s.Makespan * float64(totalGPUs))
	}
	return s
}

// percentile of sorted values, nearest rank.
func percentile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
