package goodput

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

func near(t *testing.T, want, got, tol float64, msg ...any) {
	t.Helper()
	must.True(t, math.Abs(want-got) <= tol, must.Sprintf("want %v, got %v (tolerance %v) %v", want, got, tol, fmt.Sprint(msg...)))
}

// TestEfficiency checks the statistical efficiency against values worked
// by hand from cifar10's first epoch at batch 128 (validation-128.csv:
// grad_sqr 8.947307535897329, grad_var 5.066593295150894).
func TestEfficiency(t *testing.T) {
	g := GradParams{Sqr: 8.947307535897329, Var: 5.066593295150894}
	// φ = 128 × 5.0666 / 8.9473 = 72.4826...
	near(t, 72.48265, g.NoiseScale(128), 1e-4)
	for _, tc := range []struct {
		batch float64
		want  float64
	}{
		{128, 1},                       // the reference batch
		{1024, 200.48265 / 1096.48265}, // (φ + M₀)/(φ + M) = 0.182844
		{4096, 200.48265 / 4168.48265},
		{64, 200.48265 / 136.48265}, // a smaller batch: each sample counts more
	} {
		near(t, tc.want, g.Efficiency(tc.batch, 128), 1e-6, tc.batch)
	}
	// Without statistics a sample of a larger batch counts for 1/scale.
	near(t, 0.25, GradParams{}.Efficiency(512, 128), 1e-12)
	// All noise: every sample counts fully.
	near(t, 1, GradParams{Var: 1}.Efficiency(4096, 128), 1e-12)
	// Statistics measured at another batch convert to the reference.
	at := AtReference(2, 0.5, 512, 128)
	near(t, 2, at.Var, 1e-12)
	near(t, at.NoiseScale(128), 0.5*512/2, 1e-9, "the noise scale does not depend on the batch it was measured at")
}

// TestEfficiency_Traces replays each run of the traces' validation files:
// each epoch's progress (in samples at the reference batch) divided by
// the gain (efficiency × scale) that epoch's gradient statistics give is
// the steps the run should have needed, and the sum over the epochs is
// compared with the steps it took. The statistics are per-epoch
// averages, so the prediction drifts where they change within an epoch:
// most at yolov3's largest batches.
func TestEfficiency_Traces(t *testing.T) {
	// The measured relative error of the predicted steps, by model, at
	// the largest batch; smaller batches are closer.
	bound := map[string]float64{
		"bert": 0.01, "cifar10": 0.07, "deepspeech2": 0.025, "imagenet": 0.05, "ncf": 0.015, "yolov3": 0.60,
	}
	for _, model := range traceModels {
		t.Run(model, func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(traces, model, "validation-*.csv"))
			must.NoError(t, err)
			batchOf := func(p string) int {
				b, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "validation-"), ".csv"))
				must.NoError(t, err)
				return b
			}
			sort.Slice(files, func(a, b int) bool { return batchOf(files[a]) < batchOf(files[b]) })
			ref := batchOf(files[0])
			for _, f := range files {
				m := batchOf(f)
				rows := readCSV(t, f)
				var predicted, progress float64
				for _, row := range rows {
					g := GradParams{Sqr: num(t, row["grad_sqr"]), Var: num(t, row["grad_var"])}
					gain := g.Efficiency(float64(m), ref) * float64(m) / float64(ref)
					p := num(t, row["progress"])
					predicted += (p - progress) / gain
					progress = p
				}
				steps := num(t, rows[len(rows)-1]["iteration"])
				e := math.Abs(predicted-steps) / steps
				t.Logf("%s batch %d: predicted %.0f steps, took %.0f (%.1f%%)", model, m, predicted, steps, 100*e)
				must.Less(t, bound[model], e)
			}
		})
	}
}

// cifar is cifar10's throughput model fitted to its traces (rounded).
var cifar = PerfParams{AlphaC: 0.0173, BetaC: 0.0007, AlphaN: 0.121, BetaN: 0.0024, AlphaR: 0.0325, BetaR: 1e-8, Gamma: 2}

func TestPerfParams(t *testing.T) {
	p := PerfParams{AlphaC: 0.1, BetaC: 0.01, AlphaN: 0.5, BetaN: 0.05, AlphaR: 0.2, BetaR: 0.02, Gamma: 1}
	near(t, 0.1+0.01*32, p.ComputeTime(32), 1e-12)
	near(t, 0.5+0.05*6, p.NetworkTime(2, 8), 1e-12, "across nodes")
	near(t, 0.2+0.02*2, p.NetworkTime(1, 4), 1e-12, "within a node")
	near(t, 0.2+0.02*1e-8, p.NetworkTime(1, 2), 1e-12, "two replicas: no retrogression")
	must.Less(t, 1e-7, p.NetworkTime(1, 1))
	// γ = 1: computation and communication add up; two accumulation
	// passes add two computations.
	near(t, 2*0.42+0.42+0.24, p.StepTime(1, 4, 32, 2), 1e-12)
	near(t, 4*32*3/(2*0.42+0.42+0.24), p.Throughput(1, 4, 32, 2), 1e-9)
	// A large γ overlaps them: the step takes about the longer one.
	p.Gamma = 10
	near(t, 0.54, p.SyncTime(0.42, 0.54), 0.02)
	must.Eq(t, []float64{0.1, 0.01, 0.5, 0.05, 0.2, 0.02, 10}, p.Slice())
}

func TestSplit(t *testing.T) {
	lim := Limits{MinBatch: 128, MaxBatch: 4096, MinLocal: 32, MaxLocal: 256, Accumulation: true}
	for _, tc := range []struct {
		batch        float64
		replicas     int
		local, accum int
		name         string
	}{
		{1024, 4, 256, 0, "fits a pass"},
		{1024, 2, 256, 1, "two passes of 256"},
		{1000, 3, 167, 1, "333.3 a replica: two passes, rounded up"},
		{256, 1, 128, 1, "one replica above the reference accumulates at least once"},
		{128, 1, 128, 0, "one replica at the reference"},
		{4096, 3, 227, 5, "3 × 228 × 6 = 4104 would pass the maximum: 227"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			local, accum := Split(tc.batch, tc.replicas, 128, lim)
			must.Eq(t, [2]int{tc.local, tc.accum}, [2]int{local, accum})
			must.LessEq(t, lim.MaxBatch, tc.replicas*local*(accum+1))
		})
	}
	// Without accumulation the share is one pass.
	local, accum := Split(1000, 3, 128, Limits{})
	must.Eq(t, [2]int{334, 0}, [2]int{local, accum})
}

func TestOptimize(t *testing.T) {
	lim := Limits{MinBatch: 128, MaxBatch: 4096, MinLocal: 32, MaxLocal: 256, Accumulation: true}
	t.Run("no noise: the smallest batch", func(t *testing.T) {
		// Each sample of a larger batch counts for less, and the
		// throughput grows less than the batch: the smallest batch wins.
		m := &Model{Perf: cifar, RefBatch: 128}
		c, ok := m.Optimize(1, 4, lim)
		must.True(t, ok)
		must.Eq(t, Config{Global: 128, Local: 32, Accum: 0, Goodput: c.Goodput}, c)
		near(t, m.Goodput(1, 4, 32, 0), c.Goodput, 1e-12)
	})
	t.Run("all noise: the largest batch", func(t *testing.T) {
		// Every sample counts fully: goodput is throughput, which grows
		// with the batch.
		m := &Model{Perf: cifar, Grad: GradParams{Var: 1}, RefBatch: 128}
		c, ok := m.Optimize(2, 8, lim)
		must.True(t, ok)
		must.Eq(t, 4096, c.Global)
		must.Eq(t, [2]int{256, 1}, [2]int{c.Local, c.Accum})
	})
	t.Run("trace statistics: in between, and larger when spread wider", func(t *testing.T) {
		// cifar10 late in training at batch 128 (validation-128.csv,
		// epoch 30-odd): a noise scale of a few hundred samples.
		m := &Model{Perf: cifar, Grad: GradParams{Sqr: 0.25, Var: 1.2}, RefBatch: 128}
		one, ok := m.Optimize(1, 1, lim)
		must.True(t, ok)
		many, ok := m.Optimize(4, 16, lim)
		must.True(t, ok)
		must.Less(t, many.Global, one.Global)
		must.Between(t, 128, one.Global, 4096)
		// No candidate of the 50 does better.
		for _, b := range []float64{128, 512, 1024, 2048, 4096} {
			local, accum := Split(b, 16, 128, lim)
			if local >= 32 && local <= 256 {
				must.LessEq(t, many.Goodput+1e-12, m.Goodput(4, 16, float64(local), accum))
			}
		}
	})
	t.Run("bounds that cannot be kept", func(t *testing.T) {
		m := &Model{Perf: cifar, RefBatch: 128}
		_, ok := m.Optimize(8, 200, lim) // 200 × 32 > 4096
		must.False(t, ok)
	})
	t.Run("fixed batch", func(t *testing.T) {
		m := &Model{Perf: cifar, RefBatch: 512}
		c := m.Fixed(1, 4, 512, Limits{})
		must.Eq(t, [3]int{512, 128, 0}, [3]int{c.Global, c.Local, c.Accum})
		near(t, cifar.Throughput(1, 4, 128, 0), c.Goodput, 1e-12)
	})
}
