package subtask

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// bruteSplit tries every w.
func bruteSplit(c Cost, n int, wb, sb structs.Bounds) (int, float64) {
	best, bestT := 0, math.Inf(1)
	for w := 1; w < n; w++ {
		if !wb.Contains(w) || !sb.Contains(n-w) {
			continue
		}
		if t := c.Time(w, n-w); t < bestT || t == bestT && w > best {
			best, bestT = w, t
		}
	}
	return best, bestT
}

// TestSplit_WorkedCases: equal computation and communication split evenly;
// four times the computation gives workers twice the servers (√A : √K, the
// stationary point of A/w + K/(N−w)); communication-bound jobs stop at an
// even split, below which servers would bottleneck.
func TestSplit_WorkedCases(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     Cost
		n     int
		wantW int
	}{
		{"balanced", Cost{A: 1, K: 1}, 10, 5},
		{"compute heavy", Cost{A: 4, K: 1}, 9, 6},
		{"compute bound", Cost{A: 100, K: 1}, 11, 10},
		{"communication bound", Cost{A: 1, K: 25}, 12, 6},
		{"no communication", Cost{A: 1, K: 0}, 8, 7},
		{"two machines", Cost{A: 3, K: 1}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, s := tc.c.Split(tc.n)
			must.Eq(t, tc.wantW, w)
			must.Eq(t, tc.n, w+s)
		})
	}
}

// TestSplit_Optimal: eq. 3.5 gives the least time of every split, within
// bounds too, on random models.
func TestSplit_Optimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		c := Cost{A: rng.ExpFloat64(), K: rng.ExpFloat64() * float64(rng.IntN(3))}
		n := 2 + rng.IntN(40)
		wb := structs.Bounds{Min: 1 + rng.IntN(n), Max: n}
		sb := structs.Bounds{Min: 1, Max: 1 + rng.IntN(n)}
		want, wantT := bruteSplit(c, n, wb, sb)
		w, s := c.SplitWithin(n, wb, sb)
		if want == 0 {
			must.Eq(t, 0, w, must.Sprintf("%+v n=%d %v %v: no split keeps the bounds", c, n, wb, sb))
			continue
		}
		must.Eq(t, n, w+s)
		must.True(t, wb.Contains(w) && sb.Contains(s))
		must.Less(t, 1e-12, math.Abs(c.Time(w, s)-wantT), must.Sprintf("%+v n=%d: w=%d, brute force w=%d", c, n, w, want))
	}
}

// epochTime evaluates eqs. 3.1–3.4 term by term for explicit d, m and
// per-machine speeds and links (b_ij: the server's link in the
// server-bound term, the worker's in the worker-bound term), with
// C_w.proc = 1/speed, D = 1 and M/B = K/A.
func epochTime(c Cost, ms []Machine, workers, servers []int, d, m []float64) float64 {
	worst := 0.0
	w := float64(len(workers))
	for k, i := range workers {
		comp := c.A * d[k] / ms[i].Speed // eq. 3.3
		srv, sum := 0.0, 0.0
		for l, j := range servers {
			srv = math.Max(srv, m[l]*w/ms[j].Bandwidth) // m_j·w/b_ij
			sum += m[l] / ms[i].Bandwidth               // Σ_j m_j/b_ij
		}
		comm := d[k] * c.K * math.Max(srv, sum) // eq. 3.4, ⌈d_i/B⌉ as d_i/B
		worst = math.Max(worst, comp+comm)      // eqs. 3.1, 3.2
	}
	return worst
}

// TestTimeOn_Equations: TimeOn is eqs. 3.1–3.4 with d ∝ speed and
// m ∝ bandwidth, term by term, on random machines; on identical machines
// it is Time.
func TestTimeOn_Equations(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		n := 2 + rng.IntN(10)
		ms := make([]Machine, n)
		for i := range ms {
			ms[i] = Machine{Speed: 0.5 + 3*rng.Float64(), Bandwidth: 0.5 + 3*rng.Float64()}
		}
		w := 1 + rng.IntN(n-1)
		workers, servers := make([]int, 0, w), make([]int, 0, n-w)
		for i := range n {
			if i < w {
				workers = append(workers, i)
			} else {
				servers = append(servers, i)
			}
		}
		var speed, bw float64
		for _, i := range workers {
			speed += ms[i].Speed
		}
		for _, j := range servers {
			bw += ms[j].Bandwidth
		}
		d, m := make([]float64, len(workers)), make([]float64, len(servers))
		for k, i := range workers {
			d[k] = ms[i].Speed / speed
		}
		for l, j := range servers {
			m[l] = ms[j].Bandwidth / bw
		}
		c := Cost{A: rng.ExpFloat64(), K: rng.ExpFloat64()}
		want := epochTime(c, ms, workers, servers, d, m)
		got := c.TimeOn(ms, workers, servers)
		must.Less(t, 1e-9*want, math.Abs(got-want))
	}
	same := []Machine{{1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}
	c := Cost{A: 3, K: 2}
	must.Less(t, 1e-12, math.Abs(c.TimeOn(same, []int{0, 1, 2}, []int{3, 4})-c.Time(3, 2)))
}

// TestEstimate: a job measured at any split gives back its model, and the
// per-mini-batch reading of the same measurement gives the same split.
func TestEstimate(t *testing.T) {
	truth := Cost{A: 30, K: 9}
	for _, ws := range [][2]int{{2, 2}, {6, 2}, {2, 6}, {27, 5}} {
		w, s := float64(ws[0]), float64(ws[1])
		sub := &planner.Subtasks{CPU: truth.A / w, Net: truth.K * math.Max(1/s, 1/w), Workers: ws[0], PS: ws[1]}
		got, ok := Estimate(sub)
		must.True(t, ok)
		must.Less(t, 1e-9, math.Abs(got.A-truth.A))
		must.Less(t, 1e-9, math.Abs(got.K-truth.K))
		// Per mini-batch: C_w.proc·B and (M/b)·max(1, w/s).
		mb, ok := Estimate(&planner.Subtasks{CPU: truth.A, Net: truth.K * math.Max(1, w/s), Workers: ws[0], PS: ws[1]})
		must.True(t, ok)
		gw, _ := got.Split(32)
		mw, _ := mb.Split(32)
		must.Eq(t, gw, mw)
	}
	_, ok := Estimate(&planner.Subtasks{CPU: 0, Net: 1, Workers: 1, PS: 1})
	must.False(t, ok)
	_, ok = Estimate(&planner.Subtasks{CPU: 1, Net: 1, Workers: 1, PS: 0})
	must.False(t, ok)
	_, ok = Estimate(nil)
	must.False(t, ok)
}

// bestOfAll is the least TimeOn over every role assignment.
func bestOfAll(c Cost, ms []Machine) float64 {
	best := math.Inf(1)
	isWorker := make([]bool, len(ms))
	for mask := 1; mask < 1<<len(ms)-1; mask++ {
		for i := range isWorker {
			isWorker[i] = mask&(1<<i) != 0
		}
		best = math.Min(best, c.timeOfRoles(ms, isWorker))
	}
	return best
}

// TestSplitMachines: on identical machines it is Split; a machine with a
// fast link serves; with few machine types it is exact against every
// assignment; with many distinct machines its search is within 5%.
func TestSplitMachines(t *testing.T) {
	c := Cost{A: 4, K: 1}
	same := make([]Machine, 9)
	for i := range same {
		same[i] = Machine{Speed: 1, Bandwidth: 1}
	}
	workers, servers := c.SplitMachines(same)
	w, s := c.Split(9)
	must.Eq(t, w, len(workers))
	must.Eq(t, s, len(servers))

	workers, servers = Cost{A: 1, K: 1}.SplitMachines([]Machine{{1, 1}, {1, 1}, {1, 8}, {1, 1}})
	must.SliceContains(t, servers, 2)
	must.SliceNotContains(t, workers, 2)

	rng := rand.New(rand.NewPCG(3, 4))
	types := []Machine{{1, 1}, {4, 4}, {2, 0.5}}
	for range 50 {
		ms := make([]Machine, 2+rng.IntN(12))
		for i := range ms {
			ms[i] = types[rng.IntN(len(types))]
		}
		c := Cost{A: rng.ExpFloat64(), K: rng.ExpFloat64()}
		wk, sv := c.SplitMachines(ms)
		must.Less(t, 1e-9, c.TimeOn(ms, wk, sv)/bestOfAll(c, ms)-1)
	}

	worst := 1.0
	for range 10 {
		ms := make([]Machine, 17)
		for i := range ms {
			ms[i] = Machine{Speed: 0.5 + rng.Float64()*2, Bandwidth: 0.5 + rng.Float64()*2}
		}
		c := Cost{A: rng.ExpFloat64(), K: rng.ExpFloat64()}
		wk, sv := c.SplitMachines(ms)
		worst = math.Max(worst, c.TimeOn(ms, wk, sv)/bestOfAll(c, ms))
	}
	t.Logf("SplitMachines' search on 17 distinct machines against every assignment: worst %.4f× the best", worst)
	must.Less(t, 1.05, worst)
}
