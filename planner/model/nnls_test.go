package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shoenig/test/must"
	"gonum.org/v1/gonum/mat"
)

func TestNNLS_Known(t *testing.T) {
	cases := []struct {
		name string
		a    []float64
		rows int
		b    []float64
		want []float64
	}{
		// The unconstrained solution (1, 2) is feasible, so it is the answer.
		{"interior", []float64{1, 0, 0, 1, 1, 1}, 3, []float64{1, 2, 3}, []float64{1, 2}},
		// The unconstrained solution has x2 < 0; the constrained one is
		// x = (0.5, 0), where the gradient for x2 points away from x2 > 0.
		{"bound", []float64{1, 0, 0, 1, 1, 1}, 3, []float64{1, -1, 0}, []float64{0.5, 0}},
		// A zero column stays at 0.
		{"zero column", []float64{1, 0, 2, 0, 3, 0}, 3, []float64{2, 4, 6}, []float64{2, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x, err := NNLS(mat.NewDense(tc.rows, len(tc.a)/tc.rows, tc.a), tc.b)
			must.NoError(t, err)
			for i := range tc.want {
				must.Between(t, tc.want[i]-1e-9, x[i], tc.want[i]+1e-9)
			}
		})
	}
}

// TestNNLS_KKT checks the optimality conditions on random problems: x ≥ 0,
// the gradient Aᵀ(b − Ax) ≤ 0 everywhere and = 0 where x > 0.
func TestNNLS_KKT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		m, n := 3+rng.IntN(30), 1+rng.IntN(6)
		a := mat.NewDense(m, n, nil)
		for i := range m {
			for j := range n {
				a.Set(i, j, rng.NormFloat64()*math.Pow(10, float64(j-2)))
			}
		}
		b := make([]float64, m)
		for i := range b {
			b[i] = rng.NormFloat64()
		}
		x, err := NNLS(a, b)
		must.NoError(t, err)
		var r, w mat.VecDense
		r.MulVec(a, mat.NewVecDense(n, x))
		r.SubVec(mat.NewVecDense(m, b), &r)
		w.MulVec(a.T(), &r)
		for j := range n {
			colNorm := mat.Norm(a.ColView(j), 2)
			g := w.AtVec(j) / colNorm // gradient in the solver's scaled units
			must.GreaterEq(t, 0, x[j], must.Sprintf("trial %d: x[%d] = %v < 0", trial, j, x[j]))
			must.LessEq(t, 1e-6, g, must.Sprintf("trial %d: gradient %d = %v > 0", trial, j, g))
			if x[j] > 0 {
				must.Between(t, -1e-6, g, 1e-6, must.Sprintf("trial %d: x[%d] > 0 but gradient %v", trial, j, g))
			}
		}
	}
}

func TestNNLS_IllPosed(t *testing.T) {
	_, err := NNLS(mat.NewDense(2, 1, []float64{1, 2}), []float64{1})
	must.ErrorIs(t, err, ErrIllPosed)
	_, err = NNLS(mat.NewDense(2, 1, []float64{1, math.NaN()}), []float64{1, 2})
	must.ErrorIs(t, err, ErrIllPosed)
	_, err = NNLS(mat.NewDense(2, 1, []float64{1, 2}), []float64{1, math.Inf(1)})
	must.ErrorIs(t, err, ErrIllPosed)
}
