package gavel

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// tolerance is the simplex's optimality tolerance on reduced costs.
const tolerance = 1e-9

// solve returns the time fraction x of every pair of r that maximises
// the sum of throughputs (max_sum_throughput.py
// ThroughputNormalizedByCostSumWithPerfSLOs without costs or SLOs):
//
//	maximise   Σ throughput(j,t)·x(j,t)
//	subject to Σ_j scale(j)·x(j,t) ≤ GPUs(t)  for every type t
//	           Σ_t x(j,t) ≤ 1                 for every job j
//	           x ≥ 0
//
// by the simplex method (exact, where the artifact runs ECOS's interior
// point), then rounded to 5 decimals and clipped to [0, 1] as the
// artifact rounds. Pairs that do not exist are 0. When every job fits on
// its one best type at once (eachAtBest), that is the answer without the
// simplex, and so is the knapsack's on a cluster of one type (oneType).
func solve(r *round) ([]float64, error) {
	x := make([]float64, len(r.pairs))
	if best, ok := eachAtBest(r); ok {
		for _, p := range best {
			x[p] = 1
		}
		return x, nil
	}
	if len(r.types) == 1 {
		return oneType(r), nil
	}
	return simplex(r)
}

// oneType solves the program on a cluster of one GPU type, where it is
// the fractional knapsack problem, solved greedily (Dantzig, 1957): the
// jobs by throughput per GPU, highest first and ties in arrival order,
// each given all its time while the type's GPUs last, and the one they
// run out at the fraction left. That is an optimum, and the only one when
// the jobs' throughputs per GPU differ. On a tie the earlier job gets all
// the time (doc.go). Its cost is a sort of the jobs, where the simplex
// factorises a dense matrix of them at every pivot.
func oneType(r *round) []float64 {
	x := make([]float64, len(r.pairs))
	order := make([]int, 0, len(r.pairs))
	for p, pr := range r.pairs {
		if pr.throughput > 0 {
			order = append(order, p)
		}
	}
	scale := func(p int) float64 { return float64(r.jobs[r.pairs[p].job].scale) }
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(r.pairs[b].throughput/scale(b), r.pairs[a].throughput/scale(a))
	})
	left := float64(r.types[0].gpus)
	for _, p := range order {
		if left <= 0 {
			break
		}
		x[p] = min(1, left/scale(p))
		left -= x[p] * scale(p)
		x[p] = roundShare(x[p])
	}
	return x
}

// eachAtBest returns each job's pair of highest throughput when running
// every job all its time there is the program's only optimum: each job's
// highest throughput is positive and on one type only, and every type
// holds the jobs whose best it is. A job's term, Σ_t throughput(j,t)·
// x(j,t) with Σ_t x(j,t) ≤ 1, is at most its highest throughput and
// reaches it only so. ok is false otherwise.
//
// That is the common case of an uncontended cluster, and on one GPU type
// the simplex's dense LU factorisation at every pivot, cubic in the jobs,
// was most of a round's time: Gavel did not replay the Philly trace
// (drivers/sim/README.md).
func eachAtBest(r *round) (best []int, ok bool) {
	best = make([]int, len(r.jobs))
	tied := make([]bool, len(r.jobs))
	for j := range best {
		best[j] = -1
	}
	for p, pr := range r.pairs {
		switch b := best[pr.job]; {
		case b < 0 || pr.throughput > r.pairs[b].throughput:
			best[pr.job], tied[pr.job] = p, false
		case pr.throughput == r.pairs[b].throughput:
			tied[pr.job] = true
		}
	}
	load := make([]int, len(r.types))
	at := make([]int, 0, len(best))
	for j, p := range best {
		if p < 0 {
			continue // no type holds its request: it has no pair
		}
		if tied[j] || r.pairs[p].throughput <= 0 {
			return nil, false
		}
		load[r.pairs[p].typ] += r.jobs[j].scale
		at = append(at, p)
	}
	for t, gpus := range load {
		if gpus > r.types[t].gpus {
			return nil, false
		}
	}
	return at, true
}

// simplex solves the program by the simplex method.
func simplex(r *round) ([]float64, error) {
	n := len(r.pairs)
	x := make([]float64, n)
	if n == 0 {
		return x, nil
	}
	// Rows: one per type, then one per job; each with a slack column.
	m := len(r.types) + len(r.jobs)
	a := mat.NewDense(m, n+m, nil)
	b := make([]float64, m)
	c := make([]float64, n+m)
	for k, t := range r.types {
		b[k] = float64(t.gpus)
	}
	for i := range r.jobs {
		b[len(r.types)+i] = 1
	}
	for p, pr := range r.pairs {
		c[p] = -pr.throughput
		a.Set(pr.typ, p, float64(r.jobs[pr.job].scale))
		a.Set(len(r.types)+pr.job, p, 1)
	}
	basic := make([]int, m)
	for row := range m {
		a.Set(row, n+row, 1)
		basic[row] = n + row
	}
	_, opt, err := lp.Simplex(c, a, b, tolerance, basic)
	if err != nil {
		return nil, fmt.Errorf("max-sum-throughput program of %d pairs: %w", n, err)
	}
	for p := range x {
		x[p] = roundShare(opt[p])
	}
	return x, nil
}

// roundShare rounds a time fraction to 5 decimals within [0, 1], as the
// artifact rounds its solver's answer.
func roundShare(v float64) float64 { return min(max(math.Round(v*1e5)/1e5, 0), 1) }
