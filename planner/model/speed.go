package model

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Speed model kinds.
const (
	// SpeedAsync is Optimus eq. 3 for asynchronous parameter-server training:
	// f(p,w) = w / (θ0 + θ1·w/p + θ2·w + θ3·p).
	SpeedAsync = "async"
	// SpeedSync is Optimus eq. 4 for synchronous parameter-server training
	// with global batch M: f(p,w) = 1 / (θ0·M/w + θ1 + θ2·w/p + θ3·w + θ4·p).
	SpeedSync = "sync"
	// SpeedAllReduce is the synchronous form without parameter servers, for
	// ring all-reduce: f(w) = 1 / (θ0·M/w + θ1 + θ2·(w−1)/w + θ3·w). The
	// (w−1)/w term is the bandwidth cost of a ring, the w term its latency.
	SpeedAllReduce = "allreduce"
)

// SpeedPoint is one observed training speed, in steps per second, with p
// parameter servers and w workers.
type SpeedPoint struct {
	PS      int
	Workers int
	Speed   float64
}

// Speed is a fitted speed function f(p, w) in steps per second. It is a
// plain value; At is allocation-free.
type Speed struct {
	Kind  string
	Theta [5]float64
	// Batch is the global batch size M of the sync and all-reduce forms.
	Batch float64
	// RelRMSE is the root-mean-square relative error of the fit.
	RelRMSE float64
	Points  int
}

// features fills row with the model's terms for (p, w); f(p,w) =
// numerator / (θ · row).
func features(kind string, batch, p, w float64, row *[5]float64) (numerator float64, n int) {
	switch kind {
	case SpeedAsync:
		*row = [5]float64{1, w / p, w, p}
		return w, 4
	case SpeedSync:
		*row = [5]float64{batch / w, 1, w / p, w, p}
		return 1, 5
	default: // SpeedAllReduce
		*row = [5]float64{batch / w, 1, (w - 1) / w, w}
		return 1, 4
	}
}

// At returns the predicted speed with p parameter servers and w workers, in
// steps per second; 0 when w < 1 or, for PS models, p < 1.
func (s *Speed) At(p, w int) float64 {
	if w < 1 || (p < 1 && s.Kind != SpeedAllReduce) {
		return 0
	}
	var row [5]float64
	num, n := features(s.Kind, s.Batch, float64(p), float64(w), &row)
	den := 0.0
	for i := range n {
		den += s.Theta[i] * row[i]
	}
	if den <= 0 {
		return 0
	}
	return num / den
}

// FitSpeed fits a speed function of the given kind to points. batch is the
// global batch size M (ignored by SpeedAsync).
//
// Each form is linear in θ after taking the reciprocal, numerator/f = θ·x,
// which NNLS solves with θ ≥ 0. Rows are divided by their target, so the fit
// minimises relative error: a 10% miss counts the same at 1 and at 100
// steps per second.
func FitSpeed(kind string, batch float64, points []SpeedPoint) (*Speed, error) {
	switch kind {
	case SpeedAsync, SpeedSync, SpeedAllReduce:
	default:
		return nil, fmt.Errorf("unknown speed model %q", kind)
	}
	if kind != SpeedAsync && !(batch > 0) {
		return nil, fmt.Errorf("%w: %s speed model needs a positive batch size, got %v", ErrIllPosed, kind, batch)
	}
	var usable []SpeedPoint
	for _, pt := range points {
		if pt.Workers >= 1 && (pt.PS >= 1 || kind == SpeedAllReduce) && pt.Speed > 0 && finite(pt.Speed) {
			usable = append(usable, pt)
		}
	}
	if len(usable) == 0 {
		return nil, fmt.Errorf("%w: no usable speed samples", ErrTooFewPoints)
	}
	var row [5]float64
	_, n := features(kind, batch, 1, 1, &row)
	a := mat.NewDense(len(usable), n, nil)
	y := make([]float64, len(usable))
	for i, pt := range usable {
		num, _ := features(kind, batch, float64(pt.PS), float64(pt.Workers), &row)
		target := num / pt.Speed
		for j := range n {
			a.Set(i, j, row[j]/target)
		}
		y[i] = 1
	}
	theta, err := NNLS(a, y)
	if err != nil {
		return nil, fmt.Errorf("fit %s speed: %w", kind, err)
	}
	s := &Speed{Kind: kind, Batch: batch, Points: len(usable)}
	copy(s.Theta[:], theta)
	sum := 0.0
	for _, pt := range usable {
		r := (s.At(pt.PS, pt.Workers) - pt.Speed) / pt.Speed
		sum += r * r
	}
	s.RelRMSE = math.Sqrt(sum / float64(len(usable)))
	return s, nil
}
