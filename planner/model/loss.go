package model

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// ErrTooFewPoints is returned by a fit that has fewer distinct points than
// it needs.
var ErrTooFewPoints = errors.New("too few points to fit")

// LossPoint is one observation of a job's training loss after Step steps.
type LossPoint struct {
	Step float64
	Loss float64
}

// Loss is the fitted loss curve of Optimus eq. 1,
//
//	l(k) = Scale · (1/(B0·k + B1) + B2),   B0, B1, B2 ≥ 0,
//
// where the B are fitted to losses normalised by Scale, the largest loss
// seen, so that jobs with different loss ranges fit alike.
type Loss struct {
	B0, B1, B2 float64
	Scale      float64
	// RMSE is the fit's root-mean-square residual in normalised units.
	RMSE float64
	// Points is how many (preprocessed) points the fit used.
	Points int
}

// At returns the predicted loss after step steps.
func (l *Loss) At(step float64) float64 {
	return l.Scale * (1/(l.B0*step+l.B1) + l.B2)
}

// Coefficients returns (b0, b1, b2) of l(k) = 1/(b0·k + b1) + b2 in the
// loss's own units.
func (l *Loss) Coefficients() (b0, b1, b2 float64) {
	return l.B0 / l.Scale, l.B1 / l.Scale, l.B2 * l.Scale
}

// LossOptions tune preprocessing. The zero value keeps every point.
type LossOptions struct {
	// StepsPerEpoch, when positive, averages the points of each epoch into
	// one, which bounds the number of points a fit uses.
	StepsPerEpoch float64
}

// Preprocess prepares raw observations for fitting as Optimus §3.1 does: it
// drops non-finite and negative points, sorts by step, replaces outliers by
// the median of their neighbours, and averages each epoch's points when
// opts.StepsPerEpoch is set. The input is not modified.
func Preprocess(points []LossPoint, opts LossOptions) []LossPoint {
	out := make([]LossPoint, 0, len(points))
	for _, p := range points {
		if finite(p.Step) && finite(p.Loss) && p.Step >= 0 && p.Loss >= 0 {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	out = replaceOutliers(out)
	if opts.StepsPerEpoch > 0 {
		out = averageEpochs(out, opts.StepsPerEpoch)
	}
	return out
}

// replaceOutliers replaces a point whose loss deviates from the median of
// its window (two neighbours on each side) by more than three times the
// window's median absolute deviation, and by more than 1% of the median:
// a spike from a bad batch or a restart, not the curve's trend.
func replaceOutliers(points []LossPoint) []LossPoint {
	const half = 2
	if len(points) < 2*half+1 {
		return points
	}
	out := slices.Clone(points)
	window := make([]float64, 0, 2*half+1)
	dev := make([]float64, 0, 2*half+1)
	for i := range points {
		lo, hi := max(0, i-half), min(len(points), i+half+1)
		window = window[:0]
		for _, p := range points[lo:hi] {
			window = append(window, p.Loss)
		}
		med := Median(window)
		dev = dev[:0]
		for _, v := range window {
			dev = append(dev, math.Abs(v-med))
		}
		mad := Median(dev)
		if d := math.Abs(points[i].Loss - med); d > 3*mad && d > 0.01*med {
			out[i].Loss = med
		}
	}
	return out
}

// Median sorts xs in place and returns its median; xs must not be
// empty.
func Median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func averageEpochs(points []LossPoint, stepsPerEpoch float64) []LossPoint {
	var out []LossPoint
	for i := 0; i < len(points); {
		epoch := math.Floor(points[i].Step / stepsPerEpoch)
		var sum LossPoint
		j := i
		for ; j < len(points) && math.Floor(points[j].Step/stepsPerEpoch) == epoch; j++ {
			sum.Step += points[j].Step
			sum.Loss += points[j].Loss
		}
		n := float64(j - i)
		out = append(out, LossPoint{Step: sum.Step / n, Loss: sum.Loss / n})
		i = j
	}
	return out
}

// FitLoss fits the loss curve to points, which are preprocessed first (see
// Preprocess). It needs at least three points at distinct steps.
//
// The model is non-linear in B2, so FitLoss searches B2 in one dimension and
// solves the rest linearly. For a fixed B2 the model is linear after a
// change of variable, 1/(l − B2) = B0·k + B1, solved with NNLS; each row is
// weighted by (l − B2)², the derivative of that change, so that the linear
// fit approximates least squares on the loss itself. The B2 minimising the
// residual in loss space is found by a grid over [0, min l), then a
// golden-section search around the best grid point.
func FitLoss(points []LossPoint, opts LossOptions) (*Loss, error) {
	pts := Preprocess(points, opts)
	if distinctSteps(pts) < 3 {
		return nil, fmt.Errorf("%w: loss curve needs 3 distinct steps, has %d", ErrTooFewPoints, distinctSteps(pts))
	}
	scale := 0.0
	minLoss := math.Inf(1)
	for _, p := range pts {
		scale = math.Max(scale, p.Loss)
		minLoss = math.Min(minLoss, p.Loss)
	}
	if scale == 0 {
		return nil, fmt.Errorf("%w: every loss is 0", ErrIllPosed)
	}
	norm := make([]LossPoint, len(pts))
	for i, p := range pts {
		norm[i] = LossPoint{Step: p.Step, Loss: p.Loss / scale}
	}
	upper := minLoss / scale * (1 - 1e-6)

	f := newLossFitter(norm)
	const grid = 24
	bestB2, bestErr := 0.0, math.Inf(1)
	for i := range grid {
		b2 := upper * float64(i) / grid
		if e := f.sse(b2); e < bestErr {
			bestB2, bestErr = b2, e
		}
	}
	step := upper / grid
	lo, hi := math.Max(0, bestB2-step), math.Min(upper, bestB2+step)
	b2 := goldenSection(f.sse, lo, hi, 40)
	if f.sse(b2) > bestErr {
		b2 = bestB2
	}
	b0, b1, err := f.solve(b2)
	if err != nil {
		return nil, err
	}
	return &Loss{B0: b0, B1: b1, B2: b2, Scale: scale, RMSE: math.Sqrt(f.sse(b2) / float64(len(norm))), Points: len(norm)}, nil
}

// lossFitter fits B0 and B1 for given B2 values over one set of points.
type lossFitter struct {
	points []LossPoint
}

func newLossFitter(points []LossPoint) *lossFitter { return &lossFitter{points: points} }

// solve fits B0 and B1 ≥ 0 for a fixed B2: the weighted least squares of
// 1/(l − B2) = B0·k + B1, rows weighted by (l − B2)². With two unknowns,
// NNLS has a closed form: the unconstrained solution of the 2×2 normal
// equations when both coefficients are non-negative, otherwise the better
// of the two one-coefficient fits. It is O(points) and allocates nothing;
// the fit calls it some 60 times.
func (f *lossFitter) solve(b2 float64) (b0, b1 float64, err error) {
	var s00, s01, s11, t0, t1 float64
	for _, p := range f.points {
		d := p.Loss - b2 // > 0: b2 < min loss
		w := d * d
		a0, a1, y := w*p.Step, w, w/d
		s00 += a0 * a0
		s01 += a0 * a1
		s11 += a1 * a1
		t0 += a0 * y
		t1 += a1 * y
	}
	if !finite(s00) || !finite(s11) || !finite(t0) || !finite(t1) {
		return 0, 0, fmt.Errorf("%w: loss fit at b2 = %v", ErrIllPosed, b2)
	}
	// cost is the residual up to a constant, for comparing candidates.
	cost := func(x0, x1 float64) float64 {
		return s00*x0*x0 + 2*s01*x0*x1 + s11*x1*x1 - 2*(t0*x0+t1*x1)
	}
	if det := s00*s11 - s01*s01; det > 1e-12*s00*s11 {
		x0, x1 := (t0*s11-t1*s01)/det, (s00*t1-s01*t0)/det
		if x0 >= 0 && x1 >= 0 {
			return x0, x1, nil
		}
	}
	best0, best1, bestCost := 0.0, 0.0, 0.0 // both zero
	if s00 > 0 {
		if x0 := max(t0/s00, 0); cost(x0, 0) < bestCost {
			best0, best1, bestCost = x0, 0, cost(x0, 0)
		}
	}
	if s11 > 0 {
		if x1 := max(t1/s11, 0); cost(0, x1) < bestCost {
			best0, best1 = 0, x1
		}
	}
	return best0, best1, nil
}

// sse is the sum of squared residuals in (normalised) loss space for the
// best B0, B1 given B2.
func (f *lossFitter) sse(b2 float64) float64 {
	b0, b1, err := f.solve(b2)
	if err != nil || (b0 <= 0 && b1 <= 0) {
		return math.Inf(1)
	}
	sum := 0.0
	for _, p := range f.points {
		r := p.Loss - (1/(b0*p.Step+b1) + b2)
		sum += r * r
	}
	if !finite(sum) {
		return math.Inf(1)
	}
	return sum
}

// goldenSection minimises a unimodal f on [lo, hi].
func goldenSection(f func(float64) float64, lo, hi float64, iters int) float64 {
	const invPhi = 0.6180339887498949
	a, b := lo, hi
	c, d := b-invPhi*(b-a), a+invPhi*(b-a)
	fc, fd := f(c), f(d)
	for range iters {
		if fc < fd {
			b, d, fd = d, c, fc
			c = b - invPhi*(b-a)
			fc = f(c)
		} else {
			a, c, fc = c, d, fd
			d = a + invPhi*(b-a)
			fd = f(d)
		}
	}
	return (a + b) / 2
}

// StepsToConverge predicts the total number of steps after which the job is
// converged: the first step k from which the loss decreases by less than
// threshold (relative, per epoch of stepsPerEpoch steps) for patience
// epochs, capped at maxEpochs epochs when maxEpochs > 0. It returns +Inf when
// the curve never slows down that much (B0 = 0 and no cap cannot happen: a
// flat curve has converged at once).
func (l *Loss) StepsToConverge(threshold float64, patience int, stepsPerEpoch, maxEpochs float64) float64 {
	limit := math.Inf(1)
	if maxEpochs > 0 {
		limit = maxEpochs * stepsPerEpoch
	}
	slow := func(k float64) bool {
		lk := l.At(k)
		return lk <= 0 || (lk-l.At(k+stepsPerEpoch))/lk < threshold
	}
	// The relative decrease per epoch only shrinks as k grows, so search
	// for the first slow step: double until slow, then bisect.
	hi := stepsPerEpoch
	for !slow(hi) {
		hi *= 2
		if hi > limit || hi > 1e15 {
			return limit
		}
	}
	lo := 0.0
	if slow(lo) {
		hi = 0
	}
	// Bounded by construction: 64 halvings narrow any float range to
	// nothing, and past 2^53 a range of two adjacent floats would never
	// narrow below 1.
	for range 64 {
		if hi-lo <= 1 {
			break
		}
		mid := (lo + hi) / 2
		if slow(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return math.Min(hi+float64(patience)*stepsPerEpoch, limit)
}

func distinctSteps(points []LossPoint) int {
	n := 0
	for i, p := range points {
		if i == 0 || p.Step != points[i-1].Step {
			n++
		}
	}
	return n
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
