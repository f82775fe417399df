package sim

import (
	"math"

	"github.com/caravan-sched/caravan/structs"
)

// Adaptive batch sizes (issue 20): a job whose jobspec lets its batch
// vary (training.batch_size) trains at the batch its latest decision
// chose (structs.Placement.Batch), which the simulator applies at once
// and without a restart, as the Pollux artifact's simulator does
// (Job.update_local_bsz between steps). Its truth is then the same job's
// at the new batch, and its statistical progress carries over: the new
// truth resumes at the same epoch and the same fraction of it, so that
// from then on every step makes the progress, and takes the time, of the
// chosen batch.

// WithBatch returns the truth of the same job trained at b from step on,
// and the step of the new truth at which the job stands: the one of the
// same (fractional) epoch, so the same statistical progress. t is not
// changed.
func (t *PolluxTruth) WithBatch(b structs.Batch, step float64) (*PolluxTruth, float64) {
	next := NewPolluxTruth(t.Profile, float64(b.Global))
	next.Local, next.Accum = float64(b.Local), b.AccumSteps
	next.Types, next.Slowdown = t.Types, t.Slowdown
	return next, next.stepAt(t.Epoch(step))
}

// stepAt is the inverse of Epoch: the step at which the job reaches a
// (fractional) epoch.
func (t *PolluxTruth) stepAt(epoch float64) float64 {
	if epoch <= 0 {
		return 0
	}
	e := int(math.Floor(epoch))
	if e >= len(t.cum) {
		return t.cum[len(t.cum)-1]
	}
	from := 0.0
	if e > 0 {
		from = t.cum[e-1]
	}
	return from + (epoch-float64(e))*(t.cum[e]-from)
}

// sameBatch reports whether the truth already runs at b.
func (t *PolluxTruth) sameBatch(b *structs.Batch) bool {
	return t.Batch == float64(b.Global) && t.Local == float64(b.Local) && t.Accum == b.AccumSteps
}

// rebatch makes job j train at the batch of its placement p from now on,
// without a restart (see WithBatch); nothing changes for a placement
// without a batch, a job that is not a Pollux model's, or the batch it
// has. The steps it reports keep counting the steps it took; the batch
// is recorded from time now on.
func (j *job) rebatch(p *structs.Placement, now float64) {
	t, ok := j.truth.(*PolluxTruth)
	if !ok || p == nil || p.Batch == nil || p.Batch.Global <= 0 || t.sameBatch(p.Batch) {
		return
	}
	next, step := t.WithBatch(*p.Batch, j.step)
	j.stepOffset += j.step - step
	j.truth, j.step, j.onPlacement = next, step, nil
	j.batches = append(j.batches, BatchPoint{Time: now, Batch: *p.Batch})
}

// BatchPoint is the batch an adaptive job trains at from Time on.
type BatchPoint struct {
	Time  float64
	Batch structs.Batch
}

// adaptive reports whether j's batch may vary (training.batch_size).
func (j *job) adaptive() bool { return j.spec.Training != nil && j.spec.Training.BatchSize != nil }

// reported is the optimizer steps job j has taken when its truth stands
// at step: the truth's steps plus those of the batches it trained at
// before.
func (j *job) reported(step float64) float64 { return step + j.stepOffset }

// polluxSample adds to smp what the trainer of a Pollux model reports for
// the goodput model (planner/goodput, as the server reads samples): the
// batch its steps run at and how each replica splits it, the compute
// time of its passes (cpu_s: the step less its gradient sync, once per
// pass) and the traces' gradient statistics at its epoch and batch
// (grad_sqr, and grad_var rescaled from the model's initial batch, to
// which the traces' variance refers, to the step's batch). noise scales
// each time measured, as the step time's; the gradient statistics are
// the traces' own, as the artifact hands them to its jobs. Only adaptive
// jobs report cpu_s: other policies read it as Harmony's split of a step
// into computation and communication (planner.Subtasks), which the
// trainers of fixed jobs never reported. st is how the job's steps run
// on its placement; typed, when the placement's nodes have GPU models
// (IterationOn), has the sample name the type whose time the step took.
func polluxSample(smp *structs.Sample, t *PolluxTruth, adaptive bool, st polluxStep, typed bool, step float64, noise func() float64) {
	it := st.it
	if it.Batch <= 0 || !st.fits {
		return
	}
	if typed {
		smp.GPUType = st.model
	}
	step0, sync := st.step0*t.slowdown(), st.sync*t.slowdown()
	smp.BatchSize = int64(math.Round(it.Batch))
	smp.LocalBatchSize = int64(math.Round(it.Atomic))
	smp.AccumSteps = int64(it.Accum)
	if adaptive {
		smp.CPUS = float64(it.Accum+1) * max(step0-sync, 0) * noise()
	}
	sqr, variance := t.Profile.GradStats(it.Batch, int(t.Epoch(step)))
	smp.GradSqr = sqr
	smp.GradVar = variance * t.Profile.InitBatch / it.Batch
}

// polluxStep is how a Pollux job's steps run on a placement: the
// iteration and the model of the GPUs whose time it is
// (PolluxTruth.IterationOn), whether the job runs there, and, when it
// does, the step and sync time of one pass on that model's profile
// (Profile.StepSync, before the truth's Slowdown).
type polluxStep struct {
	it          Iteration
	model       string
	fits        bool
	step0, sync float64
}

// newPolluxStep is how t's steps run with the given workers per node on
// nodes of the given GPU models.
func newPolluxStep(t *PolluxTruth, workersPerNode []int, models []string) polluxStep {
	it, model, fits := t.IterationOn(workersPerNode, models)
	st := polluxStep{it: it, model: model, fits: fits}
	if fits && it.Batch > 0 {
		st.step0, st.sync = t.profileOn(model).StepSync(workersPerNode, it.Atomic)
	}
	return st
}
