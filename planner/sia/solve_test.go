package sia

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shoenig/test/must"
)

// bruteForce is solve by enumeration, for tests on small instances.
func bruteForce(jobs [][]option, capacity []int) (float64, []int) {
	best, bestChoice := math.Inf(-1), []int(nil)
	choice := make([]int, len(jobs))
	free := slices.Clone(capacity)
	var rec func(j int, v float64)
	rec = func(j int, v float64) {
		if j == len(jobs) {
			if v > best+tolerance {
				best, bestChoice = v, slices.Clone(choice)
			}
			return
		}
		choice[j] = -1
		rec(j+1, v)
		for _, o := range jobs[j] {
			if o.value > 0 && o.gpus <= free[o.typ] {
				free[o.typ] -= o.gpus
				choice[j] = o.cfg
				rec(j+1, v+o.value)
				free[o.typ] += o.gpus
			}
		}
	}
	rec(0, 0)
	return best, bestChoice
}

// value sums the chosen options' values.
func value(jobs [][]option, choice []int) float64 {
	v := 0.0
	for j, c := range choice {
		for _, o := range jobs[j] {
			if o.cfg == c {
				v += o.value
			}
		}
	}
	return v
}

// used sums the chosen options' GPUs per type.
func used(jobs [][]option, choice []int, types int) []int {
	u := make([]int, types)
	for j, c := range choice {
		for _, o := range jobs[j] {
			if o.cfg == c {
				u[o.typ] += o.gpus
			}
		}
	}
	return u
}

// TestSolve_TableOne is the paper's worked example (§3.3, Table 1): one
// node of 2 GPUs of type A and one of 4 of type B, two jobs; the sum of
// normalised goodputs is largest with J1 on (1, 4, B) and J2 on (1, 2, A).
func TestSolve_TableOne(t *testing.T) {
	g := [][]float64{{1, 1.5, 1.5, 2.5, 3.5}, {1.2, 2.1, 1, 1.9, 3.6}}
	typ, gpus := []int{0, 0, 1, 1, 1}, []int{1, 2, 1, 2, 4}
	var jobs [][]option
	for _, row := range g {
		var os []option
		for c, v := range row {
			os = append(os, option{typ: typ[c], gpus: gpus[c], value: v, cfg: c})
		}
		jobs = append(jobs, os)
	}
	choice, optimal := solve(jobs, []int{2, 4}, DefaultNodeLimit)
	must.True(t, optimal)
	must.Eq(t, []int{4, 1}, choice, must.Sprint("J1 on (1, 4, B), J2 on (1, 2, A): 3.5 + 2.1"))
}

// TestSolve_BruteForce compares solve with enumeration on random small
// instances, by dynamic programming and by branch and bound alone: the
// same optimal value, within capacity.
func TestSolve_BruteForce(t *testing.T) {
	defer func(l int) { dpLimit = l }(dpLimit)
	rng := rand.New(rand.NewPCG(7, 30))
	for n := range 400 {
		types := 1 + rng.IntN(3)
		capacity := make([]int, types)
		for k := range capacity {
			capacity[k] = rng.IntN(9)
		}
		jobs := make([][]option, 1+rng.IntN(6))
		for j := range jobs {
			cfg := 0
			for typ := range types {
				for g := 1; g <= 8; g *= 2 {
					if rng.IntN(3) == 0 {
						continue
					}
					// Some ties and some worthless options.
					v := math.Round(rng.Float64()*4*float64(g)) / 4
					if rng.IntN(6) == 0 {
						v = -v
					}
					jobs[j] = append(jobs[j], option{typ: typ, gpus: g, value: v, cfg: cfg})
					cfg++
				}
			}
		}
		want, _ := bruteForce(jobs, capacity)
		for _, limit := range []int{1 << 24, 0} {
			dpLimit = limit // 0: by branch and bound alone
			choice, optimal := solve(jobs, capacity, DefaultNodeLimit)
			must.True(t, optimal)
			must.Eq(t, want, value(jobs, choice), must.Sprintf("instance %d, dp limit %d: %v cap %v", n, limit, jobs, capacity))
			for k, u := range used(jobs, choice, types) {
				must.LessEq(t, capacity[k], u, must.Sprintf("instance %d type %d", n, k))
			}
		}
	}
}

// TestSolve_NodeLimit checks that a branch and bound cut short keeps a
// feasible selection, says it is not proven, and is no better than the
// optimum.
func TestSolve_NodeLimit(t *testing.T) {
	defer func(l int) { dpLimit = l }(dpLimit)
	dpLimit = 0
	rng := rand.New(rand.NewPCG(1, 2))
	var jobs [][]option
	for j := range 60 {
		var os []option
		for g := 1; g <= 16; g *= 2 {
			os = append(os, option{typ: j % 2, gpus: g, value: float64(g) * (0.5 + rng.Float64()), cfg: len(os)})
		}
		jobs = append(jobs, os)
	}
	choice, optimal := solve(jobs, []int{37, 29}, 3)
	must.False(t, optimal)
	u := used(jobs, choice, 2)
	must.LessEq(t, 37, u[0])
	must.LessEq(t, 29, u[1])
	must.Positive(t, value(jobs, choice))
	dpLimit = 1 << 24
	full, optimal := solve(jobs, []int{37, 29}, DefaultNodeLimit)
	must.True(t, optimal)
	must.GreaterEq(t, value(jobs, choice), value(jobs, full))
	must.True(t, slices.ContainsFunc(full, func(c int) bool { return c >= 0 }))
}
