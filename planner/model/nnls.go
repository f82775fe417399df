package model

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// ErrIllPosed is returned by NNLS when the problem has no rows or columns, or
// holds a NaN or an infinity.
var ErrIllPosed = errors.New("ill-posed least squares problem")

// NNLS solves min ‖Ax − b‖₂ subject to x ≥ 0 with the active-set method of
// Lawson and Hanson ("Solving Least Squares Problems", 1974, ch. 23). gonum
// provides the unconstrained least-squares solves of the passive set; it has
// no NNLS of its own.
//
// A is m×n, b has m entries; A and b are not modified. Columns are scaled to
// unit norm before solving, so the tolerance does not depend on their units
// (fits mix terms like M/w and w whose sizes differ by orders of magnitude).
// NNLS allocates; it is meant for model fits, not for per-step hot loops.
func NNLS(a *mat.Dense, b []float64) ([]float64, error) {
	m, n := a.Dims()
	if m == 0 || n == 0 || len(b) != m {
		return nil, fmt.Errorf("%w: A is %d×%d, b has %d entries", ErrIllPosed, m, n, len(b))
	}
	for _, v := range b {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: b holds %v", ErrIllPosed, v)
		}
	}

	// Scale columns to unit norm; an all-zero column stays out of the fit.
	scaled := mat.DenseCopyOf(a)
	scale := make([]float64, n)
	for j := range n {
		col := mat.Col(nil, j, scaled)
		norm := 0.0
		for _, v := range col {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%w: A holds %v", ErrIllPosed, v)
			}
			norm += v * v
		}
		norm = math.Sqrt(norm)
		scale[j] = norm
		if norm > 0 {
			for i := range m {
				scaled.Set(i, j, scaled.At(i, j)/norm)
			}
		}
	}

	bv := mat.NewVecDense(m, append([]float64(nil), b...))
	x := make([]float64, n)
	passive := make([]bool, n)
	const tol = 1e-10
	gradient := func() []float64 {
		var r mat.VecDense
		r.MulVec(scaled, mat.NewVecDense(n, x))
		r.SubVec(bv, &r)
		var w mat.VecDense
		w.MulVec(scaled.T(), &r)
		return w.RawVector().Data
	}

	for iter := 0; iter < 3*n+10; iter++ {
		w := gradient()
		best, bestW := -1, tol
		for j := range n {
			if !passive[j] && scale[j] > 0 && w[j] > bestW {
				best, bestW = j, w[j]
			}
		}
		if best < 0 {
			break // Kuhn–Tucker conditions hold.
		}
		passive[best] = true
		for inner := 0; inner < 3*n+10; inner++ {
			s, err := solvePassive(scaled, bv, passive)
			if err != nil {
				return nil, err
			}
			feasible := true
			alpha := 1.0
			for j := range n {
				if passive[j] && s[j] <= tol {
					feasible = false
					if d := x[j] - s[j]; d > 0 {
						alpha = math.Min(alpha, x[j]/d)
					}
				}
			}
			if feasible {
				copy(x, s)
				break
			}
			for j := range n {
				x[j] += alpha * (s[j] - x[j])
				if passive[j] && x[j] <= tol {
					passive[j], x[j] = false, 0
				}
			}
		}
	}
	for j := range n {
		if scale[j] > 0 {
			x[j] /= scale[j]
		} else {
			x[j] = 0
		}
	}
	return x, nil
}

// solvePassive solves the unconstrained least-squares problem on the passive
// columns and returns a full-length solution with zeros elsewhere.
func solvePassive(a *mat.Dense, b *mat.VecDense, passive []bool) ([]float64, error) {
	m, n := a.Dims()
	var cols []int
	for j, p := range passive {
		if p {
			cols = append(cols, j)
		}
	}
	sub := mat.NewDense(m, len(cols), nil)
	for k, j := range cols {
		for i := range m {
			sub.Set(i, k, a.At(i, j))
		}
	}
	var z mat.VecDense
	if err := z.SolveVec(sub, b); err != nil {
		var cond mat.Condition
		if !errors.As(err, &cond) {
			return nil, fmt.Errorf("least squares on %d columns: %w", len(cols), err)
		}
		// Nearly collinear columns: the solution is still usable, and the
		// active-set loop drops the columns it drives to zero.
	}
	s := make([]float64, n)
	for k, j := range cols {
		s[j] = z.AtVec(k)
	}
	return s, nil
}
