package goodput

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/optimize"
)

// minimizeBFGS is optimize.Minimize(p, x0, settings, &optimize.BFGS{}),
// run on the caller's goroutine: the same BFGS directions and line search
// (gonum's LinesearchMethod over its BFGS and Bisection, as BFGS builds
// them), the same stops, in the same order, and so the same Result to the
// last bit (TestMinimizeBFGS_SameAsMinimize), but not its goroutines.
// Minimize passes every evaluation through channels between four of them
// (the method, a distributor, a worker and the statistics). On a fit of
// three points, most of the trace's fits, the handovers took more than
// the rest of the fit: 180-226 µs with Minimize, 54-76 µs without, 26
// evaluations of about 1 µs each (BenchmarkFitPerf_ThreePoints, one CPU,
// on a loaded machine; drivers/sim/README.md, "Seventh pass").
//
// It honours settings' MajorIterations and GradientThreshold, and stops
// where Minimize's default converger (a function change under 1e-10 in
// 100 major iterations) does. Any other setting panics: nothing here
// sets one.
func minimizeBFGS(p optimize.Problem, x0 []float64, settings *optimize.Settings) (*optimize.Result, error) {
	if settings.Converger != nil || settings.Recorder != nil || settings.InitValues != nil ||
		settings.FuncEvaluations != 0 || settings.GradEvaluations != 0 || settings.HessEvaluations != 0 ||
		settings.Runtime != 0 || settings.Concurrent > 1 || p.Status != nil {
		panic("goodput: minimizeBFGS takes only MajorIterations and GradientThreshold")
	}
	dim := len(x0)
	// The default of Minimize (defaultFunctionConverge) and of BFGS's
	// GradStopThreshold (defaultGradientAbsTol).
	converger := &optimize.FunctionConverge{Absolute: 1e-10, Iterations: 100}
	converger.Init(dim)
	const bfgsGradStop = 1e-12

	res := &optimize.Result{Location: optimize.Location{X: make([]float64, dim), F: math.Inf(1)}}
	loc := &optimize.Location{X: slices.Clone(x0)}
	x := make([]float64, dim)
	evaluate := func(op optimize.Operation) {
		if op&^(optimize.FuncEvaluation|optimize.GradEvaluation) != 0 || op == optimize.NoOperation {
			panic(fmt.Sprintf("goodput: BFGS asked for %v", op))
		}
		copy(x, loc.X)
		if op&optimize.FuncEvaluation != 0 {
			loc.F = p.Func(x)
			res.FuncEvaluations++
		}
		if op&optimize.GradEvaluation != 0 {
			if len(loc.Gradient) == 0 {
				loc.Gradient = make([]float64, dim)
			}
			p.Grad(loc.Gradient, x)
			res.GradEvaluations++
		}
	}
	// major records a major iteration's location as the result and says
	// whether it stops the descent (performMajorIteration).
	major := func() optimize.Status {
		res.F = loc.F
		copy(res.X, loc.X)
		res.Gradient = append(res.Gradient[:0], loc.Gradient...)
		res.MajorIterations++
		switch {
		case math.IsInf(res.F, -1):
			return optimize.FunctionNegativeInfinity
		case settings.GradientThreshold > 0 && floats.Norm(res.Gradient, math.Inf(1)) < settings.GradientThreshold:
			return optimize.GradientThreshold
		}
		if status := converger.Converged(&res.Location); status != optimize.NotTerminated {
			return status
		}
		if settings.MajorIterations > 0 && res.MajorIterations >= settings.MajorIterations {
			return optimize.IterationLimit
		}
		return optimize.NotTerminated
	}
	stop := func(status optimize.Status, err error) (*optimize.Result, error) {
		res.Status = status
		return res, err
	}

	evaluate(optimize.FuncEvaluation | optimize.GradEvaluation)
	if math.IsInf(loc.F, 1) || math.IsNaN(loc.F) {
		return stop(optimize.Failure, optimize.ErrFunc(loc.F))
	}
	for i, v := range loc.Gradient {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return stop(optimize.Failure, optimize.ErrGrad{Grad: v, Index: i})
		}
	}
	if status := major(); status != optimize.NotTerminated {
		return stop(status, nil)
	}
	ls := &optimize.LinesearchMethod{NextDirectioner: &optimize.BFGS{}, Linesearcher: &optimize.Bisection{}}
	op, err := ls.Init(loc)
	for ; err == nil; op, err = ls.Iterate(loc) {
		switch op {
		case optimize.NoOperation:
		case optimize.MajorIteration:
			if status := major(); status != optimize.NotTerminated {
				return stop(status, nil)
			}
			if floats.Norm(loc.Gradient, math.Inf(1)) < bfgsGradStop {
				return stop(optimize.GradientThreshold, nil)
			}
		default:
			evaluate(op)
		}
	}
	return stop(optimize.Failure, err)
}
