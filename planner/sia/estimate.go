package sia

import (
	"math"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/structs"
)

// estimator is Sia's goodput estimator of one job (§3.1): a goodput model
// per GPU type from the throughput model fitted on that type, bootstrapped
// across types from single-GPU profiles.
type estimator struct {
	v   *planner.Job
	ts  []*gpuType
	lim *goodput.Limits
	// models[k] is type k's goodput model, nil without a fit; lims[k] its
	// batch limits, the local batch capped at the largest measured on
	// the type (what its GPU was seen to fit).
	models []*goodput.Model
	fits   []*goodput.Fit
	lims   []goodput.Limits
	// src is the type whose model was fitted on the most replicas, when
	// that is more than one; -1 otherwise.
	src int
	// memo holds own's goodputs by (type, nodes, workers).
	memo map[[3]int]float64
	// none: the job has no throughput model on any type. typed: its
	// models are per type (planner.Job.PerfByType), measured on that
	// type's GPUs, not one model for all.
	none, typed bool
}

func newEstimator(v *planner.Job, ts []*gpuType, lim *goodput.Limits) *estimator {
	e := &estimator{v: v, ts: ts, lim: lim, models: make([]*goodput.Model, len(ts)), fits: make([]*goodput.Fit, len(ts)), lims: make([]goodput.Limits, len(ts)), src: -1, none: true, typed: len(v.PerfByType) > 0, memo: map[[3]int]float64{}}
	ref := max(v.Job.Training.GlobalBatchSize, 1)
	most := 1
	for k, t := range ts {
		f := v.PerfByType[t.name]
		if f == nil && len(v.PerfByType) == 0 {
			// A driver that reports no types: one model for all.
			f = v.Perf
		}
		if f == nil {
			continue
		}
		e.none = false
		e.fits[k] = f
		m := &goodput.Model{Perf: f.Params, RefBatch: ref}
		if v.Grad != nil {
			m.Grad = *v.Grad
		}
		e.models[k] = m
		if lim != nil {
			e.lims[k] = *lim
			if f.MaxLocal >= 1 {
				e.lims[k].MaxLocal = min(lim.MaxLocal, int(f.MaxLocal))
			}
		}
		if f.MaxReplicas > most {
			most, e.src = f.MaxReplicas, k
		}
	}
	return e
}

// goodput estimates the job's goodput at configuration cf with w
// workers; 0 where the job cannot run or nothing is known.
//
// A type with a model fitted on several replicas estimates from it. A type
// profiled on one GPU only estimates from the type measured on the most
// replicas, B, scaled by the two types' single-GPU goodputs (§3.1:
// throughput(N, A) = throughput(1, A)/throughput(1, B) · throughput(N, B)),
// or, with no such B, from its own model, which then scales nearly
// linearly: Sia's first assumption that throughput doubles. A job with no
// model on any type is worth the same on one GPU of every type, and
// nothing elsewhere (the artifact's sia.py); a type without a model while
// another has one is where the job was not seen to run, and is left out.
func (e *estimator) goodput(cf config, w int) float64 {
	if e.none {
		_, wb := e.v.Bounds()
		if cf.nodes != 1 || w != max(wb.Min, 1) {
			return 0
		}
		return 1
	}
	k := cf.typ
	if e.models[k] == nil {
		return 0
	}
	if w > 1 && e.fits[k].MaxReplicas == 1 && e.src >= 0 && e.src != k {
		srcNodes := max(int(math.Ceil(float64(cf.gpus)/float64(e.ts[e.src].perNode))), 1)
		if srcOne := e.own(e.src, 1, 1); srcOne > 0 {
			return e.own(k, 1, 1) / srcOne * e.own(e.src, srcNodes, w)
		}
	}
	return e.own(k, cf.nodes, w)
}

// own is type k's goodput at w workers over nodes from its own model, at
// the best batch for an adaptive job.
func (e *estimator) own(k, nodes, w int) float64 {
	key := [3]int{k, nodes, w}
	if g, ok := e.memo[key]; ok {
		return g
	}
	m := e.models[k]
	var g float64
	if e.lim == nil {
		// A local batch beyond the largest measured on the type may not
		// fit its memory (a model of all types says nothing of one).
		t := e.v.Job.Training
		if f := e.fits[k]; !e.typed || f.MaxLocal < 1 || float64(fixedLocal(t, w)) <= f.MaxLocal {
			g = m.Fixed(nodes, w, t.GlobalBatchSize, goodput.Limits{}).Goodput
		}
	} else if c, ok := m.Optimize(nodes, w, e.lims[k]); ok {
		g = c.Goodput
	}
	e.memo[key] = g
	return g
}

// fixedLocal is the local batch of a job of fixed batch at w workers, as
// its tasks are given it (drivers/nomad contractBatch): the global batch
// split over the workers, rounded down, in sync mode; every worker's own
// in async mode.
func fixedLocal(t *structs.Training, w int) int {
	if t.Mode == structs.ModeAsync {
		return t.GlobalBatchSize
	}
	return max(t.GlobalBatchSize/max(w, 1), 1)
}

// batch is the batch the job trains at with w workers over nodes of type
// k: the one that maximises its goodput there, else, before it has a
// model, its start batch; nil for a fixed batch.
func (e *estimator) batch(k, nodes, w int) *structs.Batch {
	if e.lim == nil {
		return nil
	}
	if m := e.models[k]; m != nil {
		if c, ok := m.Optimize(nodes, w, e.lims[k]); ok {
			return &structs.Batch{Global: c.Global, Local: c.Local, AccumSteps: c.Accum}
		}
		return nil
	}
	return e.startBatch(w)
}

// startBatch is the batch of a job without a model (the Pollux artifact's
// simulator.py update_local_bsz): the reference batch, or the smallest
// local batch on every worker if that is more; nil for a fixed batch or
// when it breaks the bounds.
func (e *estimator) startBatch(w int) *structs.Batch {
	if e.lim == nil {
		return nil
	}
	lim := *e.lim
	ref := e.v.Job.Training.GlobalBatchSize
	b := min(max(ref, lim.MinLocal*w), lim.MaxBatch)
	local, accum := goodput.Split(float64(b), w, ref, lim)
	global := w * local * (accum + 1)
	if local < lim.MinLocal || local > lim.MaxLocal || global < lim.MinBatch || global > lim.MaxBatch {
		return nil
	}
	return &structs.Batch{Global: global, Local: local, AccumSteps: accum}
}
