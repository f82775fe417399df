package optimus

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/internal/pq"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
)

// Name is the algorithm's registry name.
const Name = "optimus"

// NameRelative is the registry name of Optimus with GainRelative.
const NameRelative = "optimus-relative"

// DefaultRescaleCost is the restart penalty Optimus assumes: the tens of
// seconds the Optimus and Pollux papers measured.
const DefaultRescaleCost = 30 * time.Second

// DefaultYoungFactor discounts the marginal gains of jobs whose models are
// young, as §4.1 suggests (0.95) to hedge against early mispredictions.
// The paper's evaluation runs with 1 (§6.1) and reports 0.95 as 2.66%
// shorter average JCT (§6.3); set young_factor = 1 for its set-up.
const DefaultYoungFactor = 0.95

// Options tune Optimus; the zero value takes the defaults.
type Options struct {
	// YoungFactor multiplies the marginal gains of jobs with young models;
	// 0 means DefaultYoungFactor.
	YoungFactor float64
	// RescaleCost is the progress time a job loses when it is rescaled
	// (checkpoint, restart, reload); 0 means DefaultRescaleCost. A running
	// job offered only more tasks keeps its current ones unless the growth
	// is predicted to save more time than this.
	RescaleCost time.Duration
	// Scan recomputes every job's marginal gain at each allocation step and
	// scans for the best, instead of keeping a max-heap and updating only
	// the job that changed. It gives the same decisions in O(jobs) per step
	// instead of O(log jobs), and exists to measure that difference.
	Scan bool
	// Gain is how a task's benefit to a job is measured; the zero value
	// is the paper's GainSeconds.
	Gain Gain
}

// Gain selects the benefit in the marginal gain, the benefit of a job's
// next task divided by the task's dominant share.
type Gain int

const (
	// GainSeconds is Optimus eq. 9: the seconds of remaining time the task
	// saves, t(p, w) − t(p', w'). It minimises the sum of the active jobs'
	// remaining times as if they all ran to the end on today's allocation.
	// Since t is remaining steps over speed, the seconds saved grow with
	// the work left, so a long job outbids a short one for every task.
	GainSeconds Gain = iota
	// GainRelative is a deviation from the paper: the fraction of its
	// remaining time the task saves, (t − t')/t = 1 − f(p, w)/f(p', w'),
	// which does not depend on the work left. Allocating by it maximises
	// the sum over jobs of log speed (proportional fairness over speeds):
	// a task goes to the job it speeds up by the largest factor, and long
	// jobs no longer outbid short ones. The loss model then only enters
	// the rescale-cost check. In caravan sim, over seeds 1–3, it gives
	// shorter average JCT than GainSeconds on six of the eight Pollux
	// workloads (the other two within 0.1%) and on the parametric PS
	// workload (drivers/sim/README.md).
	GainRelative
)

// Optimus implements planner.Algorithm.
type Optimus struct {
	opts Options
}

var (
	_ planner.Algorithm = (*Optimus)(nil)
	_ planner.Describer = (*Optimus)(nil)
)

// New returns Optimus with the default options.
func New() planner.Algorithm { return NewWithOptions(Options{}) }

// NewWithOptions returns Optimus with opts.
func NewWithOptions(opts Options) *Optimus {
	if opts.YoungFactor == 0 {
		opts.YoungFactor = DefaultYoungFactor
	}
	if opts.RescaleCost == 0 {
		opts.RescaleCost = DefaultRescaleCost
	}
	return &Optimus{opts: opts}
}

// Name returns "optimus", or NameRelative with GainRelative.
func (o *Optimus) Name() string {
	if o.opts.Gain == GainRelative {
		return NameRelative
	}
	return Name
}

// Capabilities: Optimus reads the loss curves and speed models and sizes
// jobs from the speed models (planner.Describer).
func (*Optimus) Capabilities() planner.Capabilities {
	return planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorLoss, planner.EstimatorSpeed}, SpeedModels: true}
}

// SetConfig sets young_factor, a number in (0, 1], and rescale_cost, a
// positive duration such as "30s"; unknown keys and bad values are
// errors, and then nothing changes. Keys left out take their defaults
// (planner.Configurable).
func (o *Optimus) SetConfig(options map[string]string) error {
	opts := Options{Scan: o.opts.Scan, Gain: o.opts.Gain}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v := options[k]
		switch k {
		case "young_factor":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f > 0 && f <= 1) {
				errs = append(errs, fmt.Errorf("young_factor = %q: must be a number in (0, 1]", v))
			}
			opts.YoungFactor = f
		case "rescale_cost":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("rescale_cost = %q: must be a positive duration such as \"30s\"", v))
			}
			opts.RescaleCost = d
		default:
			errs = append(errs, fmt.Errorf("unknown option %q; %s takes young_factor and rescale_cost", k, o.Name()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	o.opts = NewWithOptions(opts).opts
	return nil
}

// SpeedModels reports true: Optimus sizes jobs from their speed models, so
// the server profiles new jobs for it (planner.ModelDriven).
func (o *Optimus) SpeedModels() bool { return true }

// NewRelative returns Optimus with GainRelative.
func NewRelative() planner.Algorithm { return NewWithOptions(Options{Gain: GainRelative}) }

// job is the allocation state of one job.
type job struct {
	view          *planner.Job
	tasks         planner.JobTasks
	p, w          int
	minP, maxP    int
	minW, maxW    int
	remaining     float64 // steps
	factor        float64
	relative      bool    // GainRelative
	domP, domW    float64 // dominant share of one ps / worker task
	gainP, gainW  float64
	fullP, fullW  bool // no aggregate room for another ps / worker
	active        bool
	kept          bool   // growth undone by keepWorthless
	paused        string // reason when paused
	hasSpeedModel bool
}

// Plan allocates by marginal gain, then places smallest job first.
//
// Allocation (Optimus §4.1): every job first gets its minimum parameter
// servers and workers (at least one of each), in priority order, while the
// cluster's aggregate capacity lasts; jobs that do not fit are paused. Then,
// repeatedly, the job whose next task — a worker or a parameter server —
// brings the largest reduction of its remaining time per unit of the task's
// dominant resource (eq. 9; with GainRelative, the reduction as a fraction
// of the remaining time) gets it. A max-heap keyed by each job's best
// gain makes a step O(log jobs), and only the job that grew has its gains
// recomputed. A job stops growing at its bounds, when its gains are ≤ 0, or
// when the aggregate capacity has no room for its next task; other jobs go
// on. Jobs without a speed model yet keep their minimum while they profile.
//
// Placement (Theorem 1): jobs smallest first, each on the fewest of the most
// available nodes that hold its tasks spread evenly. A job that does not fit
// is shrunk a task at a time, dropping whichever task costs it least, down
// to its minimum; a job whose minimum does not fit is paused.
func (o *Optimus) Plan(req *planner.Request) (*planner.Decision, error) {
	views := slices.Clone(req.Jobs)
	planner.SortJobs(views)
	c := planner.NewCluster(req.Nodes)
	agg := planner.NewAggregate(c)

	jobs := make([]*job, len(views))
	for i, v := range views {
		jobs[i] = o.newJob(c, agg, v)
	}

	// Minimums first, by priority.
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(jobs[b].view.Job.Priority, jobs[a].view.Job.Priority)
	})
	for _, i := range order {
		j := jobs[i]
		if j.paused != "" {
			continue
		}
		if !agg.Fits(j.tasks.PS, j.minP, j.tasks.Worker, j.minW) {
			j.paused = fmt.Sprintf("waiting: the cluster has no room for the minimum of %s: %s", structs.Shape{PS: j.minP, Workers: j.minW}, agg.Shortfall(j.tasks.PS, j.minP, j.tasks.Worker, j.minW))
			continue
		}
		agg.Take(j.tasks.PS, j.minP)
		agg.Take(j.tasks.Worker, j.minW)
		j.p, j.w, j.active = j.minP, j.minW, true
	}

	// Allocate; then undo growth that does not pay for its restart, and
	// hand what that frees to the other jobs, until nothing is undone.
	for {
		if o.opts.Scan {
			o.allocateScan(jobs, agg)
		} else {
			o.allocateHeap(jobs, agg)
		}
		if !o.keepWorthless(jobs, agg) {
			break
		}
		for _, j := range jobs {
			if !j.kept {
				j.fullP, j.fullW = false, false // there may be room now
			}
		}
	}

	return place(c, jobs), nil
}

func (o *Optimus) newJob(c *planner.Cluster, agg *planner.Aggregate, v *planner.Job) *job {
	ps, workers := v.Bounds()
	j := &job{
		view:      v,
		tasks:     c.JobTasks(v),
		minW:      max(workers.Min, 1),
		maxW:      workers.Max,
		remaining: v.RemainingSteps(),
		factor:    1,
		relative:  o.opts.Gain == GainRelative,
	}
	if v.HasPS() {
		j.minP, j.maxP = max(ps.Min, 1), ps.Max
		j.domP = agg.DominantShare(j.tasks.PS)
	}
	j.domW = agg.DominantShare(j.tasks.Worker)
	if v.Young {
		j.factor = o.opts.YoungFactor
	}
	j.hasSpeedModel = v.Speed != nil
	if math.IsInf(j.domW, 1) || math.IsInf(j.domP, 1) {
		j.paused = "waiting: the cluster has none of the devices its tasks request"
	}
	return j
}

// keepWorthless undoes growth that does not pay for itself: a running job
// allocated more tasks than it has (and no fewer of either kind) keeps its
// current counts when the growth is predicted to save less time than a
// rescale costs. It returns the freed tasks to agg and freezes the job, and
// reports whether it undid anything, so that the caller can allocate the
// freed capacity to others. Undoing growth only frees capacity, so it can
// never break another job's allocation. Without it, every round handed
// capacity freed by a finished job to many jobs a task at a time,
// restarting each.
func (o *Optimus) keepWorthless(jobs []*job, agg *planner.Aggregate) bool {
	cost := o.opts.RescaleCost.Seconds()
	undone := false
	for _, j := range jobs {
		cur := j.view.Current
		if !j.active || j.kept || !j.hasSpeedModel || cur == nil || cur.Paused() {
			continue
		}
		p0, w0 := cur.NumPS, cur.NumWorkers
		if j.p < p0 || j.w < w0 || j.p == p0 && j.w == w0 || p0 < j.minP || w0 < j.minW {
			continue
		}
		if j.time(p0, w0)-j.time(j.p, j.w) < cost {
			agg.Release(j.tasks.PS, j.p-p0)
			agg.Release(j.tasks.Worker, j.w-w0)
			j.p, j.w, j.kept = p0, w0, true
			j.fullP, j.fullW = true, true
			undone = true
		}
	}
	return undone
}

// time is the predicted remaining time with p ps and w workers.
func (j *job) time(p, w int) float64 {
	f := j.view.Speed.At(p, w)
	if f <= 0 {
		return math.Inf(1)
	}
	return j.remaining / f
}

// gain is the marginal gain of going from remaining time t0 to t1 with a
// task of dominant share dom: the seconds saved per unit of share
// (GainSeconds), or the fraction of t0 saved (GainRelative).
func (j *job) gain(t0, t1, dom float64) float64 {
	switch {
	case math.IsInf(t1, 1):
		return -1
	case math.IsInf(t0, 1):
		return math.MaxFloat64
	}
	saved := t0 - t1
	if j.relative {
		saved /= t0
	}
	return saved / dom * j.factor
}

// updateGains recomputes j's marginal gains for one more worker and one
// more ps; a gain is -1 when that task is not allowed.
func (j *job) updateGains() {
	j.gainW, j.gainP = -1, -1
	if !j.active || !j.hasSpeedModel {
		return
	}
	t0 := j.time(j.p, j.w)
	if j.w < j.maxW && !j.fullW {
		j.gainW = j.gain(t0, j.time(j.p, j.w+1), j.domW)
	}
	if j.maxP > 0 && j.p < j.maxP && !j.fullP {
		j.gainP = j.gain(t0, j.time(j.p+1, j.w), j.domP)
	}
}

func (j *job) best() float64 { return max(j.gainW, j.gainP) }

// grow gives j its best next task if the aggregate capacity has room, and
// otherwise marks that kind of task as full for j. It reports whether a
// task was added.
func (j *job) grow(agg *planner.Aggregate) bool {
	worker := j.gainW >= j.gainP
	t := j.tasks.PS
	if worker {
		t = j.tasks.Worker
	}
	if !agg.Fits(t, 1, nil, 0) {
		if worker {
			j.fullW = true
		} else {
			j.fullP = true
		}
		return false
	}
	agg.Take(t, 1)
	if worker {
		j.w++
	} else {
		j.p++
	}
	return true
}

type gainItem struct {
	gain float64
	job  int
}

func (o *Optimus) allocateHeap(jobs []*job, agg *planner.Aggregate) {
	h := pq.Heap[gainItem]{
		Less:  func(a, b gainItem) bool { return a.gain > b.gain || a.gain == b.gain && a.job < b.job },
		Items: make([]gainItem, 0, len(jobs)),
	}
	for i, j := range jobs {
		j.updateGains()
		if j.best() > 0 {
			h.Items = append(h.Items, gainItem{gain: j.best(), job: i})
		}
	}
	h.Init()
	for h.Len() > 0 {
		it := h.Pop()
		j := jobs[it.job]
		j.grow(agg)
		j.updateGains()
		if g := j.best(); g > 0 {
			h.Push(gainItem{gain: g, job: it.job})
		}
	}
}

func (o *Optimus) allocateScan(jobs []*job, agg *planner.Aggregate) {
	for {
		best, bestGain := -1, 0.0
		for i, j := range jobs {
			j.updateGains()
			if g := j.best(); g > bestGain {
				best, bestGain = i, g
			}
		}
		if best < 0 {
			return
		}
		jobs[best].grow(agg)
	}
}

// place places the jobs with placement.Decision, smallest first.
func place(c *planner.Cluster, jobs []*job) *planner.Decision {
	in := make([]placement.Job, len(jobs))
	for i, j := range jobs {
		in[i] = placement.Job{
			View: j.view, Tasks: j.tasks, PS: j.p, Workers: j.w, MinPS: j.minP, MinWorkers: j.minW,
			Allocated: j.active, Size: float64(j.p)*j.domP + float64(j.w)*j.domW, Shrink: j.shrink,
		}
	}
	return placement.Decision(c, in, func(i int, r placement.Result) string {
		j := jobs[i]
		switch {
		case !r.Placed() && j.paused != "":
			return j.paused
		case !r.Placed():
			return fmt.Sprintf("waiting: no set of nodes has room for the minimum of %s", structs.Shape{PS: j.minP, Workers: j.minW})
		case r.Backfilled:
			return fmt.Sprintf("optimus: %s, its minimum, in room the others left", structs.Shape{PS: r.PS, Workers: r.Workers})
		}
		return j.explain(r.PS, r.Workers)
	})
}

// shrink returns (p, w) less the task whose loss lengthens the job least,
// keeping the minimums, or false at the minimum.
func (j *job) shrink(p, w int) (int, int, bool) {
	canW, canP := w > j.minW, p > j.minP
	switch {
	case canW && canP && j.hasSpeedModel:
		if j.time(p, w-1) <= j.time(p-1, w) {
			return p, w - 1, true
		}
		return p - 1, w, true
	case canW && (!canP || w >= p):
		return p, w - 1, true
	case canP:
		return p - 1, w, true
	}
	return p, w, false
}

// explain says why the job got p ps and w workers.
func (j *job) explain(p, w int) string {
	s := "optimus: " + structs.Shape{PS: p, Workers: w}.String()
	switch {
	case p != j.p || w != j.w:
		return s + fmt.Sprintf("; allocated %s, shrunk to fit the free nodes", structs.Shape{PS: j.p, Workers: j.w})
	case !j.hasSpeedModel:
		return s + "; at its minimum while its speed is profiled"
	case j.kept:
		return s + "; kept: more tasks would save less time than the rescale costs"
	case j.w >= j.maxW && (j.maxP == 0 || j.p >= j.maxP):
		return s + "; at its maximum"
	case j.fullW || j.fullP:
		return s + "; the cluster has no room for more of its tasks"
	}
	return s + "; more tasks would gain less than they cost"
}
