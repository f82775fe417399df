package main

import (
	"math"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestGradStats_HandComputed: two workers' gradients over one parameter
// server, pushed as the workers push them, give the statistics worked
// out by hand.
func TestGradStats_HandComputed(t *testing.T) {
	// Microbatch gradients g₁ = (1, 2), g₂ = (3, 0): the step's gradient
	// is (2, 1), |ḡ|² = 5; the mean of |gᵢ|² is (5 + 9)/2 = 7. With k = 2:
	// variance = (7 − 5)/(2 − 1) = 2, sqr = 5 − 2 = 3.
	s := testPS(t, structs.ModeSync, 1, 0, 2)
	s.params = make([]float64, 2)
	s.sum = make([]float64, 2)
	for rank, g := range [][]float64{{1, 2}, {3, 0}} {
		var r PushReply
		must.NoError(t, s.Push(PushArgs{Rank: rank, Version: 0, Grad: g, SqrNorm: g[0]*g[0] + g[1]*g[1], Micro: 1}, &r))
	}
	st := pull(t, s, 0, 1).Stats
	must.Eq(t, GradStats{MicroSqr: 7, MeanSqr: 5, Micro: 2}, st)
	sqr, variance, ok := st.noise()
	must.True(t, ok)
	must.Eq(t, 3.0, sqr)
	must.Eq(t, 2.0, variance)

	// Over two servers the slices' statistics add up to the whole's.
	whole := GradStats{MicroSqr: 1, MeanSqr: 0.5, Micro: 4}.add(GradStats{MicroSqr: 2, MeanSqr: 1.5, Micro: 4})
	must.Eq(t, GradStats{MicroSqr: 3, MeanSqr: 2, Micro: 4}, whole)

	_, _, ok = GradStats{MicroSqr: 3, MeanSqr: 3, Micro: 1}.noise()
	must.False(t, ok, must.Sprint("one microbatch estimates nothing"))
}

// TestWorkerGradient_Microbatches: on a known batch, the norms a worker
// sends are those of its microbatches' gradients computed directly:
// passes with accumulation, the two halves of a lone worker's batch.
func TestWorkerGradient_Microbatches(t *testing.T) {
	const features = 7
	ds := newDataset(3, features, 500)
	params := make([]float64, features)
	for j := range params {
		params[j] = 0.1 * float64(j-3)
	}
	norm := func(g []float64) float64 { return dot(g, g) }
	newWorker := func(workers, accum, local int) *worker {
		cfg := &config{Mode: structs.ModeSync, Features: features, NumPS: 2, NumWorkers: workers, AccumSteps: accum, LocalBatch: local, L2: 0.01}
		return &worker{cfg: cfg, pass: make([]float64, features), sqr: make([]float64, 2)}
	}
	near := func(want, got float64, what string) {
		t.Helper()
		must.Less(t, 1e-12*max(1, math.Abs(want)), math.Abs(want-got), must.Sprintf("%s: want %v, got %v", what, want, got))
	}

	t.Run("a lone worker's halves", func(t *testing.T) {
		w := newWorker(1, 0, 10)
		b := ds.trainBatch(2, 0, 0, 10)
		grad := make([]float64, features)
		w.gradient(params, []batch{b}, grad)
		whole, g1, g2 := make([]float64, features), make([]float64, features), make([]float64, features)
		lossGrad(params, b, 0.01, whole)
		must.Eq(t, whole, grad, must.Sprint("the step's gradient is the batch's, computed as before"))
		lossGrad(params, batch{x: b.x[:5*features], y: b.y[:5]}, 0.01, g1)
		lossGrad(params, batch{x: b.x[5*features:], y: b.y[5:]}, 0.01, g2)
		must.Eq(t, 2, w.micro)
		off, n := partition(features, 2, 0) // [0, 4) and [4, 7)
		near(norm(g1[:n])+norm(g2[:n]), w.sqr[0], "slice 0")
		near(norm(g1[off+n:])+norm(g2[off+n:]), w.sqr[1], "slice 1")
	})
	t.Run("accumulated passes", func(t *testing.T) {
		w := newWorker(2, 2, 6)
		passes := []batch{ds.trainBatch(2, 1, 0, 6), ds.trainBatch(2, 1, 1, 6), ds.trainBatch(2, 1, 2, 6)}
		grad := make([]float64, features)
		w.gradient(params, passes, grad)
		must.Eq(t, 3, w.micro)
		want, sqr := make([]float64, features), 0.0
		for _, b := range passes {
			g := make([]float64, features)
			lossGrad(params, b, 0.01, g)
			sqr += norm(g)
			for j := range g {
				want[j] += g[j] / 3
			}
		}
		for j := range want {
			near(want[j], grad[j], "the step's gradient is the passes' average")
		}
		near(sqr, w.sqr[0]+w.sqr[1], "the passes' squared norms")
	})
	t.Run("async measures nothing", func(t *testing.T) {
		w := newWorker(2, 1, 6)
		w.cfg.Mode = structs.ModeAsync
		w.gradient(params, []batch{ds.trainBatch(2, 1, 0, 6), ds.trainBatch(2, 1, 1, 6)}, make([]float64, features))
		must.Eq(t, 0, w.micro)
	})
}

// TestGain: AdaScale's gain, the factor of the learning rate, on worked
// cases; 1 at the reference batch, whatever the noise.
func TestGain(t *testing.T) {
	noise := func(sqr, varRef float64) *gradNoise { return &gradNoise{sqr: sqr, varRef: varRef, weight: 1} }
	for _, tc := range []struct {
		name       string
		n          *gradNoise
		batch, ref int
		want       float64
	}{
		// r = (σ² + μ²)/(σ²/S + μ²) = (2 + 3)/(2/4 + 3) = 5/3.5.
		{"worked case, 4x the reference", noise(3, 2), 128, 32, 5 / 3.5},
		{"at the reference batch", noise(3, 2), 32, 32, 1},
		{"no measurement yet", &gradNoise{}, 128, 32, 1},
		{"no noise: nothing to gain", noise(3, 0), 128, 32, 1},
		{"all noise: the linear rule", noise(1e-12, 5), 128, 32, 4},
		{"half the reference", noise(3, 2), 16, 32, (2 + 3) / (2/0.5 + 3.0)},
		{"a negative estimate is not used", noise(-1, 2), 128, 32, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			must.Less(t, 1e-9, math.Abs(tc.n.gain(tc.batch, tc.ref)-tc.want), must.Sprintf("gain %v, want %v", tc.n.gain(tc.batch, tc.ref), tc.want))
		})
	}

	// The moving averages: a batch change does not disturb the variance
	// at the reference, and the estimates are bias-corrected.
	var n gradNoise
	n.observe(GradStats{MicroSqr: 7, MeanSqr: 5, Micro: 2}, 64, 32) // sqr 3, variance 2 at 64: 4 at 32
	sqr, variance, ok := n.estimates(64, 32)
	must.True(t, ok)
	must.Less(t, 1e-12, math.Abs(sqr-3))
	must.Less(t, 1e-12, math.Abs(variance-2))
	n.observe(GradStats{MicroSqr: 5, MeanSqr: 4, Micro: 2}, 128, 32) // sqr 3, variance 1 at 128: 4 at 32
	_, variance, _ = n.estimates(32, 32)
	must.Less(t, 1e-12, math.Abs(variance-4))

	// The parameter server applies the chief's gain to the step.
	s := testPS(t, structs.ModeSync, 1, 0, 2) // lr 0.5, 6 parameters
	g := []float64{1, 1, 1, 1, 1, 1}
	must.NoError(t, s.Push(PushArgs{Rank: 1, Version: 0, Grad: g}, &PushReply{}))
	must.NoError(t, s.Push(PushArgs{Rank: 0, Version: 0, Grad: g, LRGain: 1.5}, &PushReply{}))
	must.Eq(t, -0.75, pull(t, s, 0, 1).Params[0], must.Sprint("lr 0.5 × gain 1.5 × gradient 1"))
}

// TestTrainerAdaptiveBatch trains a job at its reference batch with two
// workers, checkpoints it, and resumes it as Caravan would after deciding
// a larger batch: one worker accumulating 4 passes of 32. The trainer
// uses the batch of its environment at each start, reports it with
// finite, positive noise statistics, and resumes at its checkpoint.
func TestTrainerAdaptiveBatch(t *testing.T) {
	dir := t.TempDir()
	flags := []string{"-sample-cost", "50us", "-features", "50"}
	env := func(global, local, accum int) map[string]string {
		e := trainingEnv(structs.ModeSync, global, 1, 50, 1e-9, 1000, 0)
		e[envLocalBatch], e[envAccumSteps], e[envRefBatch] = strconv.Itoa(local), strconv.Itoa(accum), "32"
		// The chief holds at a checkpoint asked for until the stop, at
		// most this long: long enough for the slowest machine.
		e[envCheckpointTimeout] = "1m"
		return e
	}
	coll1 := newCollector(t)
	j1 := startJob(t, jobSpec{ps: 1, workers: 2, generation: "1", dir: dir, collector: coll1, env: env(32, 16, 0), flags: flags})
	coll1.waitSample(t, 30*time.Second, "noise statistics at step 50", func(s structs.Sample) bool { return s.Step >= 50 && s.GradSqr > 0 })
	j1.chief.signal(t, syscall.SIGUSR1)
	ckpt := coll1.waitSample(t, 20*time.Second, "a checkpoint", func(s structs.Sample) bool { return s.CheckpointStep > 0 })
	j1.stop(10 * time.Second)
	// The chief held at the checkpoint until the stop, as in Caravan's
	// rescale protocol: no step past it, and no second checkpoint.
	last := coll1.all()[len(coll1.all())-1]
	must.Eq(t, ckpt.CheckpointStep, last.Step, must.Sprint("no step trained past the checkpoint asked for"))
	must.Eq(t, ckpt.CheckpointStep, last.CheckpointStep)
	for _, s := range coll1.all() {
		must.Eq(t, 32, s.BatchSize)
		must.Eq(t, 16, s.LocalBatchSize)
		must.Eq(t, 0, s.AccumSteps)
	}

	coll2 := newCollector(t)
	j2 := startJob(t, jobSpec{ps: 1, workers: 1, generation: "2", resume: true, dir: dir, collector: coll2, env: env(128, 32, 3), flags: flags})
	resumed := coll2.waitSample(t, 30*time.Second, "the first sample after resuming", func(structs.Sample) bool { return true })
	must.Eq(t, ckpt.CheckpointStep, resumed.Step, must.Sprint("resumed at the checkpoint"))
	later := coll2.waitSample(t, 30*time.Second, "training at the new batch", func(s structs.Sample) bool { return s.Step >= ckpt.CheckpointStep+30 })
	j2.stop(10 * time.Second)
	must.Eq(t, 128, later.BatchSize)
	must.Eq(t, 32, later.LocalBatchSize)
	must.Eq(t, 3, later.AccumSteps)
	must.Eq(t, 128, later.Samples, must.Sprint("one worker, 4 passes of 32"))
	must.GreaterEq(t, (128 * 50 * time.Microsecond).Seconds(), later.CPUS, must.Sprint("the simulated accelerator computes every pass"))
	must.Positive(t, later.GradSqr)
	must.Positive(t, later.GradVar)
	must.False(t, math.IsInf(later.GradSqr+later.GradVar, 0) || math.IsNaN(later.GradSqr+later.GradVar))
	// The noise scale at the reference batch, grad_var × batch / grad_sqr
	// over the reference, is carried over from the checkpoint and
	// measured anew: a logistic regression's per-example gradients are
	// noisy, so it is more than ten examples.
	must.Greater(t, 10.0, later.GradVar*float64(later.BatchSize)/later.GradSqr)
	must.NoError(t, later.Validate())
	t.Logf("at batch %d: grad_sqr %.4g, grad_var %.4g, noise scale %.1f", later.BatchSize, later.GradSqr, later.GradVar, later.GradVar*float64(later.BatchSize)/later.GradSqr)
}

// TestWholeStats: the servers' slices add up; one server without stats,
// wherever it is, leaves the step without any.
func TestWholeStats(t *testing.T) {
	a := GradStats{MicroSqr: 1, MeanSqr: 2, Micro: 4}
	b := GradStats{MicroSqr: 3, MeanSqr: 5, Micro: 4}
	must.Eq(t, GradStats{MicroSqr: 4, MeanSqr: 7, Micro: 4}, wholeStats([]PullReply{{Stats: a}, {Stats: b}}))
	must.Eq(t, GradStats{}, wholeStats([]PullReply{{}, {Stats: b}}), must.Sprint("the first server has none"))
	must.Eq(t, GradStats{}, wholeStats([]PullReply{{Stats: a}, {}}))
}
