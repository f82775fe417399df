package main

import (
	"math"

	"github.com/caravan-sched/caravan/planner/goodput"
)

// Adaptive batches (README, "Batch sizes and the learning rate"). A step
// of a sync job is computed in microbatches: each worker's passes (its
// local batch, accumulated AccumSteps+1 times), or, for a lone worker
// with one pass, the two halves of its batch. Each worker sends every
// parameter server, with its gradient, the sum over its microbatches of
// the squared norm of the gradient's slice; a server keeps, per step, the
// mean of those and the squared norm of the averaged gradient's slice
// (GradStats). Squared norms add up over slices, so the chief, summing
// what every server returns, has the two squared norms of the whole
// gradient, and from them AdaptDL's estimates of the gradient noise.

// GradStats are the squared norms of one step's gradients over a slice of
// the parameters, or (summed) over all of them: MicroSqr is the mean
// over the step's Micro microbatches of their gradient's squared norm,
// MeanSqr the squared norm of their average, the step's gradient. Micro
// is 0 when the step measured none (async mode).
type GradStats struct {
	MicroSqr float64
	MeanSqr  float64
	Micro    int
}

// add adds the stats of another slice of the same step.
func (g GradStats) add(o GradStats) GradStats {
	return GradStats{MicroSqr: g.MicroSqr + o.MicroSqr, MeanSqr: g.MeanSqr + o.MeanSqr, Micro: o.Micro}
}

// wholeStats adds the stats of every server's slice of one step; zero
// when a server has none, since the others' do not make the whole
// gradient's.
func wholeStats(replies []PullReply) GradStats {
	var sum GradStats
	for _, r := range replies {
		if r.Stats.Micro == 0 {
			return GradStats{}
		}
		sum = sum.add(r.Stats)
	}
	return sum
}

// noise estimates, from one step's stats over the whole gradient, the
// squared norm of the true gradient (sqr) and the variance of the
// gradient averaged over the step's batch (variance: the trace of its
// covariance), as AdaptDL's GradientNoiseScale does. With k microbatches
// of b examples, the step's batch B = k·b, and S the trace of one
// example's gradient covariance, E[MicroSqr] = |G|² + S/b and
// E[MeanSqr] = |G|² + S/B, so
//
//	variance = S/B = (MicroSqr − MeanSqr) / (k − 1)
//	sqr      = MeanSqr − variance = (k·MeanSqr − MicroSqr) / (k − 1)
//
// Both are unbiased and either may come out negative on one step; ok is
// false when there are fewer than two microbatches.
func (g GradStats) noise() (sqr, variance float64, ok bool) {
	k := float64(g.Micro)
	if g.Micro < 2 {
		return 0, 0, false
	}
	variance = (g.MicroSqr - g.MeanSqr) / (k - 1)
	return g.MeanSqr - variance, variance, true
}

// noiseSmoothing is the weight of the newest step in gradNoise's moving
// averages: about the last 20 steps count.
const noiseSmoothing = 0.1

// gradNoise follows a job's gradient noise across steps: exponential
// moving averages, bias-corrected as Adam's, of the squared norm of the
// true gradient and of the per-step variance converted to the reference
// batch (Var at reference × reference = Var at B × B), so that a batch
// change does not disturb them. The zero value has seen nothing.
type gradNoise struct {
	sqr, varRef float64
	// weight is the total weight of the averages, 1 − (1−α)ⁿ after n
	// steps.
	weight float64
}

// observe takes one step's stats at global batch batch, for a job whose
// reference batch is ref.
func (n *gradNoise) observe(g GradStats, batch, ref int) {
	sqr, variance, ok := g.noise()
	if !ok || math.IsNaN(sqr+variance) || math.IsInf(sqr+variance, 0) {
		return
	}
	a := noiseSmoothing
	n.sqr = (1-a)*n.sqr + a*sqr
	n.varRef = (1-a)*n.varRef + a*goodput.AtReference(sqr, variance, batch, ref).Var
	n.weight = (1-a)*n.weight + a
}

// estimates returns the smoothed squared norm of the true gradient and
// the variance of the gradient averaged over batch examples, and whether
// both are usable (positive and finite, the variance not negative):
// what a sample reports as grad_sqr and grad_var.
func (n *gradNoise) estimates(batch, ref int) (sqr, variance float64, ok bool) {
	if n.weight <= 0 {
		return 0, 0, false
	}
	sqr = n.sqr / n.weight
	variance = n.varRef / n.weight * float64(ref) / float64(batch)
	ok = sqr > 0 && variance >= 0 && !math.IsInf(sqr+variance, 0) && !math.IsNaN(sqr+variance)
	return sqr, variance, ok
}

// gain is AdaScale's gain ratio for a global batch of scale = batch/ref
// times the reference batch: how many reference steps one step at batch
// is worth,
//
//	r = (σ² + μ²) / (σ²/scale + μ²)
//
// with σ² the variance at the reference batch and μ² the squared norm of
// the true gradient (Johnson et al., "AdaScale SGD", ICML 2020). Pollux's
// statistical efficiency is r/scale, so r is computed as the scheduler's
// efficiency (goodput.GradParams.Efficiency) times scale. The learning
// rate is the reference one times r: between 1 (no noise, a larger batch
// gains nothing) and scale (all noise, the linear scaling rule). Without
// usable estimates r is 1, as it is at scale 1.
func (n *gradNoise) gain(batch, ref int) float64 {
	if batch == ref || ref <= 0 {
		return 1
	}
	scale := float64(batch) / float64(ref)
	sqr, variance, ok := n.estimates(ref, ref)
	if !ok {
		return 1
	}
	r := goodput.GradParams{Sqr: sqr, Var: variance}.Efficiency(float64(batch), ref) * scale
	lo, hi := min(1, scale), max(1, scale)
	return min(max(r, lo), hi)
}

// sqrNorms adds, for each parameter server's slice of g, the squared
// norm of g there to sums (one per server, offsets as partition gives).
func sqrNorms(g []float64, features, numPS int, sums []float64) {
	for r := range numPS {
		off, n := partition(features, numPS, r)
		s := 0.0
		for _, v := range g[off : off+n] {
			s += v * v
		}
		sums[r] += s
	}
}
