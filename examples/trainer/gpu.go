package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
)

// What the e2e fake GPU device plugin (e2e/fakegpu) tells a task of its
// GPUs, where a real trainer would ask the GPU itself (its CUDA device
// name and memory): their model, memory (MiB) and speed relative to 1.
const (
	envGPUModel  = "FAKEGPU_MODEL"
	envGPUMemory = "FAKEGPU_MEMORY_MIB"
	envGPUSpeed  = "FAKEGPU_SPEED"
)

// A profiling run (the nomad driver's ProfileTypes, Sia §3.1) sets these:
// the per-GPU batches to measure, comma-separated and ascending, and the
// steps to time at each after a first, untimed one.
const (
	envProfileBatches = "CARAVAN_PROFILE_BATCHES"
	envProfileSteps   = "CARAVAN_PROFILE_STEPS"
)

// defaultProfileSteps is the steps timed at each batch of a profiling run
// without CARAVAN_PROFILE_STEPS.
const defaultProfileSteps = 3

// gpu is what a worker knows of the GPU it runs on: nothing (a zero gpu,
// speed 1) outside the fake GPUs.
type gpu struct {
	Model     string
	MemoryMiB int64
	Speed     float64
}

// readGPU reads the fake GPU's environment; errs gets what is malformed.
func readGPU(e *envReader) gpu {
	g := gpu{Model: e.str(envGPUModel, ""), Speed: e.float(envGPUSpeed, 1)}
	g.MemoryMiB = int64(e.int(envGPUMemory, 0, false))
	if !(g.Speed > 0) {
		e.errs = append(e.errs, fmt.Errorf("%s=%v: must be positive", envGPUSpeed, g.Speed))
	}
	if g.MemoryMiB < 0 {
		e.errs = append(e.errs, fmt.Errorf("%s=%d: must not be negative", envGPUMemory, g.MemoryMiB))
	}
	return g
}

// parseProfileBatches reads CARAVAN_PROFILE_BATCHES: ascending positive
// batches, nil when unset.
func parseProfileBatches(v string) ([]int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || b < 1 || b > structs.MaxBatchSize {
			return nil, fmt.Errorf("%s=%q: %q is not a batch size from 1 to %d", envProfileBatches, v, f, structs.MaxBatchSize)
		}
		if len(out) > 0 && b <= out[len(out)-1] {
			return nil, fmt.Errorf("%s=%q: batches must ascend", envProfileBatches, v)
		}
		out = append(out, b)
	}
	return out, nil
}

// errOutOfMemory is a local batch the GPU's memory does not hold.
var errOutOfMemory = errors.New("out of GPU memory")

// fits says whether a local batch of examples fits the GPU's memory at
// -sample-memory-mib each; with either unknown, it does.
func (c *config) fits(local int) error {
	need := c.SampleMemoryMiB * float64(local)
	if c.GPU.MemoryMiB <= 0 || c.SampleMemoryMiB <= 0 || need <= float64(c.GPU.MemoryMiB) {
		return nil
	}
	return fmt.Errorf("%w: a local batch of %d needs %.0f MiB at -sample-memory-mib=%g, and the %s has %d MiB",
		errOutOfMemory, local, need, c.SampleMemoryMiB, cmp.Or(c.GPU.Model, "GPU"), c.GPU.MemoryMiB)
}

// computeTime is the simulated accelerator time of examples examples:
// -sample-cost each, on a GPU of the fake GPU's speed.
func (c *config) computeTime(examples int) time.Duration {
	return time.Duration(float64(c.SampleCost) * float64(examples) / c.GPU.Speed)
}

// runProfile is a profiling run: on its one GPU, with no parameter
// server, it times each batch of ProfileBatches in turn, smallest first,
// as a step of one worker computes it (the gradient of the batch and the
// simulated accelerator time), and reports a Profile sample per timed
// step with the GPU's model. It stops at the first batch the GPU's memory
// does not hold: the larger ones would not fit either. It writes no
// checkpoint, and the job's own tasks never see it.
func runProfile(ctx context.Context, cfg *config, log hclog.Logger, rep reporter) error {
	pc := *cfg
	pc.NumWorkers, pc.NumPS = 1, max(cfg.NumPS, 1)
	data := newDataset(cfg.Seed, cfg.Features, cfg.Examples)
	w := &worker{cfg: &pc, log: log, data: data, pass: make([]float64, cfg.Features), sqr: make([]float64, pc.NumPS)}
	params := make([]float64, cfg.Features)
	grad := make([]float64, cfg.Features)
	for _, b := range cfg.ProfileBatches {
		if err := cfg.fits(b); err != nil {
			log.Info("profiling stops at a batch the GPU does not hold", "batch", b, "error", err)
			break
		}
		for k := range cfg.ProfileSteps + 1 {
			start := time.Now()
			w.gradient(params, []batch{data.trainBatch(int64(k), 0, 0, b)}, grad)
			if err := sleep(ctx, cfg.computeTime(b)); err != nil {
				return err
			}
			if k == 0 {
				continue // the first step warms up
			}
			took := time.Since(start).Seconds()
			rep.Report(structs.Sample{
				Namespace: cfg.Namespace, JobID: cfg.JobID, Role: structs.RoleWorker, Rank: 0,
				StepTimeS: took, CPUS: took, NumWorkers: 1, BatchSize: int64(b), LocalBatchSize: int64(b),
				GPUType: cfg.GPU.Model, Profile: true, Time: time.Now().UnixNano(), AllocID: cfg.AllocID,
			})
		}
		log.Info("profiled", "batch", b, "gpu", cfg.GPU.Model, "steps", cfg.ProfileSteps)
	}
	return nil
}
