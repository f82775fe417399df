package main

import "math"

// The model is L2-regularised logistic regression without a bias term:
// the objective of a batch of n examples is
//
//	f(w) = 1/n Σ_i [softplus(x_i·w) − y_i·x_i·w] + l2/2·‖w‖²
//
// whose gradient is 1/n Σ_i (sigmoid(x_i·w) − y_i)·x_i + l2·w.

func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// softplus is log(1 + e^z) without overflow.
func softplus(z float64) float64 {
	return max(z, 0) + math.Log1p(math.Exp(-math.Abs(z)))
}

// lossGrad returns the objective f(w) on b and writes its gradient into
// grad (len(w)).
func lossGrad(w []float64, b batch, l2 float64, grad []float64) float64 {
	d := len(w)
	n := len(b.y)
	clear(grad)
	loss := 0.0
	for i := range n {
		x := b.x[i*d : (i+1)*d]
		z := dot(x, w)
		loss += softplus(z) - b.y[i]*z
		r := sigmoid(z) - b.y[i]
		for j, xj := range x {
			grad[j] += r * xj
		}
	}
	inv := 1 / float64(n)
	reg := 0.0
	for j := range grad {
		grad[j] = grad[j]*inv + l2*w[j]
		reg += w[j] * w[j]
	}
	return loss*inv + l2/2*reg
}

// logLoss is the mean log loss of w on b: the objective without the
// regularisation term, which is what the chief reports.
func logLoss(w []float64, b batch) float64 {
	d := len(w)
	loss := 0.0
	for i := range b.y {
		z := dot(b.x[i*d:(i+1)*d], w)
		loss += softplus(z) - b.y[i]*z
	}
	return loss / float64(len(b.y))
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// partition returns the slice [offset, offset+length) of a vector of n
// parameters that parameter server rank of p owns: contiguous slices whose
// lengths differ by at most one, the longer ones first.
func partition(n, p, rank int) (offset, length int) {
	base, extra := n/p, n%p
	offset = rank*base + min(rank, extra)
	length = base
	if rank < extra {
		length++
	}
	return offset, length
}
