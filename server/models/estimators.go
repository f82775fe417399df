package models

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/planner/model"
	"github.com/caravan-sched/caravan/structs"
)

// A run's estimators each learn one thing from its samples (observe),
// refit when they have enough new data (refit), and give the round's
// snapshot their estimate (planner.Job's fields). They share nothing but
// the sample, so an algorithm's needs name the estimators it reads.

// lossEstimator fits Optimus's loss curve (§3.1, model.FitLoss) to a
// job's losses, and keeps the newest losses of its first worker with
// their times (planner.Job.Progress).
type lossEstimator struct {
	// step is the newest step reported.
	step     float64
	points   []model.LossPoint
	progress []planner.ProgressPoint
	fit      *model.Loss
	// dirty marks new losses since the last fit; fittedAt is the step of
	// the last fit.
	dirty    bool
	fittedAt float64
}

// observe takes a sample's step and loss, keeping at most maxPoints of
// each history.
func (l *lossEstimator) observe(smp *structs.Sample, maxPoints int) {
	l.step = max(l.step, float64(smp.Step))
	if smp.Loss <= 0 {
		return
	}
	l.points = append(l.points, model.LossPoint{Step: float64(smp.Step), Loss: smp.Loss})
	if len(l.points) > maxPoints {
		l.points = downsample(l.points)
	}
	l.dirty = true
	if smp.Time > 0 && smp.Rank == 0 && smp.Role != structs.RolePS {
		l.progress = append(l.progress, planner.ProgressPoint{Time: smp.Time, Loss: smp.Loss})
		if len(l.progress) > maxPoints {
			l.progress = slices.Clone(l.progress[len(l.progress)/2:])
		}
	}
}

// due reports whether the loss curve should be refitted: when there is
// none yet, or when the job has progressed by an epoch and by a quarter of
// its steps since the last fit. Fits get rarer as a job ages (O(log steps)
// of them), while a young job's curve, which moves most, is refitted often.
func (l *lossEstimator) due(stepsPerEpoch int) bool {
	grown := l.step - l.fittedAt
	return l.fit == nil || grown >= float64(stepsPerEpoch) && grown >= 0.25*l.fittedAt
}

// refit fits the curve again when it is due and has new losses, and
// reports whether it changed.
func (l *lossEstimator) refit(stepsPerEpoch int) bool {
	if !l.dirty || !l.due(stepsPerEpoch) {
		return false
	}
	l.dirty = false
	fit, err := model.FitLoss(l.points, model.LossOptions{StepsPerEpoch: float64(stepsPerEpoch)})
	if err != nil {
		return false
	}
	l.fit, l.fittedAt = fit, l.step
	return true
}

// mean accumulates speeds at one configuration; fitted is the sample count
// at the last fit.
type mean struct{ sum, n, fitted float64 }

// speedEstimator fits a job's speed function (Optimus §3.2, model.FitSpeed)
// to the steps per second measured at each configuration.
type speedEstimator struct {
	means map[structs.Shape]*mean
	fit   *model.Speed
	// dirty marks measurements the fit has not seen enough of.
	dirty bool
}

// addPriors counts speeds the jobspec gives as one measurement each: they
// take the place of profiling.
func (sp *speedEstimator) addPriors(speeds []*structs.SpeedPrior) {
	for _, p := range speeds {
		m := sp.at(structs.Shape{PS: p.PS, Workers: p.Workers})
		m.sum += p.StepsPerSecond
		m.n++
		sp.dirty = true
	}
}

func (sp *speedEstimator) at(c structs.Shape) *mean {
	m := sp.means[c]
	if m == nil {
		m = &mean{}
		sp.means[c] = m
	}
	return m
}

// observe takes a sample's speed at its configuration, and reports
// whether it measured one.
func (sp *speedEstimator) observe(smp *structs.Sample) bool {
	if smp.StepTimeS <= 0 || smp.NumWorkers <= 0 {
		return false
	}
	m := sp.at(structs.Shape{PS: smp.NumPS, Workers: smp.NumWorkers})
	m.sum += 1 / smp.StepTimeS
	m.n++
	// Refit on a new configuration, or when a configuration's samples
	// double: refitting on every noisy sample only jitters the model, and
	// every jitter can reorder marginal gains and rescale jobs for
	// nothing.
	if m.n >= 2*m.fitted {
		sp.dirty = true
	}
	return true
}

// refit fits the speed function of kind, for a job of global batch
// batch, again when there are new measurements, and reports whether it
// changed.
func (sp *speedEstimator) refit(kind string, batch int) (bool, error) {
	if !sp.dirty {
		return false, nil
	}
	sp.dirty = false
	pts := make([]model.SpeedPoint, 0, len(sp.means))
	for k, m := range sp.means {
		pts = append(pts, model.SpeedPoint{PS: k.PS, Workers: k.Workers, Speed: m.sum / m.n})
		m.fitted = m.n
	}
	slices.SortFunc(pts, func(a, b model.SpeedPoint) int {
		return cmp.Or(cmp.Compare(a.PS, b.PS), cmp.Compare(a.Workers, b.Workers))
	})
	fit, err := model.FitSpeed(kind, float64(batch), pts)
	if err != nil {
		return false, err
	}
	sp.fit = fit
	return true, nil
}

// error is the mean relative error of the speed fit over the
// configurations measured, and how many there are. It sums in a fixed
// order, so that it is the same for the same measurements.
func (sp *speedEstimator) error() (float64, int) {
	sum, n := 0.0, 0
	for _, k := range slices.SortedFunc(maps.Keys(sp.means), structs.Shape.Compare) {
		m := sp.means[k]
		measured := m.sum / m.n
		if measured <= 0 {
			continue
		}
		sum += math.Abs(sp.fit.At(k.PS, k.Workers)-measured) / measured
		n++
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}

// perfKey is a configuration of Pollux's throughput model: replicas over
// nodes, each computing local samples a pass.
type perfKey struct {
	nodes, replicas, local int
}

// perfMean accumulates the compute and step times (seconds) measured at
// one configuration; computeN counts the samples that split the compute
// time out; fitted is n at the last fit.
type perfMean struct {
	compute, step       float64
	computeN, n, fitted float64
}

// goodputEstimator fits Pollux's goodput model (planner/goodput): the
// throughput model to the step times measured at each configuration, and
// the gradient statistics. all fits every measurement as if the cluster's
// GPUs were one type (planner.Job.Perf); byType fits each GPU type's alone
// (planner.Job.PerfByType), nil until a measurement names its type.
type goodputEstimator struct {
	all    perfTable
	byType map[string]*perfTable
	// pending says a table is dirty (dirty), so that asking costs no
	// walk of the tables: the server asks of every job at every step.
	pending bool
	// grad is the latest gradient statistics at the job's reference
	// batch.
	grad *goodput.GradParams
}

// perfTable is the step times measured at each configuration of one
// throughput model, and its fit.
type perfTable struct {
	perf map[perfKey]*perfMean
	fit  *goodput.Fit
	// dirty marks measurements the fit has not seen enough of.
	dirty bool
	// samples counts the samples added.
	samples int
}

// observe takes from a worker's sample what the job's goodput model
// learns from: its gradient statistics, converted to the job's reference
// batch (Training.GlobalBatchSize), and its step time at its
// configuration, on gpuType ("" when unknown). The configuration's nodes
// are those of the job's current placement when the sample ran at its
// worker count (a single worker needs none); the local batch is the
// sample's, else the batch (or the job's fixed one) over the workers. The
// compute time of a pass is cpu_s over the passes; the synchronising pass
// is the step time less the accumulation passes (with no cpu_s, the step
// time over the passes).
func (g *goodputEstimator) observe(smp *structs.Sample, job *structs.Job, current *structs.Placement, gpuType string) {
	ref := job.Training.GlobalBatchSize
	if (smp.GradSqr > 0 || smp.GradVar > 0) && smp.BatchSize > 0 && ref > 0 {
		gp := goodput.AtReference(smp.GradSqr, smp.GradVar, int(smp.BatchSize), ref)
		g.grad = &gp
	}
	if smp.StepTimeS <= 0 || smp.NumWorkers <= 0 || smp.Role == structs.RolePS {
		return
	}
	replicas, nodes := smp.NumWorkers, 1
	if replicas > 1 {
		if current == nil || current.NumWorkers != replicas {
			return
		}
		nodes = workerNodes(current)
	}
	local := int(smp.LocalBatchSize)
	if local <= 0 {
		batch := int(smp.BatchSize)
		if batch <= 0 {
			batch = ref
		}
		local = (batch + replicas*int(smp.AccumSteps+1) - 1) / (replicas * int(smp.AccumSteps+1))
	}
	if local <= 0 || nodes <= 0 {
		return
	}
	key := perfKey{nodes: nodes, replicas: replicas, local: local}
	g.all.add(key, smp)
	g.pending = g.pending || g.all.dirty
	if gpuType == "" {
		return
	}
	if g.byType == nil {
		g.byType = map[string]*perfTable{}
	}
	t := g.byType[gpuType]
	if t == nil {
		t = &perfTable{}
		g.byType[gpuType] = t
	}
	t.add(key, smp)
	g.pending = g.pending || t.dirty
}

// add folds a sample measured at configuration key into the table.
func (t *perfTable) add(key perfKey, smp *structs.Sample) {
	if t.perf == nil {
		t.perf = map[perfKey]*perfMean{}
	}
	m := t.perf[key]
	if m == nil {
		m = &perfMean{}
		t.perf[key] = m
	}
	passes := float64(smp.AccumSteps + 1)
	if smp.CPUS > 0 {
		compute := smp.CPUS / passes
		m.compute += compute
		m.computeN++
		m.step += max(smp.StepTimeS-float64(smp.AccumSteps)*compute, compute)
	} else {
		m.step += smp.StepTimeS / passes
	}
	m.n++
	t.samples++
	// As for speeds: refit on a new configuration or when its samples
	// double.
	if m.n >= 2*m.fitted {
		t.dirty = true
	}
}

// dirty reports whether a fit has measurements it has not seen enough of.
func (g *goodputEstimator) dirty() bool { return g.pending }

// points returns the measured configurations, sorted, as points of the
// throughput model.
func (t *perfTable) points() []goodput.Point {
	keys := slices.SortedFunc(maps.Keys(t.perf), func(a, b perfKey) int {
		return cmp.Or(cmp.Compare(a.nodes, b.nodes), cmp.Compare(a.replicas, b.replicas), cmp.Compare(a.local, b.local))
	})
	pts := make([]goodput.Point, 0, len(keys))
	for _, k := range keys {
		m := t.perf[k]
		pt := goodput.Point{Nodes: k.nodes, Replicas: k.replicas, Local: float64(k.local), StepTime: m.step / m.n}
		if m.computeN > 0 {
			pt.ComputeTime = m.compute / m.computeN
		}
		pts = append(pts, pt)
	}
	return pts
}

// refit fits the throughput models again where there are new
// measurements, and reports whether one changed; the error is the first
// fit's that failed.
func (g *goodputEstimator) refit() (bool, error) {
	g.pending = false
	changed, err := g.all.refit(nil)
	for _, typ := range slices.Sorted(maps.Keys(g.byType)) {
		t := g.byType[typ]
		var same *perfTable
		if len(g.byType) == 1 && t.samples == g.all.samples {
			// Every sample is of this type (each is added to all too),
			// so the tables hold the same measurements: on a cluster of
			// one GPU type, every job's.
			same = &g.all
		}
		c, e := t.refit(same)
		changed = changed || c
		if err == nil && e != nil {
			err = fmt.Errorf("GPU type %q: %w", typ, e)
		}
	}
	return changed, err
}

// fits returns the fit of each GPU type that has one, nil when none has.
func (g *goodputEstimator) fits() map[string]*goodput.Fit {
	var out map[string]*goodput.Fit
	for typ, t := range g.byType {
		if t.fit == nil {
			continue
		}
		if out == nil {
			out = make(map[string]*goodput.Fit, len(g.byType))
		}
		out[typ] = t.fit
	}
	return out
}

// refit fits the table again if it is dirty, and reports whether its fit
// changed. same, when not nil, is a table of the same measurements that was
// refitted just before: t takes its fit rather than fit the same points
// again, which would give the same fit (FitPerf is deterministic).
func (t *perfTable) refit(same *perfTable) (bool, error) {
	if !t.dirty {
		return false, nil
	}
	t.dirty = false
	for _, m := range t.perf {
		m.fitted = m.n
	}
	if same != nil {
		changed := t.fit != same.fit
		t.fit = same.fit
		return changed, nil
	}
	fit, err := goodput.FitPerf(t.points())
	if err != nil {
		return false, err
	}
	t.fit = fit
	return true, nil
}

// serviceEstimator is a job's attained service in GPU-seconds up to at
// (Unix nanoseconds, 0 before the first round), and rate the GPUs (or
// tasks) of what ran at at, which accrue until the next round
// (planner.Job.AttainedService).
type serviceEstimator struct {
	attained float64
	at       int64
	rate     float64
}

// accrue adds to the attained service the rate of what ran at the
// previous round over the time since, and takes rate, what runs now, until
// the next round: as Tiresias's implementation in the Pollux artifact
// counts a job's service from its status at each round. A time before the
// last accrual adds nothing.
func (sv *serviceEstimator) accrue(now int64, rate float64) {
	if sv.at > 0 && now > sv.at {
		sv.attained += sv.rate * float64(now-sv.at) / 1e9
	}
	sv.at = max(sv.at, now)
	sv.rate = rate
}
