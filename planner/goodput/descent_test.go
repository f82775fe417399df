package goodput

import (
	"fmt"
	"math"
	"testing"

	"github.com/shoenig/test/must"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/optimize"
	"gonum.org/v1/gonum/optimize/functions"
)

// gonumBFGS is what minimizeBFGS stands for.
func gonumBFGS(p optimize.Problem, x0 []float64, settings *optimize.Settings) (*optimize.Result, error) {
	return optimize.Minimize(p, x0, settings, &optimize.BFGS{})
}

// TestMinimizeBFGS_SameAsMinimize runs minimizeBFGS and gonum's
// optimize.Minimize with BFGS on the same problems and checks that they
// return the same result to the last bit (location, gradient, counts,
// status, error): FitPerf's fits of every model of the traces to growing
// subsets of its placements under three settings, gonum's test
// functions from their standard starts, and a start where the objective
// is not a number. Between them the descents stop at each of
// minimizeBFGS's stops but the function's -∞.
func TestMinimizeBFGS_SameAsMinimize(t *testing.T) {
	statuses := map[optimize.Status]int{}
	both := func(p optimize.Problem, x0 []float64, settings *optimize.Settings) (*optimize.Result, error) {
		t.Helper()
		s := *settings
		want, wantErr := gonumBFGS(p, x0, &s)
		got, err := minimizeBFGS(p, x0, settings)
		want.Runtime, got.Runtime = 0, 0
		must.Eq(t, fmt.Sprint(wantErr), fmt.Sprint(err))
		must.Eq(t, *want, *got)
		statuses[got.Status]++
		return got, err
	}
	settings := map[string]func() *optimize.Settings{
		"FitPerf's":      fitSettings,
		"gtol 1e-12":     func() *optimize.Settings { return &optimize.Settings{MajorIterations: 500} },
		"two iterations": func() *optimize.Settings { return &optimize.Settings{MajorIterations: 2} },
	}
	fits := 0
	for _, model := range traceModels {
		all := placementPoints(t, model)
		seen := onOneNode(all)
		for _, pts := range [][]Point{seen[:1], seen[:2], seen[:3], seen[:5], seen, all[:4], all} {
			for name, s := range settings {
				_, err := fitPerf(pts, s(), both)
				must.NoError(t, err, must.Sprintf("%s, %d points, %s settings", model, len(pts), name))
				fits++
			}
		}
	}
	type function interface {
		Func([]float64) float64
		Grad(grad, x []float64)
	}
	for _, c := range []struct {
		f  function
		x0 []float64
	}{
		{functions.Beale{}, []float64{1, 1}},
		{functions.BiggsEXP4{}, []float64{1, 2, 1, 1}},
		{functions.BrownBadlyScaled{}, []float64{1, 1}},
		{functions.ExtendedRosenbrock{}, []float64{-1.2, 1, -1.2, 1}},
		{functions.PowellBadlyScaled{}, []float64{0, 1}},
	} {
		// Scaled down, the functions change by less than Minimize's
		// converger asks (1e-10) for 100 iterations: PowellBadlyScaled
		// stops there.
		for _, scale := range []float64{1, 1e-6} {
			p := optimize.Problem{
				Func: func(x []float64) float64 { return scale * c.f.Func(x) },
				Grad: func(g, x []float64) {
					c.f.Grad(g, x)
					floats.Scale(scale, g)
				},
			}
			for _, s := range settings {
				both(p, c.x0, s())
			}
		}
	}
	nan := optimize.Problem{Func: func([]float64) float64 { return math.NaN() }, Grad: func(g, _ []float64) { clear(g) }}
	_, err := both(nan, []float64{1}, fitSettings())
	must.Error(t, err)
	t.Logf("%d fits; stops: %v", fits, statuses)
	for _, status := range []optimize.Status{optimize.GradientThreshold, optimize.IterationLimit, optimize.FunctionConvergence, optimize.Failure} {
		must.Positive(t, statuses[status], must.Sprintf("no descent stopped at %v", status))
	}
}
