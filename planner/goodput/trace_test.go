package goodput

import (
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shoenig/test/must"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/optimize"
)

// traces is the Pollux artifact's traces as Caravan carries them (the sim
// driver embeds them); the tests read the files, without importing the
// driver.
const traces = "../../drivers/sim/data/pollux/traces"

// traceModels are the six models of the traces.
var traceModels = []string{"bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"}

// readCSV returns a trace file's rows as maps from column to value.
func readCSV(t testing.TB, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	must.NoError(t, err)
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	must.NoError(t, err)
	var out []map[string]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		must.NoError(t, err)
		row := map[string]string{}
		for i, h := range header {
			row[h] = rec[i]
		}
		out = append(out, row)
	}
	return out
}

func num(t testing.TB, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	must.NoError(t, err)
	return v
}

// placementPoints reads a model's placements.csv: a placement such as
// "1224" is replicas per node; step_time the synchronising pass, of
// which sync_time waits on the network (applications.py).
func placementPoints(t testing.TB, model string) []Point {
	var out []Point
	for _, row := range readCSV(t, filepath.Join(traces, model, "placements.csv")) {
		pl := row["placement"]
		replicas := 0
		for _, c := range pl {
			replicas += int(c - '0')
		}
		step := num(t, row["step_time"])
		out = append(out, Point{
			Nodes: len(pl), Replicas: replicas, Local: num(t, row["local_bsz"]),
			ComputeTime: step - num(t, row["sync_time"]), StepTime: step,
		})
	}
	return out
}

func relErrors(p PerfParams, pts []Point) (mean, worst float64) {
	for _, pt := range pts {
		pred := p.SyncTime(p.ComputeTime(pt.Local), p.NetworkTime(pt.Nodes, pt.Replicas))
		e := abs(pred-pt.StepTime) / pt.StepTime
		mean += e
		worst = max(worst, e)
	}
	return mean / float64(len(pts)), worst
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestFitPerf_Traces fits the throughput model to every measured
// placement of each model of the traces and compares its predicted step
// times with the measured ones. The bounds are what was measured, with a
// little room: the model is Pollux's, seven parameters for hundreds of
// placements, and the traces' step times are noisy (a placement's time
// is not always monotone in its local batch).
func TestFitPerf_Traces(t *testing.T) {
	// Mean relative error of the step time over all placements, per
	// model, as measured (see README.md), with room.
	bound := map[string]float64{
		"bert": 0.09, "cifar10": 0.10, "deepspeech2": 0.10, "imagenet": 0.085, "ncf": 0.11, "yolov3": 0.105,
	}
	for _, model := range traceModels {
		t.Run(model, func(t *testing.T) {
			pts := placementPoints(t, model)
			fit, err := FitPerf(pts)
			must.NoError(t, err)
			mean, worst := relErrors(fit.Params, pts)
			t.Logf("%s: %d points, mean error %.3f, worst %.3f, params %+v", model, len(pts), mean, worst, fit.Params)
			must.Eq(t, len(pts), fit.Points)
			must.Less(t, 1e-9, abs(mean-fit.Error)+1e-10, must.Sprint("Fit.Error is the mean relative error"))
			must.Less(t, bound[model], mean)
			must.Between(t, 1, fit.Params.Gamma, 10)
		})
	}
}

// TestFitPerf_Online fits, for each model, only the configurations a job
// sees early in a Pollux run (one node, up to four replicas, the
// smallest local batches) and predicts the step times of the placements
// across nodes it has not run at: the extrapolation the policy relies
// on when it grows a job. The artifact's prior (crossing nodes costs at
// least 1.1 times the intra-node exchange) is all the model knows of
// those, so the errors are larger.
func TestFitPerf_Online(t *testing.T) {
	// Mean relative error over the unseen placements, as measured, with
	// room (README.md).
	unseenBound := map[string]float64{
		"bert": 0.50, "cifar10": 0.30, "deepspeech2": 0.22, "imagenet": 0.25, "ncf": 0.45, "yolov3": 0.20,
	}
	for _, model := range traceModels {
		t.Run(model, func(t *testing.T) {
			all := placementPoints(t, model)
			var seen, unseen []Point
			for _, p := range all {
				if p.Nodes == 1 {
					seen = append(seen, p)
				} else {
					unseen = append(unseen, p)
				}
			}
			fit, err := FitPerf(seen)
			must.NoError(t, err)
			must.Eq(t, fit.Params.AlphaN, max(fit.Params.AlphaN, 1.1*fit.Params.AlphaR))
			meanSeen, _ := relErrors(fit.Params, seen)
			meanUnseen, worst := relErrors(fit.Params, unseen)
			t.Logf("%s: seen %d mean %.3f; unseen %d mean %.3f worst %.3f", model, len(seen), meanSeen, len(unseen), meanUnseen, worst)
			must.Less(t, 0.15, meanSeen)
			must.Less(t, unseenBound[model], meanUnseen)
		})
	}
}

// TestObjectiveGrad checks the closed-form gradient FitPerf descends
// along against central differences of the objective, on each model's
// measured placements (multi-node, single-node multi-replica and single
// replica points, with and without compute times) at several parameters;
// and that the objective and gradient, which an evaluator computes from
// shared terms, are to the bit those of evaluators that share nothing,
// also after the parameters change.
func TestObjectiveGrad(t *testing.T) {
	params := []PerfParams{
		{AlphaC: 0.1, BetaC: 0.01, AlphaN: 0.1, BetaN: 0.01, AlphaR: 0.1, BetaR: 0.01, Gamma: 1.001},
		{AlphaC: 0.05, BetaC: 0.002, AlphaN: 0.3, BetaN: 0.02, AlphaR: 0.04, BetaR: 0.003, Gamma: 2.5},
		{AlphaC: 0.2, BetaC: 0.0005, AlphaN: 0.01, BetaN: 0.1, AlphaR: 0.5, BetaR: 0.05, Gamma: 7},
	}
	for _, model := range traceModels {
		pts := placementPoints(t, model)
		// Half the points without their compute time.
		for i := range pts {
			if i%2 == 1 {
				pts[i].ComputeTime = 0
			}
		}
		shared := newEvaluator(pts)
		for _, p := range append(params, params[0]) {
			obj := shared.objective(p)
			var g, apart [7]float64
			shared.gradient(p, &g)
			newEvaluator(pts).gradient(p, &apart)
			must.Eq(t, apart, g, must.Sprintf("%s at %+v: gradient after the objective", model, p))
			must.Eq(t, newEvaluator(pts).objective(p), obj, must.Sprintf("%s at %+v: objective", model, p))
			must.Eq(t, obj, shared.objective(p), must.Sprintf("%s at %+v: objective after the gradient", model, p))

			want := make([]float64, 7)
			f := func(x []float64) float64 {
				return newEvaluator(pts).objective(PerfParams{x[0], x[1], x[2], x[3], x[4], x[5], x[6]})
			}
			fd.Gradient(want, f, p.Slice(), &fd.Settings{Formula: fd.Central, Step: 1e-7})
			for i := range want {
				must.Less(t, 1e-4*max(1, abs(want[i])), abs(g[i]-want[i]),
					must.Sprintf("%s at %+v: ∂/∂%s = %g, central differences %g", model, p, []string{"α_c", "β_c", "α_n", "β_n", "α_r", "β_r", "γ"}[i], g[i], want[i]))
			}
		}
	}
}

// singleNode returns cifar10's single-node placements.
func singleNode(tb testing.TB) []Point {
	return onOneNode(placementPoints(tb, "cifar10"))
}

// onOneNode is the points of pts on one node.
func onOneNode(pts []Point) []Point {
	var one []Point
	for _, p := range pts {
		if p.Nodes == 1 {
			one = append(one, p)
		}
	}
	return one
}

// BenchmarkFitPerf_Online is one online fit: a job's single-node
// placements of the cifar10 traces (44 points), what the server refits
// as a job's measurements grow.
func BenchmarkFitPerf_Online(b *testing.B) {
	seen := singleNode(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FitPerf(seen); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFitPerf_ThreePoints is a fit of the size most of the Philly
// trace's jobs have, three configurations (cifar10's first three
// single-node placements), with its evaluations of the objective a fit;
// BenchmarkObjectiveGrad_ThreePoints is one of those evaluations. Their
// difference is what gonum's Minimize adds (server/README.md).
// BenchmarkFitPerf_ThreePoints fits three configurations, as most of
// the trace's jobs' fits are, with FitPerf's minimiser and with gonum's
// Minimize, which gives the same fit.
func BenchmarkFitPerf_ThreePoints(b *testing.B) {
	pts := singleNode(b)[:3]
	for _, m := range []struct {
		name     string
		minimize minimizer
	}{{"minimizeBFGS", minimizeBFGS}, {"Minimize", gonumBFGS}} {
		b.Run(m.name, func(b *testing.B) {
			var evals int
			for b.Loop() {
				fit, err := fitPerf(pts, fitSettings(), m.minimize)
				if err != nil {
					b.Fatal(err)
				}
				evals = fit.Evaluations
			}
			b.ReportMetric(float64(evals), "evals/op")
		})
	}
}

func BenchmarkObjectiveGrad_ThreePoints(b *testing.B) {
	e := newEvaluator(singleNode(b)[:3])
	// Two points in turn, so that each evaluation computes its terms.
	ps := [2]PerfParams{
		{AlphaC: 0.1, BetaC: 0.01, AlphaN: 0.1, BetaN: 0.01, AlphaR: 0.1, BetaR: 0.01, Gamma: 1.001},
		{AlphaC: 0.05, BetaC: 0.002, AlphaN: 0.3, BetaN: 0.02, AlphaR: 0.04, BetaR: 0.003, Gamma: 2.5},
	}
	var g [7]float64
	i := 0
	for b.Loop() {
		p := ps[i%2]
		i++
		e.objective(p)
		e.gradient(p, &g)
	}
}

// TestFitPerf_StopsAtGtol fits each model of the traces to its first
// single-node placement, its first three, all single-node ones and all
// of them, with FitPerf's settings and with gonum's default gradient
// threshold (1e-12), and checks that stopping at goodput.py's gtol takes
// less than half the evaluations over the 24 fits (1,132 against 2,931)
// and costs at most 6% of the mean relative error of any one.
func TestFitPerf_StopsAtGtol(t *testing.T) {
	var evals, tightEvals int
	for _, model := range traceModels {
		all := placementPoints(t, model)
		seen := onOneNode(all)
		for name, pts := range map[string][]Point{"first": seen[:1], "first3": seen[:3], "single-node": seen, "all": all} {
			fit, err := FitPerf(pts)
			must.NoError(t, err)
			tight, err := fitPerf(pts, &optimize.Settings{MajorIterations: 500}, minimizeBFGS)
			must.NoError(t, err)
			mean, _ := relErrors(fit.Params, pts)
			tightMean, _ := relErrors(tight.Params, pts)
			t.Logf("%s %s: %d points, %d evaluations (%d at 1e-12), mean error %.5f (%.5f)", model, name, len(pts), fit.Evaluations, tight.Evaluations, mean, tightMean)
			must.Less(t, 1.06*tightMean+1e-9, mean, must.Sprintf("%s %s", model, name))
			must.Positive(t, fit.Evaluations)
			evals += fit.Evaluations
			tightEvals += tight.Evaluations
		}
	}
	t.Logf("evaluations: %d, against %d at 1e-12", evals, tightEvals)
	must.Less(t, tightEvals/2, evals)
}
