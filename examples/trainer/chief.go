package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
)

// reporter is where a worker sends its samples (the chief the job's, the
// others their own step time): a *client.Client, or logReporter when the
// task has no collector.
type reporter interface {
	Report(structs.Sample)
	Flush(context.Context) error
	Close(context.Context) error
}

// logReporter only logs the samples.
type logReporter struct{ log hclog.Logger }

func (r logReporter) Report(s structs.Sample) {
	r.log.Debug("sample", "step", s.Step, "loss", s.Loss, "step_time_s", s.StepTimeS, "checkpoint_step", s.CheckpointStep)
}
func (logReporter) Flush(context.Context) error { return nil }
func (logReporter) Close(context.Context) error { return nil }

// chief is what worker 0 does besides training: it evaluates the loss of
// the parameters of every step on the held-out set, reports samples,
// tracks convergence per epoch, writes checkpoints when the checkpoint
// signal asks, every CheckpointInterval and when the process is stopped,
// and ends training (or, stopped, the generation). It runs on the
// worker's goroutine only; requested is set and stop closed by the signal
// handlers.
type chief struct {
	cfg       *config
	log       hclog.Logger
	rep       reporter
	eval      batch
	requested *atomic.Bool
	stop      <-chan struct{}

	// The latest checkpoint (nil if none) and its step, and when the
	// chief last wrote one or started (for CheckpointInterval).
	current  *manifest
	ckptStep int64
	ckptTime time.Time

	// Convergence tracking: the last epoch boundary passed, the loss
	// there, and how many epochs in a row improved less than the
	// threshold. tracking is false until the first step.
	tracking  bool
	epoch     int64
	epochLoss float64
	below     int

	// Since the last report: its step and time, and the workers' times.
	lastStep int64
	lastTime time.Time
	acc      stepTimes

	// The first step and when it was pulled, and the same for the last
	// epoch boundary, for the throughput the logs show.
	startStep, epochStep int64
	startTime, epochTime time.Time

	// noise follows the gradient noise the parameter servers measure
	// (batch.go), for the samples and the learning rate's gain.
	noise gradNoise
}

func newChief(cfg *config, log hclog.Logger, rep reporter, data *dataset, requested *atomic.Bool, stop <-chan struct{}) (*chief, error) {
	c := &chief{cfg: cfg, log: log.Named("chief"), rep: rep, eval: data.evalBatch(cfg.EvalExamples), requested: requested, stop: stop}
	if !cfg.Resume {
		return c, nil
	}
	m, err := readManifest(ckptRoot(cfg.CheckpointDir))
	switch {
	case noCheckpoint(err):
		c.log.Warn("resume asked but there is no checkpoint; starting from step 0")
	case err != nil:
		return nil, fmt.Errorf("resume from checkpoint: %w", err)
	default:
		c.current, c.ckptStep = m, m.Step
		if m.EpochLoss > 0 {
			c.tracking, c.epoch, c.epochLoss, c.below = true, m.Epoch, m.EpochLoss, m.EpochsBelow
		}
		c.noise = gradNoise{sqr: m.GradSqr, varRef: m.GradVarRef, weight: m.GradWeight}
		c.log.Info("resuming from checkpoint", "step", m.Step, "loss", m.Loss, "epoch", m.Epoch, "epochs_below_threshold", m.EpochsBelow)
	}
	return c, nil
}

// atStep runs at each step boundary: the parameters of step v were pulled
// at now and their loss is loss; the chief has computed its gradient but
// not pushed it, so in sync mode no parameter server can pass step v
// meanwhile. times are the chief's computation and communication since
// the previous boundary. It returns true when training is done.
func (c *chief) atStep(ctx context.Context, w *worker, v int64, loss float64, times stepTimes, now time.Time) (bool, error) {
	first := c.lastTime.IsZero()
	if first {
		if c.ckptStep > v {
			c.log.Warn("parameter servers are behind the checkpoint; did they resume?", "step", v, "checkpoint_step", c.ckptStep)
			c.current, c.ckptStep = nil, 0
		} else if c.current != nil && c.ckptStep != v {
			c.log.Warn("parameter servers are not at the checkpoint's step", "step", v, "checkpoint_step", c.ckptStep)
		}
		c.log.Info("first step", "step", v, "loss", loss)
		c.lastStep, c.lastTime = v, now
		c.startStep, c.startTime = v, now
		c.epochStep, c.epochTime = v, now
		c.ckptTime = now
	}
	c.acc.cpu += times.cpu
	c.acc.net += times.net
	c.acc.iters += times.iters

	epoch := v / c.cfg.StepsPerEpoch
	switch {
	case !c.tracking:
		c.tracking, c.epoch, c.epochLoss = true, epoch, loss
	case epoch > c.epoch:
		rel := (c.epochLoss - loss) / c.epochLoss
		if rel < c.cfg.Threshold {
			c.below++
		} else {
			c.below = 0
		}
		c.log.Info("epoch finished", "epoch", epoch, "step", v, "loss", loss, "relative_decrease", rel,
			"epochs_below_threshold", c.below, "steps_per_s", rate(v-c.epochStep, now.Sub(c.epochTime)), "lr_gain", c.gain())
		c.epoch, c.epochLoss = epoch, loss
		c.epochStep, c.epochTime = v, now
	}

	done := ""
	switch {
	case c.below >= c.cfg.Patience:
		done = "converged"
	case c.cfg.MaxEpochs > 0 && epoch >= int64(c.cfg.MaxEpochs):
		done = "reached max epochs"
	case c.cfg.MaxSteps > 0 && v >= c.cfg.MaxSteps:
		done = "reached max steps"
	}

	checkpointed := false
	periodic := c.cfg.CheckpointEvery > 0 && v%c.cfg.CheckpointEvery == 0 && v > c.ckptStep
	periodic = periodic || c.cfg.CheckpointInterval > 0 && now.Sub(c.ckptTime) >= c.cfg.CheckpointInterval && v > c.ckptStep
	// Stopped, the chief checkpoints before it exits (unless the latest
	// checkpoint is at this step), and again at each boundary until one
	// is written or the process is cancelled.
	requested := c.requested.Swap(false)
	stopped := c.stop != nil && closed(c.stop)
	atCheckpoint := c.current != nil && c.ckptStep == v
	if requested || done != "" || periodic || stopped && !atCheckpoint {
		if err := c.checkpoint(ctx, w, v, loss); err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			c.log.Error("checkpoint failed", "step", v, "error", err)
		} else {
			checkpointed = true
			c.ckptTime = now
		}
	}

	if first || checkpointed || done != "" || v-c.lastStep >= c.cfg.ReportEvery {
		c.report(v, loss, w.ownStepTime(), now)
	}
	if checkpointed {
		fctx, cancel := context.WithTimeout(ctx, c.cfg.FlushTimeout)
		err := c.rep.Flush(fctx)
		cancel()
		if err != nil {
			c.log.Warn("checkpoint sample not confirmed by a collector yet", "step", c.ckptStep, "error", err)
		} else {
			c.log.Info("checkpoint reported", "step", c.ckptStep)
		}
	}
	if stopped && (checkpointed || atCheckpoint) && done == "" {
		c.log.Info("stopped; this generation ends at its checkpoint", "step", c.ckptStep, "loss", loss)
		return true, nil
	}
	if requested && checkpointed && done == "" && c.hold(ctx) {
		c.log.Info("stopped at the checkpoint asked for; this generation ends there", "step", c.ckptStep, "loss", loss)
		return true, nil
	}
	if done != "" {
		c.log.Info("training finished", "reason", done, "step", v, "epoch", float64(v)/float64(c.cfg.StepsPerEpoch), "loss", loss,
			"duration", now.Sub(c.startTime).Round(time.Millisecond), "steps_per_s", rate(v-c.startStep, now.Sub(c.startTime)))
		return true, nil
	}
	return false, nil
}

// hold waits, after a checkpoint the signal asked for, for the stop that
// follows it in Caravan's rescale protocol, so that the generation trains
// no step past the checkpoint the next one resumes from. It waits at most
// the stop timeout (Caravan's checkpoint timeout, after which it gives up
// the rescale) and half the RPC timeout (the other workers wait at the
// barrier meanwhile), and reports whether the process was stopped.
func (c *chief) hold(ctx context.Context) bool {
	if c.stop == nil {
		return false
	}
	d := min(c.cfg.StopTimeout, c.cfg.RPCTimeout/2)
	c.log.Info("holding at the checkpoint for the stop that usually follows", "step", c.ckptStep, "at_most", d)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-c.stop:
		return true
	case <-timer.C:
		c.log.Info("no stop came; training on", "step", c.ckptStep, "held", d)
	case <-ctx.Done():
	}
	return false
}

// observeGrad takes the gradient statistics of the last step the
// parameter servers applied (none when g.Micro is 0).
func (c *chief) observeGrad(g GradStats) {
	if g.Micro > 0 {
		c.noise.observe(g, int(c.cfg.samplesPerStep()), c.cfg.RefBatch)
	}
}

// gain is the factor of the learning rate at the job's batch: AdaScale's
// gain from the noise measured so far, 1 at the reference batch (a job
// whose batch is fixed) or before any measurement.
func (c *chief) gain() float64 {
	return c.noise.gain(c.cfg.GlobalBatch, c.cfg.RefBatch)
}

// rate is steps per second, rounded for logs.
func rate(steps int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return math.Round(float64(steps)/d.Seconds()*10) / 10
}

// report sends the sample of step v: the loss there and, per step since
// the last report, the wall time, the chief's computation and
// communication, and its own time (own, as worker.ownStepTime).
func (c *chief) report(v int64, loss float64, own float64, now time.Time) {
	// In async mode the parameter servers may have passed v when they
	// wrote a checkpoint: the sample names the checkpoint's step then.
	step := max(v, c.ckptStep)
	s := structs.Sample{
		Namespace:      c.cfg.Namespace,
		JobID:          c.cfg.JobID,
		Role:           structs.RoleWorker,
		Rank:           c.cfg.Rank,
		Step:           step,
		Epoch:          float64(step) / float64(c.cfg.StepsPerEpoch),
		Loss:           loss,
		CheckpointStep: c.ckptStep,
		NumPS:          c.cfg.NumPS,
		NumWorkers:     c.cfg.NumWorkers,
		Time:           now.UnixNano(),
		AllocID:        c.cfg.AllocID,
		TaskStepTimeS:  own,
		GPUType:        c.cfg.GPU.Model,
	}
	batch := c.cfg.samplesPerStep()
	s.BatchSize, s.LocalBatchSize, s.AccumSteps = batch, int64(c.cfg.LocalBatch), int64(c.cfg.AccumSteps)
	if sqr, variance, ok := c.noise.estimates(int(batch), c.cfg.RefBatch); ok {
		s.GradSqr, s.GradVar = sqr, variance
	}
	if steps := v - c.lastStep; steps > 0 {
		s.StepTimeS = now.Sub(c.lastTime).Seconds() / float64(steps)
		s.Samples = batch
		if c.acc.iters > 0 {
			s.CPUS = c.acc.cpu.Seconds() / float64(c.acc.iters)
			s.NetS = c.acc.net.Seconds() / float64(c.acc.iters)
		}
	}
	c.rep.Report(s)
	c.log.Debug("reported", "step", s.Step, "loss", s.Loss, "step_time_s", s.StepTimeS, "cpu_s", s.CPUS, "net_s", s.NetS, "checkpoint_step", s.CheckpointStep,
		"batch_size", s.BatchSize, "grad_sqr", s.GradSqr, "grad_var", s.GradVar)
	c.lastStep, c.lastTime, c.acc = v, now, stepTimes{}
}

// checkpoint has every parameter server write its slice at step v, then
// writes the manifest naming them, and only then counts the checkpoint.
func (c *chief) checkpoint(ctx context.Context, w *worker, v int64, loss float64) error {
	start := time.Now()
	tag := fmt.Sprintf("%s%d-%s", checkpointPrefix, v, randomID()[:6])
	refs := make([]shardRef, len(w.ps))
	errs := make([]error, len(w.ps))
	var wg sync.WaitGroup
	for i, p := range w.ps {
		wg.Go(func() {
			var reply CheckpointReply
			errs[i] = p.call(ctx, "PS.Checkpoint", CheckpointArgs{Tag: tag, Step: v}, &reply, &reply.Incarnation, c.cfg.RPCTimeout)
			refs[i] = reply.Shard
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	m := &manifest{
		Version:     manifestVersion,
		JobID:       c.cfg.JobID,
		Step:        slices.MinFunc(refs, func(a, b shardRef) int { return cmp.Compare(a.Step, b.Step) }).Step,
		Features:    c.cfg.Features,
		Shards:      refs,
		Loss:        loss,
		Epoch:       c.epoch,
		EpochLoss:   c.epochLoss,
		EpochsBelow: c.below,
		Generation:  c.cfg.Generation,
		NumPS:       c.cfg.NumPS,
		NumWorkers:  c.cfg.NumWorkers,
		GlobalBatch: c.cfg.GlobalBatch,
		GradSqr:     c.noise.sqr,
		GradVarRef:  c.noise.varRef,
		GradWeight:  c.noise.weight,
	}
	root := ckptRoot(c.cfg.CheckpointDir)
	if err := writeManifest(root, m); err != nil {
		return err
	}
	c.current, c.ckptStep = m, m.Step
	c.log.Info("checkpoint written", "step", m.Step, "loss", loss, "dir", tag, "duration", time.Since(start))
	if err := removeOldCheckpoints(root, tag); err != nil {
		c.log.Warn("could not remove older checkpoints", "error", err)
	}
	return nil
}
