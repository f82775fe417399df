package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shoenig/test/must"
)

// TestLossGradMatchesNumericGradient compares the analytic gradient with
// central differences of the objective.
func TestLossGradMatchesNumericGradient(t *testing.T) {
	ds := newDataset(7, 13, 100)
	b := ds.trainBatch(3, 1, 0, 9)
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]float64, 13)
	for j := range w {
		w[j] = rng.NormFloat64()
	}
	for _, l2 := range []float64{0, 0.3} {
		grad := make([]float64, len(w))
		f := lossGrad(w, b, l2, grad)
		must.Positive(t, f)
		const h = 1e-6
		for j := range w {
			wp, wm := append([]float64(nil), w...), append([]float64(nil), w...)
			wp[j] += h
			wm[j] -= h
			scratch := make([]float64, len(w))
			numeric := (lossGrad(wp, b, l2, scratch) - lossGrad(wm, b, l2, scratch)) / (2 * h)
			must.Less(t, 1e-6, math.Abs(numeric-grad[j]), must.Sprintf("l2=%v d/dw%d: analytic %v, numeric %v", l2, j, grad[j], numeric))
		}
		// Without regularisation the objective is the log loss.
		if l2 == 0 {
			must.Less(t, 1e-12, math.Abs(f-logLoss(w, b)))
		}
	}
}

func TestLossIsStableForLargeLogits(t *testing.T) {
	b := batch{x: []float64{1000, -1000}, y: []float64{0, 1}}
	w := []float64{1}
	grad := make([]float64, 1)
	b1 := batch{x: b.x[:1], y: b.y[:1]}
	f := lossGrad(w, b1, 0, grad)
	must.Eq(t, 1000, f, must.Sprint("softplus(1000) without overflow"))
	must.Eq(t, 1000, grad[0])
	must.Eq(t, 1000, logLoss(w, batch{x: b.x[1:], y: b.y[1:]}))
	must.Eq(t, 0, sigmoid(-1000))
	must.Eq(t, 1, sigmoid(1000))
	must.Eq(t, math.Log(2), softplus(0))
}

func TestPartition(t *testing.T) {
	cases := []struct {
		n, p            int
		offsets, length []int
	}{
		{200, 1, []int{0}, []int{200}},
		{200, 2, []int{0, 100}, []int{100, 100}},
		{200, 3, []int{0, 67, 134}, []int{67, 67, 66}},
		{10, 4, []int{0, 3, 6, 8}, []int{3, 3, 2, 2}},
		{3, 3, []int{0, 1, 2}, []int{1, 1, 1}},
	}
	for _, tc := range cases {
		for r := range tc.p {
			off, n := partition(tc.n, tc.p, r)
			must.Eq(t, tc.offsets[r], off, must.Sprintf("n=%d p=%d rank %d", tc.n, tc.p, r))
			must.Eq(t, tc.length[r], n, must.Sprintf("n=%d p=%d rank %d", tc.n, tc.p, r))
		}
	}
	// Every split tiles the vector.
	for n := 1; n < 40; n++ {
		for p := 1; p <= n; p++ {
			next := 0
			for r := range p {
				off, l := partition(n, p, r)
				must.Eq(t, next, off)
				must.Positive(t, l)
				next += l
			}
			must.Eq(t, n, next)
		}
	}
}

func TestDatasetIsDeterministic(t *testing.T) {
	a, b := newDataset(5, 20, 1000), newDataset(5, 20, 1000)
	must.Eq(t, a.truth, b.truth)
	must.Eq(t, a.trainBatch(4, 1, 0, 8), b.trainBatch(4, 1, 0, 8))
	must.NotEq(t, a.trainBatch(4, 1, 0, 8).x, a.trainBatch(4, 2, 0, 8).x, must.Sprint("ranks draw different batches"))
	must.NotEq(t, a.trainBatch(4, 1, 0, 8).x, a.trainBatch(5, 1, 0, 8).x, must.Sprint("steps draw different batches"))
	must.NotEq(t, a.trainBatch(4, 1, 0, 8).x, a.trainBatch(4, 1, 1, 8).x, must.Sprint("accumulated passes draw different batches"))
	must.NotEq(t, a.truth, newDataset(6, 20, 1000).truth, must.Sprint("the seed matters"))

	// Example i does not depend on how it is fetched.
	x := make([]float64, 20)
	y := a.example(1003, x)
	ev := a.evalBatch(5)
	must.Eq(t, x, ev.x[3*20:4*20])
	must.Eq(t, y, ev.y[3])

	// Labels are noisy: about half of them are 1, and the true weights
	// are far better than zero but far from perfect.
	big := newDataset(1, 200, 50000).evalBatch(2000)
	ones := 0.0
	for _, l := range big.y {
		ones += l
	}
	must.Between(t, 0.4, ones/2000, 0.6)
	opt := logLoss(newDataset(1, 200, 50000).truth, big)
	must.Between(t, 0.2, opt, 0.4)
}
