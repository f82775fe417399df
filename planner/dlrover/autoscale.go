package dlrover

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
)

// AutoscaleName is the registry name of the auto-scaling baseline, and
// StepOptimusName that of the paper's stepped Optimus baseline.
const (
	AutoscaleName   = "autoscale"
	StepOptimusName = "optimus-steps"
)

// AutoscaleOptions tune the auto-scaling baseline. The zero value of a
// field takes its default (DefaultAutoscaleOptions).
type AutoscaleOptions struct {
	// PS is the number of parameter servers a job starts with, which
	// autoscale never changes (option ps; 0, the default, takes the job's
	// minimum).
	PS int
	// Step is how many workers one adjustment adds or removes (step,
	// default 1; the paper's 4 for Wide & Deep and 1 for xDeepFM), and
	// PSStep how many servers optimus-steps adds (ps_step, default 1; the
	// paper's 2 and 1).
	Step, PSStep int
	// Threshold is the scaling efficiency above which workers are added
	// (threshold, default 0.3).
	Threshold float64
	// Interval is the least time between two adjustments of a job
	// (interval, default 3 min).
	Interval time.Duration
	// TotalCores caps the CPU of one job, in cores (c_total, default 200).
	TotalCores float64
}

// DefaultAutoscaleOptions are the paper's values (D:254).
func DefaultAutoscaleOptions() AutoscaleOptions {
	return AutoscaleOptions{Step: 1, PSStep: 1, Threshold: 0.3, Interval: 3 * time.Minute, TotalCores: 200}
}

// Autoscale is the heuristic auto-scaling baseline of DLRover's §6.3
// (D:254; Or et al., 2020, "Resource elasticity in distributed deep
// learning"), as the paper runs it: each job keeps its parameter servers
// and its tasks' sizes (the roles' initial sizes: Table 2's in the
// paper's experiments) and only adds or removes workers, Step at a time,
// at most once per Interval. It adds workers while the scaling efficiency
// of the last step, the throughput gained per added worker over the
// throughput per worker before it,
//
//	((R_n − R_m)/(n − m)) / (R_m/m),
//
// exceeds Threshold (0.3 in the paper); when it does not, it removes the
// last step's workers and holds the job there. R is measured, the sum of
// each worker's speed from its own step time (structs.TaskUsage
// TaskStepTimeS; asynchronous training). The job's CPU stays within
// TotalCores (the 200 cores every job of §6.1 is capped at) and its
// worker bounds. Jobs are planned in arrival order; one that does not fit
// waits.
//
// The paper does not say how many servers the baseline runs or where it
// starts: the option ps sets the servers (the experiments give Table 2's)
// and a job starts at Step workers. Autoscale keeps each job's last
// measured step in memory: a new instance starts every running job's
// search again from where it runs. It is not safe for concurrent use.
//
// With stepped set (NewStepOptimus) it is the paper's Optimus baseline
// instead (D:254): "the original Optimus only adds one worker or PS each
// time; in order to speed up the adjustment, we make Optimus add 2 PS
// and 4 workers for Wide & Deep jobs and 1 PS and 1 worker for xDeepFM
// jobs". Each Interval it adds PSStep servers or Step workers, whichever
// the job's fitted speed model (Optimus's, planner.Job.Speed, fitted by
// the server from the job's samples) predicts gains more, if that gain is
// positive and the job stays within TotalCores and its bounds; it starts
// at PSStep servers and Step workers. It never removes tasks.
type Autoscale struct {
	opts    AutoscaleOptions
	stepped bool
	state   map[structs.JobKey]*scaleState
}

// scaleState is one job's search: the workers and throughput measured
// before the last step, and whether the search has ended.
type scaleState struct {
	workers int
	rate    float64
	// back is the worker count the search steps back to, until the job
	// runs it (the step may not fit, or its plan may be dropped); then
	// the search is done.
	back int
	done bool
}

var (
	_ planner.Algorithm    = (*Autoscale)(nil)
	_ planner.Describer    = (*Autoscale)(nil)
	_ planner.Configurable = (*Autoscale)(nil)
)

// NewAutoscale returns the auto-scaling baseline with
// DefaultAutoscaleOptions.
func NewAutoscale() planner.Algorithm {
	return &Autoscale{opts: DefaultAutoscaleOptions(), state: map[structs.JobKey]*scaleState{}}
}

// NewStepOptimus returns the paper's stepped Optimus baseline with
// DefaultAutoscaleOptions.
func NewStepOptimus() planner.Algorithm {
	return &Autoscale{opts: DefaultAutoscaleOptions(), stepped: true, state: map[structs.JobKey]*scaleState{}}
}

// Name returns "autoscale" or "optimus-steps".
func (a *Autoscale) Name() string {
	if a.stepped {
		return StepOptimusName
	}
	return AutoscaleName
}

// Capabilities: autoscale reads the workers' measured step times,
// optimus-steps the job's fitted speed model.
func (a *Autoscale) Capabilities() planner.Capabilities {
	if a.stepped {
		return planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorSpeed}, SpeedModels: true}
	}
	return planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorUsage}}
}

// SpeedModels reports whether the server should profile new jobs for the
// baseline: optimus-steps sizes from speed models (planner.ModelDriven).
func (a *Autoscale) SpeedModels() bool { return a.stepped }

// SetConfig takes ps, step, ps_step (positive integers), threshold (a
// positive number), interval (a positive duration) and c_total (positive
// cores).
func (a *Autoscale) SetConfig(options map[string]string) error {
	opts := DefaultAutoscaleOptions()
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v := options[k]
		switch k {
		case "ps", "step", "ps_step":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				errs = append(errs, fmt.Errorf("%s = %q: must be a positive integer", k, v))
			}
			switch k {
			case "ps":
				opts.PS = n
			case "step":
				opts.Step = n
			default:
				opts.PSStep = n
			}
		case "threshold", "c_total":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f > 0) || math.IsInf(f, 0) {
				errs = append(errs, fmt.Errorf("%s = %q: must be a positive number", k, v))
			}
			if k == "threshold" {
				opts.Threshold = f
			} else {
				opts.TotalCores = f
			}
		case "interval":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("interval = %q: must be a positive duration such as \"3m\"", v))
			}
			opts.Interval = d
		default:
			errs = append(errs, fmt.Errorf("unknown option %q; %s takes ps, step, ps_step, threshold, interval and c_total", k, a.Name()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	a.opts = opts
	return nil
}

// Plan keeps or rescales each job as Autoscale's doc says.
func (a *Autoscale) Plan(req *planner.Request) (*planner.Decision, error) {
	jobs := slices.Clone(req.Jobs)
	planner.SortArrival(jobs)
	live := map[structs.JobKey]bool{}
	for _, j := range jobs {
		live[j.Job.Key()] = true
	}
	maps.DeleteFunc(a.state, func(k structs.JobKey, _ *scaleState) bool { return !live[k] })

	mhz := coreMHz(req.Nodes)
	c := planner.NewCluster(req.Nodes)
	tasks := make([]planner.JobTasks, len(jobs))
	targets := make([]structs.Shape, len(jobs))
	reasons := make([]string, len(jobs))
	out := make([]*structs.Placement, len(jobs))
	// Jobs that stay where they run take their capacity first.
	for i, j := range jobs {
		tasks[i] = c.JobTasks(j)
		sc := a.newScope(j, tasks[i], mhz)
		if a.stepped {
			targets[i], reasons[i] = a.optimusTarget(req.Now, j, sc)
		} else {
			targets[i], reasons[i] = a.autoscaleTarget(req.Now, j, sc)
		}
		if kept := c.KeepCurrent(j.Current, tasks[i], targets[i].PS, targets[i].Workers); kept != nil {
			kept.Reason = reasons[i]
			out[i] = kept
		}
	}
	placer := placement.New(c)
	// Running jobs that step go before waiting ones, so that no waiting
	// job takes the nodes a stepping job runs on and would fall back to;
	// two stepping jobs may still contend for each other's nodes.
	order := make([]int, 0, len(jobs))
	for _, waiting := range []bool{false, true} {
		for i, j := range jobs {
			if out[i] == nil && (j.Current == nil || j.Current.Paused()) == waiting {
				order = append(order, i)
			}
		}
	}
	for _, i := range order {
		j := jobs[i]
		t := targets[i]
		nodes, ok := placer.Place(tasks[i].PS, t.PS, tasks[i].Worker, t.Workers)
		if !ok {
			if cur := j.Current; cur != nil && !cur.Paused() {
				if kept := c.KeepCurrent(cur, tasks[i], cur.NumPS, cur.NumWorkers); kept != nil {
					kept.Reason = fmt.Sprintf("%s: %s does not fit; kept where it runs", a.Name(), t)
					out[i] = kept
					continue
				}
			}
			out[i] = planner.Paused(j, fmt.Sprintf("%s: waiting for room for %s", a.Name(), t))
			continue
		}
		out[i] = &structs.Placement{
			Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: t.PS, NumWorkers: t.Workers, Nodes: nodes, Reason: reasons[i],
		}
	}
	planner.SortPlacements(out)
	return &planner.Decision{Placements: out}, nil
}

// scope is what one job may run: its bounds and the CPU of its tasks
// (the roles' sizes) against the cap, in MHz.
type scope struct {
	psLo, psHi, wLo, wHi int
	psCPU, wCPU, cap     float64
}

func (a *Autoscale) newScope(j *planner.Job, t planner.JobTasks, mhz float64) scope {
	pb, wb := j.Bounds()
	sc := scope{wLo: max(wb.Min, 1), wHi: max(wb.Max, wb.Min, 1), wCPU: float64(t.Worker.CPU), cap: a.opts.TotalCores * mhz}
	if j.HasPS() && t.PS != nil {
		sc.psLo, sc.psHi, sc.psCPU = max(pb.Min, 1), max(pb.Max, pb.Min, 1), float64(t.PS.CPU)
	}
	return sc
}

// fits reports whether shape s is within the job's bounds and the cap.
func (sc scope) fits(s structs.Shape) bool {
	return s.Workers >= sc.wLo && s.Workers <= sc.wHi && s.PS >= sc.psLo && s.PS <= sc.psHi &&
		float64(s.PS)*sc.psCPU+float64(s.Workers)*sc.wCPU <= sc.cap+1e-6
}

// start is the shape a job starts at: ps servers and step workers, within
// its bounds (and the cap, by fewer workers).
func (sc scope) start(ps, step int) structs.Shape {
	s := structs.Shape{Workers: clamp(step, sc.wLo, sc.wHi)}
	if sc.psHi > 0 {
		s.PS = clamp(ps, sc.psLo, sc.psHi)
	}
	for s.Workers > sc.wLo && !sc.fits(s) {
		s.Workers--
	}
	return s
}

// autoscaleTarget is the shape job j should run at now under the
// auto-scaling rule, and why.
func (a *Autoscale) autoscaleTarget(now int64, j *planner.Job, sc scope) (structs.Shape, string) {
	name := a.Name()
	cur := j.Current
	if cur == nil || cur.Paused() {
		delete(a.state, j.Job.Key())
		s := sc.start(a.opts.PS, a.opts.Step)
		return s, fmt.Sprintf("%s: started at %s", name, s)
	}
	now1 := structs.Shape{PS: cur.NumPS, Workers: cur.NumWorkers}
	n := cur.NumWorkers
	st := a.state[j.Job.Key()]
	if st != nil && st.back > 0 {
		if n != st.back {
			back := structs.Shape{PS: cur.NumPS, Workers: st.back}
			return back, fmt.Sprintf("%s: %d → %d workers (stepping back: the last step did not pay)", name, n, back.Workers)
		}
		st.back, st.done = 0, true
	}
	if st != nil && st.done {
		return now1, fmt.Sprintf("%s: holds %d workers (the search ended)", name, n)
	}
	rate, ok := measuredRate(j, n)
	if !ok || j.Since == 0 || time.Duration(now-j.Since) < a.opts.Interval {
		return now1, fmt.Sprintf("%s: measuring %d workers", name, n)
	}
	up := structs.Shape{PS: cur.NumPS, Workers: n + a.opts.Step}
	if st == nil || st.workers >= n || st.rate <= 0 {
		// The first measurement: take a step.
		st = &scaleState{workers: n, rate: rate}
		a.state[j.Job.Key()] = st
		if !sc.fits(up) {
			st.done = true
			return now1, fmt.Sprintf("%s: holds %d workers (more would pass its cap or bounds)", name, n)
		}
		return up, fmt.Sprintf("%s: %d → %d workers (%.1f steps/s measured)", name, n, up.Workers, rate)
	}
	eff := (rate - st.rate) / float64(n-st.workers) / (st.rate / float64(st.workers))
	if eff <= a.opts.Threshold {
		back := structs.Shape{PS: cur.NumPS, Workers: st.workers}
		st.back = st.workers
		return back, fmt.Sprintf("%s: %d → %d workers (scaling efficiency %.2f ≤ %.2f)", name, n, back.Workers, eff, a.opts.Threshold)
	}
	st.workers, st.rate = n, rate
	if !sc.fits(up) {
		st.done = true
		return now1, fmt.Sprintf("%s: holds %d workers (scaling efficiency %.2f; more would pass its cap or bounds)", name, n, eff)
	}
	return up, fmt.Sprintf("%s: %d → %d workers (scaling efficiency %.2f > %.2f)", name, n, up.Workers, eff, a.opts.Threshold)
}

// optimusTarget is the shape job j should run at now under the stepped
// Optimus rule, and why.
func (a *Autoscale) optimusTarget(now int64, j *planner.Job, sc scope) (structs.Shape, string) {
	name := a.Name()
	cur := j.Current
	if cur == nil || cur.Paused() {
		s := sc.start(a.opts.PSStep, a.opts.Step)
		return s, fmt.Sprintf("%s: started at %s", name, s)
	}
	now1 := structs.Shape{PS: cur.NumPS, Workers: cur.NumWorkers}
	if j.Since == 0 || time.Duration(now-j.Since) < a.opts.Interval {
		return now1, fmt.Sprintf("%s: %s until the next adjustment", name, now1)
	}
	if j.Speed == nil {
		return now1, fmt.Sprintf("%s: %s, no speed model yet", name, now1)
	}
	base := j.Speed.At(now1.PS, now1.Workers)
	best, gain := now1, 0.0
	for _, s := range []structs.Shape{{PS: now1.PS + a.opts.PSStep, Workers: now1.Workers}, {PS: now1.PS, Workers: now1.Workers + a.opts.Step}} {
		if sc.psHi == 0 {
			s.PS = 0
		}
		if s == now1 || !sc.fits(s) {
			continue
		}
		if g := j.Speed.At(s.PS, s.Workers) - base; g > gain {
			best, gain = s, g
		}
	}
	if best == now1 {
		return now1, fmt.Sprintf("%s: holds %s (no step gains within its cap and bounds)", name, now1)
	}
	return best, fmt.Sprintf("%s: %s → %s (model gain %+.1f steps/s)", name, now1, best, gain)
}

// measuredRate is the job's steps per second from its workers' own step
// times, when every one of its n workers was measured in its current run.
func measuredRate(j *planner.Job, n int) (float64, bool) {
	u := j.Usage
	if u == nil || u.Time < j.Since {
		return 0, false
	}
	var rate float64
	seen := 0
	for _, t := range u.Tasks {
		if t.Role != structs.RoleWorker || t.TaskStepTimeS <= 0 {
			continue
		}
		rate += 1 / t.TaskStepTimeS
		seen++
	}
	return rate, seen == n && n > 0
}

// coreMHz is one core in MHz: the smallest cpu.frequency of the nodes,
// else 1000 (as DLRover's option core_mhz defaults, A16).
func coreMHz(nodes []*structs.Node) float64 {
	mhz := 0.0
	for _, n := range nodes {
		if f, err := strconv.Atoi(n.Attributes["cpu.frequency"]); err == nil && f > 0 && (mhz == 0 || float64(f) < mhz) {
			mhz = float64(f)
		}
	}
	if mhz == 0 {
		return 1000
	}
	return mhz
}
