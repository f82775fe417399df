package cruise

import (
	"math"
	"testing"

	"github.com/shoenig/test/must"
)

// config is one (W, S) of Table 3.1 with its epoch time relative to the
// column's best.
type config struct {
	w, s int
	rel  float64
}

// table31 is one column of Table 3.1 (dissertation lines 345–356): N
// machines, the three configurations measured, and the optimum the text
// reports (Table 3.4's grid search where it has the app, else the
// column's best).
type table31 struct {
	name    string
	n       int
	configs []config
	optW    int
}

var tables31 = []table31{
	{"NMF", 32, []config{{18, 14, 1.30}, {23, 9, 1}, {27, 5, 1.66}}, 23},
	{"MLR", 32, []config{{18, 14, 2.29}, {23, 9, 1.12}, {27, 5, 1}}, 27},
	{"LDA", 32, []config{{18, 14, 1}, {23, 9, 1.21}, {27, 5, 1.60}}, 18},
	{"LDA 4K topics", 32, []config{{18, 14, 1.44}, {23, 9, 1}, {27, 5, 1.20}}, 23},
	{"NMF m4.large", 52, []config{{34, 18, 1}, {38, 14, 1.08}, {42, 10, 1.48}}, 34},
	{"NMF m4.xlarge", 52, []config{{34, 18, 1.10}, {38, 14, 1.05}, {42, 10, 1}}, 42},
}

// fit is the cost model fitted to one column: K/A = r (A = 1), the
// model's eq. 3.5 optimum over every W in 1..N−1, and how it predicts the
// column.
type fit struct {
	r, rmse float64
	wStar   int
	// pred are the model's epoch times of the configurations relative to
	// the column's best, as the table gives them.
	pred []float64
	// miss is the model's epoch time at the text's optimum over its time
	// at wStar, minus 1: how much slower the text's optimum is by the
	// model (0 when the model's optimum is the text's).
	miss float64
}

// fitColumn fits Cost{1, r} with a free scale to a column by least
// squares on log epoch times (the two constants A and K, of which a
// relative column fixes only the ratio), over r on a log grid from 1e-4
// to 1e2 refined by golden section; lo and hi bound r (0 and +Inf for
// none).
func fitColumn(tb table31, lo, hi float64) fit {
	sse := func(r float64) float64 {
		c := Cost{A: 1, K: r}
		mean := 0.0
		for _, k := range tb.configs {
			mean += math.Log(k.rel) - math.Log(c.Time(k.w, k.s))
		}
		mean /= float64(len(tb.configs))
		e := 0.0
		for _, k := range tb.configs {
			d := math.Log(c.Time(k.w, k.s)) + mean - math.Log(k.rel)
			e += d * d
		}
		return e
	}
	best, bestE := 0.0, sse(0)
	if lo > 0 {
		best, bestE = lo, sse(lo)
	}
	const steps = 6000
	for i := 0; i <= steps; i++ {
		r := math.Pow(10, -4+6*float64(i)/steps)
		if r < lo || r > hi {
			continue
		}
		if e := sse(r); e < bestE {
			best, bestE = r, e
		}
	}
	// Golden section around the best grid point.
	a, b := math.Max(best/math.Pow(10, 6.0/steps), lo), math.Min(best*math.Pow(10, 6.0/steps), hi)
	if best == 0 {
		a, b = 0, 1e-4
	}
	g := (math.Sqrt(5) - 1) / 2
	for range 100 {
		x1, x2 := b-g*(b-a), a+g*(b-a)
		if sse(x1) < sse(x2) {
			b = x2
		} else {
			a = x1
		}
	}
	if r := (a + b) / 2; sse(r) < bestE {
		best, bestE = r, sse(r)
	}
	c := Cost{A: 1, K: best}
	f := fit{r: best, rmse: math.Sqrt(bestE / float64(len(tb.configs)))}
	f.wStar, _ = c.Split(tb.n)
	var tBest float64
	for _, k := range tb.configs {
		if k.rel == 1 {
			tBest = c.Time(k.w, k.s)
		}
	}
	for _, k := range tb.configs {
		f.pred = append(f.pred, c.Time(k.w, k.s)/tBest)
	}
	f.miss = c.Time(tb.optW, tb.n-tb.optW)/c.Time(f.wStar, tb.n-f.wStar) - 1
	return f
}

// fitFor returns the unconstrained fit of the named column.
func fitFor(t *testing.T, name string) fit {
	t.Helper()
	for _, tb := range tables31 {
		if tb.name == name {
			return fitColumn(tb, 0, math.Inf(1))
		}
	}
	t.Fatalf("no column %q", name)
	return fit{}
}

// TestTable31 fits the two-constant model to every column of Table 3.1
// and checks eq. 3.5's optimum against the text's. The numbers asserted
// are the fit's (README "Numbers"):
//
//	column          K/A     rmse(log)  W*  text  text's optimum by the model
//	NMF             0.323   0.125      20  23    3.2% slower than W*
//	MLR             0       0.211      31  27    14.8% slower
//	LDA             0.608   0.036      18  18    reproduced
//	LDA 4K topics   0.078   0.090      25  23    1.9% slower
//	NMF m4.large    1.107   0.033      26  34    12.2% slower
//	NMF m4.xlarge   0.057   0.010      42  42    reproduced
//
// Within the text's 6.5% (Table 3.4: Cruise's worst choice is 6.5% slower
// than the grid search's): LDA, LDA 4K, NMF m4.xlarge and NMF. Not
// reproduced: MLR, whose Table 3.1a ratio 2.29 between 18 and 27 workers
// is more than the model's computation term can give (27/18 = 1.5 at
// K = 0: more workers than servers, A/w + K/s can only fall slower than
// 1/w), and NMF m4.large, where the text measured only W ≥ 34 and its
// ratios put the model's optimum below the measured range. NMF's fit
// ranks (18,14) 1% ahead of (23,9), which the table measures 1.30× slower:
// TestTable31_NMF shows no K/A reproduces NMF's column.
func TestTable31(t *testing.T) {
	want := map[string]struct {
		r     float64
		wStar int
		miss  float64
	}{
		"NMF":           {0.323, 20, 0.032},
		"MLR":           {0, 31, 0.148},
		"LDA":           {0.608, 18, 0},
		"LDA 4K topics": {0.078, 25, 0.019},
		"NMF m4.large":  {1.107, 26, 0.122},
		"NMF m4.xlarge": {0.057, 42, 0},
	}
	for _, tb := range tables31 {
		t.Run(tb.name, func(t *testing.T) {
			f := fitColumn(tb, 0, math.Inf(1))
			t.Logf("%s: K/A = %.4f, rmse %.3f, W* = %d (text %d), text's optimum %.1f%% slower by the model; predicted %v for %v",
				tb.name, f.r, f.rmse, f.wStar, tb.optW, 100*f.miss, rounded(f.pred), tb.configs)
			w := want[tb.name]
			must.Less(t, 0.0015, math.Abs(f.r-w.r), must.Sprintf("K/A %.4f", f.r))
			must.Eq(t, w.wStar, f.wStar)
			must.Less(t, 0.0015, math.Abs(f.miss-w.miss), must.Sprintf("miss %.4f", f.miss))
			if f.wStar == tb.optW {
				must.Eq(t, 0.0, f.miss)
			}
			within := f.miss <= 0.065
			must.Eq(t, tb.name != "MLR" && tb.name != "NMF m4.large", within)
		})
	}
}

// TestTable31_MLR: at K = 0 the model's best case for many workers, the
// ratio between 18 and 27 workers is 27/18 = 1.5, below Table 3.1a's 2.29.
func TestTable31_MLR(t *testing.T) {
	c := Cost{A: 1, K: 0}
	must.Less(t, 1e-12, math.Abs(c.Time(18, 14)/c.Time(27, 5)-1.5))
	for _, r := range []float64{0.001, 0.01, 0.1, 1} {
		c := Cost{A: 1, K: r}
		must.Less(t, 1.5, c.Time(18, 14)/c.Time(27, 5))
	}
}

// TestTable31_NMF: (23,9) is the model's best of NMF's three
// configurations only for K/A in [0.0725, 0.3043]; there the ratio at
// (18,14) is at most 1.18 (table 1.30) and at (27,5) at most 1.27 (table
// 1.66): the model is too flat around its optimum for NMF's column. The best fit
// within that range (constrained) and Table 3.4's (22,10) and (24,8),
// 6.5% and 1.2% slower than (23,9), which the model's flat optimum cannot
// give either, are logged and asserted.
func TestTable31_NMF(t *testing.T) {
	tb := tables31[0]
	lo, hi := math.Inf(1), 0.0
	for i := 0; i <= 100000; i++ {
		r := float64(i) / 100000
		c := Cost{A: 1, K: r}
		if c.Time(23, 9) <= c.Time(18, 14) && c.Time(23, 9) <= c.Time(27, 5) {
			lo, hi = math.Min(lo, r), math.Max(hi, r)
		}
	}
	t.Logf("NMF: (23,9) is the best of the three for K/A in [%.4f, %.4f]", lo, hi)
	must.Less(t, 0.001, math.Abs(lo-0.0725))
	must.Less(t, 0.001, math.Abs(hi-0.3043))
	at := func(r float64, w int) float64 { c := Cost{A: 1, K: r}; return c.Time(w, 32-w) / c.Time(23, 9) }
	// at(r, 18) falls and at(r, 27) grows with r: their most is at the
	// range's ends, both below the table's.
	must.Less(t, 0.005, math.Abs(at(lo, 18)-1.179))
	must.Less(t, 0.005, math.Abs(at(hi, 27)-1.266))
	must.Less(t, 0.001, math.Abs(at(hi, 18)-1))
	must.Less(t, 0.001, math.Abs(at(lo, 27)-1))

	f := fitColumn(tb, lo, hi)
	t.Logf("NMF constrained to (23,9) best: K/A = %.4f, rmse %.3f, W* = %d, predicted %v (table 1.30, 1, 1.66)", f.r, f.rmse, f.wStar, rounded(f.pred))
	must.Less(t, 1.179+0.005, f.pred[0])
	must.Less(t, 1.266+0.005, f.pred[2])

	// Table 3.4's neighbours of the optimum: (22,10) 1/0.939 = 1.065×
	// and (24,8) 1/0.988 = 1.012× the time at (23,9). The model's
	// optimum is flat: (22,10) stays within 3.2% wherever (23,9) is best.
	for _, r := range []float64{lo, f.r, hi} {
		t.Logf("NMF K/A %.4f: (22,10) %.3f×, (24,8) %.3f× the time at (23,9) (Table 3.4: 1.065×, 1.012×)", r, at(r, 22), at(r, 24))
		must.Less(t, 1.065-0.03, at(r, 22))
	}
}

func rounded(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Round(x*1000) / 1000
	}
	return out
}
