package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shoenig/test/must"
	"gonum.org/v1/gonum/mat"
)

// seq2seq is the loss curve the Optimus paper fits for Seq2Seq (Fig. 5):
// l(k) = 1/(0.21·k + 1.07) + 0.07, with k in epochs.
func seq2seq(k float64) float64 { return 1/(0.21*k+1.07) + 0.07 }

// noisyCurve samples curve at steps 0, 1/perEpoch, … up to epochs, with
// multiplicative Gaussian noise of relative size noise.
func noisyCurve(rng *rand.Rand, curve func(float64) float64, epochs float64, perEpoch int, noise float64) []LossPoint {
	var pts []LossPoint
	for i := 0; float64(i) <= epochs*float64(perEpoch); i++ {
		k := float64(i) / float64(perEpoch)
		pts = append(pts, LossPoint{Step: k, Loss: curve(k) * (1 + noise*rng.NormFloat64())})
	}
	return pts
}

func TestFitLoss_RecoversSeq2Seq(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	pts := noisyCurve(rng, seq2seq, 100, 4, 0.02)
	fit, err := FitLoss(pts, LossOptions{})
	must.NoError(t, err)

	b0, b1, b2 := fit.Coefficients()
	t.Logf("fitted b = (%.4f, %.4f, %.4f), rmse %.4f over %d points", b0, b1, b2, fit.RMSE, fit.Points)
	must.Between(t, 0.21*0.9, b0, 0.21*1.1)
	must.Between(t, 1.07*0.9, b1, 1.07*1.1)
	must.Between(t, 0.07*0.9, b2, 0.07*1.1)
	for k := 0.0; k <= 100; k += 5 {
		must.Between(t, seq2seq(k)*0.98, fit.At(k), seq2seq(k)*1.02, must.Sprintf("loss at %v", k))
	}
}

// TestFitLoss_B2Search checks the reason for the 1-D search: with b2 forced
// to 0 the curve cannot be fitted well, so the searched b2 must do better.
func TestFitLoss_B2Search(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pts := noisyCurve(rng, seq2seq, 60, 2, 0.01)
	fit, err := FitLoss(pts, LossOptions{})
	must.NoError(t, err)
	f := newLossFitter(Preprocess(pts, LossOptions{}))
	for i := range f.points {
		f.points[i].Loss /= fit.Scale
	}
	must.Less(t, f.sse(0)/4, f.sse(fit.B2), must.Sprint("searched b2 should fit far better than b2 = 0"))
}

// TestFitLoss_RemainingErrorShrinks fits growing prefixes of a curve and
// checks that the predicted number of steps to convergence gets closer to
// the truth as more of the curve is seen, as Optimus Fig. 6 shows.
func TestFitLoss_RemainingErrorShrinks(t *testing.T) {
	const threshold, patience, perEpoch = 0.01, 1, 10
	truth := (&Loss{B0: 0.21, B1: 1.07, B2: 0.07, Scale: 1}).StepsToConverge(threshold, patience, 1, 0)
	t.Logf("true convergence at epoch %.1f", truth)
	rng := rand.New(rand.NewPCG(11, 12))
	all := noisyCurve(rng, seq2seq, truth, perEpoch, 0.03)

	var errs []float64
	for _, frac := range []float64{0.1, 0.3, 0.6, 0.9} {
		seen := all[:int(frac*float64(len(all)))]
		fit, err := FitLoss(seen, LossOptions{StepsPerEpoch: 1})
		must.NoError(t, err)
		pred := fit.StepsToConverge(threshold, patience, 1, 0)
		current := seen[len(seen)-1].Step
		relErr := math.Abs((pred-current)-(truth-current)) / (truth - current)
		t.Logf("seen %.0f%%: predicted %.1f epochs, remaining error %.1f%%", frac*100, pred, relErr*100)
		errs = append(errs, relErr)
	}
	for i := 1; i < len(errs); i++ {
		must.LessEq(t, errs[i-1]+0.02, errs[i], must.Sprintf("error grew from %.3f to %.3f", errs[i-1], errs[i]))
	}
	must.Less(t, 0.1, errs[len(errs)-1])
}

func TestPreprocess(t *testing.T) {
	pts := []LossPoint{
		{Step: 4, Loss: 0.6}, {Step: 0, Loss: 1.0}, {Step: 1, Loss: 0.9}, {Step: 2, Loss: 5.0}, // spike
		{Step: 3, Loss: 0.7}, {Step: 5, Loss: math.NaN()}, {Step: 6, Loss: 0.5}, {Step: -1, Loss: 1},
	}
	got := Preprocess(pts, LossOptions{})
	// The spike is replaced by the median of its window {1.0, 0.9, 5.0, 0.7, 0.6}.
	must.Eq(t, []LossPoint{{0, 1.0}, {1, 0.9}, {2, 0.9}, {3, 0.7}, {4, 0.6}, {6, 0.5}}, got)

	avg := Preprocess([]LossPoint{{0, 1}, {1, 0.9}, {2, 0.8}, {3, 0.7}}, LossOptions{StepsPerEpoch: 2})
	must.Eq(t, []LossPoint{{0.5, 0.95}, {2.5, 0.75}}, avg)
}

func TestFitLoss_TooFew(t *testing.T) {
	_, err := FitLoss([]LossPoint{{0, 1}, {1, 0.5}, {1, 0.5}}, LossOptions{})
	must.ErrorIs(t, err, ErrTooFewPoints)
}

func TestStepsToConverge(t *testing.T) {
	l := &Loss{B0: 0.21, B1: 1.07, B2: 0.07, Scale: 1}
	k := l.StepsToConverge(0.01, 0, 1, 0)
	rel := func(k float64) float64 { return (l.At(k) - l.At(k+1)) / l.At(k) }
	must.Less(t, 0.01, rel(k))
	must.Greater(t, 0.01, rel(k-1))
	must.Eq(t, k+3, l.StepsToConverge(0.01, 3, 1, 0))
	must.Eq(t, 10, l.StepsToConverge(0.01, 3, 1, 10), must.Sprint("max_epochs caps it"))
	must.Eq(t, 0+2*5, (&Loss{B1: 1, Scale: 1}).StepsToConverge(0.01, 2, 5, 0), must.Sprint("a flat curve has converged"))
	// Steps beyond 2^53, where adjacent floats are 2 or more apart: the
	// bisection looped for ever (issue 26).
	huge := (&Loss{B0: 1e-16, B1: 0.01, B2: 0, Scale: 1}).StepsToConverge(0.9, 1, 1e17, 0)
	must.Greater(t, 1e17, huge)
}

// TestLossFitter_MatchesNNLS checks the closed-form two-variable solve
// against the general NNLS on the same weighted problems.
func TestLossFitter_MatchesNNLS(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for trial := range 300 {
		var pts []LossPoint
		for i := range 3 + rng.IntN(40) {
			pts = append(pts, LossPoint{Step: float64(i) * (1 + rng.Float64()), Loss: 0.1 + rng.Float64()})
		}
		minLoss := math.Inf(1)
		for _, p := range pts {
			minLoss = math.Min(minLoss, p.Loss)
		}
		b2 := rng.Float64() * minLoss * 0.99
		b0, b1, err := newLossFitter(pts).solve(b2)
		must.NoError(t, err)

		a := mat.NewDense(len(pts), 2, nil)
		y := make([]float64, len(pts))
		for i, p := range pts {
			d := p.Loss - b2
			a.Set(i, 0, d*d*p.Step)
			a.Set(i, 1, d*d)
			y[i] = d
		}
		x, err := NNLS(a, y)
		must.NoError(t, err)
		tol := 1e-6 * (1 + math.Abs(x[0]) + math.Abs(x[1]))
		must.Between(t, x[0]-tol, b0, x[0]+tol, must.Sprintf("trial %d b0", trial))
		must.Between(t, x[1]-tol, b1, x[1]+tol, must.Sprintf("trial %d b1", trial))
	}
}
