package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shoenig/test/must"
)

// The speed functions below have coefficients of a plausible size for the
// paper's jobs (step times from tenths of a second to seconds with tens of
// workers). The Optimus paper's Table 2 is not available here, so these are
// not its numbers; what the tests check is the paper's claim that 10 sampled
// (p, w) points with noise predict the speed everywhere within 10%. The
// points are those of ProfileConfigs, the profiling design Caravan uses:
// uniformly random points often miss small worker counts, and then nothing
// pins down the compute term θ0·M/w (errors of 200% at w = 1 were seen).
var speedTruth = []*Speed{
	{Kind: SpeedSync, Batch: 512, Theta: [5]float64{0.0015, 0.08, 0.03, 0.004, 0.01}},
	{Kind: SpeedAsync, Theta: [5]float64{0.9, 0.25, 0.01, 0.02}},
	{Kind: SpeedAllReduce, Batch: 256, Theta: [5]float64{0.002, 0.05, 0.12, 0.003}},
}

func TestFitSpeed_Prediction(t *testing.T) {
	for _, truth := range speedTruth {
		t.Run(truth.Kind, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, 22))
			configs := ProfileConfigs(truth.Kind, 1, 16, 1, 32, 10)
			must.SliceLen(t, 10, configs)
			var worst float64
			for trial := range 20 {
				pts := make([]SpeedPoint, len(configs))
				for i, c := range configs {
					c.Speed = truth.At(c.PS, c.Workers) * (1 + 0.05*rng.NormFloat64())
					pts[i] = c
				}
				fit, err := FitSpeed(truth.Kind, truth.Batch, pts)
				must.NoError(t, err)
				sum, n := 0.0, 0
				for p := 1; p <= 16; p++ {
					for w := 1; w <= 32; w++ {
						sum += math.Abs(fit.At(p, w)-truth.At(p, w)) / truth.At(p, w)
						n++
					}
				}
				mean := sum / float64(n)
				worst = math.Max(worst, mean)
				must.Less(t, 0.10, mean, must.Sprintf("trial %d: mean relative error %.3f", trial, mean))
			}
			t.Logf("%s: worst mean relative error over 20 trials of 10 points with 5%% noise: %.1f%%", truth.Kind, worst*100)
		})
	}
}

func TestProfileConfigs(t *testing.T) {
	got := ProfileConfigs(SpeedSync, 1, 16, 1, 32, 10)
	must.SliceLen(t, 10, got)
	seen := map[[2]int]bool{}
	workers, ps := map[int]bool{}, map[int]bool{}
	for _, c := range got {
		must.False(t, seen[[2]int{c.PS, c.Workers}], must.Sprintf("duplicate %v", c))
		seen[[2]int{c.PS, c.Workers}] = true
		must.Between(t, 1, c.PS, 16)
		must.Between(t, 1, c.Workers, 32)
		workers[c.Workers], ps[c.PS] = true, true
	}
	must.True(t, workers[1] && workers[32], must.Sprint("the extremes of the worker range are measured"))
	must.GreaterEq(t, 4, len(ps), must.Sprint("several PS counts are measured"))
	must.Eq(t, got, ProfileConfigs(SpeedSync, 1, 16, 1, 32, 10), must.Sprint("deterministic"))

	// Configurations stay within the job's bounds: a job that needs 32 GPUs
	// for its batch is never measured on fewer.
	for _, c := range ProfileConfigs(SpeedAllReduce, 0, 0, 32, 64, 6) {
		must.Between(t, 32, c.Workers, 64)
	}

	for _, c := range ProfileConfigs(SpeedAllReduce, 0, 0, 1, 8, 10) {
		must.Eq(t, 0, c.PS)
	}
	must.Eq(t, []SpeedPoint{{PS: 1, Workers: 1}}, ProfileConfigs(SpeedSync, 1, 1, 1, 1, 10), must.Sprint("only (1,1) exists"))
}

func TestFitSpeed_ExactRecovery(t *testing.T) {
	truth := speedTruth[0]
	var pts []SpeedPoint
	for _, pw := range [][2]int{{1, 1}, {1, 4}, {2, 2}, {2, 8}, {4, 4}, {4, 16}, {8, 8}, {8, 32}, {3, 12}, {6, 6}} {
		pts = append(pts, SpeedPoint{PS: pw[0], Workers: pw[1], Speed: truth.At(pw[0], pw[1])})
	}
	fit, err := FitSpeed(SpeedSync, 512, pts)
	must.NoError(t, err)
	must.Less(t, 1e-6, fit.RelRMSE)
	for i, want := range truth.Theta {
		must.Between(t, want*0.999-1e-9, fit.Theta[i], want*1.001+1e-9)
	}
}

func TestFitSpeed_Errors(t *testing.T) {
	_, err := FitSpeed("ring", 1, []SpeedPoint{{1, 1, 1}})
	must.ErrorContains(t, err, `unknown speed model "ring"`)
	_, err = FitSpeed(SpeedSync, 0, []SpeedPoint{{1, 1, 1}})
	must.ErrorIs(t, err, ErrIllPosed)
	_, err = FitSpeed(SpeedAsync, 0, []SpeedPoint{{0, 1, 1}, {1, 1, math.NaN()}, {1, 0, 2}})
	must.ErrorIs(t, err, ErrTooFewPoints)
	must.Eq(t, 0, speedTruth[0].At(0, 4))
	must.Eq(t, 0, speedTruth[0].At(1, 0))
}
