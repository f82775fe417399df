package sim

import (
	"cmp"
	"math"
	"slices"
)

// The Pollux artifact's job model (its simulator.py and applications.py,
// OSDI'21, Apache 2.0), which PolluxTruth follows:
//
//   - A job's length is statistical progress, not steps. Each row of a
//     model's validation-<batch>.csv ends an epoch at a progress; the epoch
//     boundaries are the smallest progress any batch measured at that row
//     (EpochProgress), and the job is done at the end of its last epoch.
//   - A step at global batch M during epoch e makes Gain(M, e) =
//     (σ² + |g|²) / (σ²/s + |g|²) of progress, s = M / InitBatch, with |g|²
//     and σ² the epoch's grad_sqr and grad_var, interpolated linearly
//     between the measured batches around M. Gain/s is the statistical
//     efficiency (Pollux §3.1, eq. 6–7: the gradient noise scale, PGNS =
//     InitBatch·σ²/|g|², gives efficiency (PGNS + InitBatch)/(PGNS + M)).
//     At InitBatch a step makes one unit of progress.
//   - A step's time comes from the traces at its per-GPU batch (StepSync),
//     with gradient accumulation when that batch does not fit a GPU
//     (Iteration).

// initProgress computes the epoch boundaries: the smallest progress any
// validation trace reached at the end of each epoch.
func (p *Profile) initProgress() {
	p.epochEnd = make([]float64, p.Epochs)
	for e := range p.epochEnd {
		p.epochEnd[e] = math.Inf(1)
		for _, c := range p.curves {
			p.epochEnd[e] = min(p.epochEnd[e], c.progress[e])
		}
	}
}

// EpochProgress returns the statistical progress at the end of epoch e
// (1 to Epochs); 0 for e ≤ 0. EpochProgress(Epochs) is the model's target:
// a job is done when its progress reaches it.
func (p *Profile) EpochProgress(e int) float64 {
	if e <= 0 {
		return 0
	}
	return p.epochEnd[min(e, p.Epochs)-1]
}

// GradStats returns the squared norm and the variance of the gradient
// measured during epoch e (0-based) at global batch batch, interpolated
// linearly between the two measured batches around it and clamped to the
// measured range.
func (p *Profile) GradStats(batch float64, epoch int) (sqr, variance float64) {
	cs := p.curves
	e := min(max(epoch, 0), p.Epochs-1)
	if batch <= cs[0].batch {
		return cs[0].gradSqr[e], cs[0].gradVar[e]
	}
	if last := cs[len(cs)-1]; batch >= last.batch {
		return last.gradSqr[e], last.gradVar[e]
	}
	i, found := slices.BinarySearchFunc(cs, batch, func(c curve, b float64) int { return cmp.Compare(c.batch, b) })
	if found {
		return cs[i].gradSqr[e], cs[i].gradVar[e]
	}
	a, b := cs[i-1], cs[i]
	t := (batch - a.batch) / (b.batch - a.batch)
	return a.gradSqr[e] + t*(b.gradSqr[e]-a.gradSqr[e]), a.gradVar[e] + t*(b.gradVar[e]-a.gradVar[e])
}

// Gain returns the statistical progress one step at global batch batch
// makes during epoch e (0-based): (σ² + |g|²) / (σ²/s + |g|²), s = batch /
// InitBatch. It is 1 at InitBatch and grows with the batch towards s, the
// more slowly the less noisy the gradient.
func (p *Profile) Gain(batch float64, epoch int) float64 {
	sqr, variance := p.GradStats(batch, epoch)
	return gain(sqr, variance, batch/p.InitBatch)
}

// gain is the progress of one step at scale s = M / InitBatch with
// gradient statistics sqr and variance; 1 when the denominator is not
// positive, as the artifact's GoodputFunction.efficiency does.
func gain(sqr, variance, s float64) float64 {
	den := variance/s + sqr
	if den <= 0 {
		return 1
	}
	return (variance + sqr) / den
}

// Efficiency is Gain over the scale: the progress a sample makes at
// global batch batch relative to one at InitBatch, in (0, 1].
func (p *Profile) Efficiency(batch float64, epoch int) float64 {
	return p.Gain(batch, epoch) / (batch / p.InitBatch)
}

// Iteration is how one step at a global batch runs on a placement.
type Iteration struct {
	// Atomic is the per-GPU batch of one forward and backward pass, and
	// Accum the extra passes each GPU makes before the gradients are
	// synchronised (gradient accumulation): a step is Accum+1 passes.
	Atomic float64
	Accum  int
	// Batch is the global batch the step really trains at,
	// replicas × Atomic × (Accum+1): the requested one rounded up to
	// whole per-GPU batches, and at most the model's MaxBatch.
	Batch float64
	// Seconds is the step's time: a step at Atomic, plus Accum times its
	// forward and backward pass (the step less its sync time).
	Seconds float64
}

// Iteration returns how a step at global batch batch runs with the given
// GPUs per node, by the artifact's rules (its Job.update_local_bsz): the
// per-GPU batch ⌈batch/replicas⌉ is split into ⌈local/MaxLocalBatch⌉
// passes, at least two on a single GPU whose batch exceeds InitBatch (so
// that the gradient's variance can be estimated), each of ⌈local/passes⌉,
// capped so that the global batch stays within MaxBatch. No GPUs gives
// the zero Iteration.
func (p *Profile) Iteration(gpusPerNode []int, batch float64) Iteration {
	return p.iterationLimit(gpusPerNode, batch, p.MaxLocalBatch)
}

// iterationLimit is Iteration with maxLocal as the largest per-GPU batch
// that fits a GPU.
func (p *Profile) iterationLimit(gpusPerNode []int, batch, maxLocal float64) Iteration {
	_, replicas := shape(gpusPerNode)
	if replicas == 0 {
		return Iteration{}
	}
	const eps = 1e-8 // the artifact's tolerance for its ceilings
	r := float64(replicas)
	local := math.Ceil(batch/r - eps)
	accum := int(math.Ceil(local/maxLocal-eps)) - 1
	if replicas == 1 && batch > p.InitBatch {
		accum = max(accum, 1)
	}
	count := r * float64(accum+1)
	atomic := min(math.Ceil(local/float64(accum+1)-eps), math.Floor(p.MaxBatch/count))
	return p.IterationAt(gpusPerNode, atomic, accum)
}

// IterationAt is how a step runs with the given GPUs per node when each
// computes local samples a pass over accum+1 passes, as a decision splits
// an adaptive job's batch (structs.Batch): the traces' step at that
// per-GPU batch plus accum forward and backward passes.
func (p *Profile) IterationAt(gpusPerNode []int, local float64, accum int) Iteration {
	_, replicas := shape(gpusPerNode)
	if replicas == 0 {
		return Iteration{}
	}
	step, sync := p.StepSync(gpusPerNode, local)
	return Iteration{
		Atomic: local, Accum: accum, Batch: local * float64(replicas*(accum+1)),
		Seconds: step + float64(accum)*(step-sync),
	}
}
