package cruise

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

// TestSetConfig: the options, their validation, unknown keys.
func TestSetConfig(t *testing.T) {
	cr := New().(*Cruise)
	must.Eq(t, DefaultConfig(), cr.cfg)
	must.NoError(t, cr.SetConfig(map[string]string{"min_gain": "0.1", "opportunistic": "false"}))
	must.Eq(t, Config{MinGain: 0.1}, cr.cfg)
	for _, bad := range []map[string]string{
		{"min_gain": "1"}, {"min_gain": "-0.1"}, {"min_gain": "x"},
		{"opportunistic": "maybe"}, {"split": "even"},
	} {
		must.Error(t, cr.SetConfig(bad), must.Sprintf("%v", bad))
		must.Eq(t, Config{MinGain: 0.1}, cr.cfg, must.Sprint("a rejected config changes nothing"))
	}
	must.NoError(t, cr.SetConfig(nil))
	must.Eq(t, DefaultConfig(), cr.cfg)
}

// cruiseJob is a PS job of whole-node tasks that may use 1–31 of each
// role, starting at initial.
func cruiseJob(h *planner.Harness, id string, initial string) *planner.Job {
	j := planner.MockJob(id, structs.Bounds{Min: 1, Max: 31}, structs.Bounds{Min: 1, Max: 31})
	j.Worker.Resources.CPU = 4000
	j.Meta = map[string]string{InitialMeta: initial}
	return h.AddJob(j, nil)
}

// measure gives j subtasks measured at (w, s) from the true model c.
func measure(j *planner.Job, c Cost, w, s int) {
	j.Subtasks = &planner.Subtasks{CPU: c.A / float64(w), Net: c.K * math.Max(1/float64(s), 1/float64(w)), Workers: w, PS: s}
}

// run places j as p says, as the server records it.
func run(j *planner.Job, p *structs.Placement) { j.Current = p }

// TestCruise_Plan: an unmeasured job starts at its initial configuration;
// measured, it moves to eq. 3.5's optimum when the gain is 5% or more, and
// stays when it is less.
func TestCruise_Plan(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 32, 4000, 65536, 0)
	j := cruiseJob(h, "nmf", "18,14")
	got := h.Plan(New())["nmf"]
	must.Eq(t, 14, got.NumPS)
	must.Eq(t, 18, got.NumWorkers)
	run(j, got)

	// K/A = 0.16: w* = 32·√1/(1+0.4) ≈ 22.9 → 23; 18 → 23 gains > 5%.
	truth := Cost{A: 100, K: 16}
	measure(j, truth, 18, 14)
	got = h.Plan(New())["nmf"]
	must.Eq(t, 9, got.NumPS)
	must.Eq(t, 23, got.NumWorkers)
	must.StrContains(t, got.Reason, "predicted gain")
	run(j, got)

	// At (22, 10) the gain to (23, 9) is well below 5%: it stays.
	j.Current = nil
	h2 := planner.NewHarness(t)
	h2.AddNodes("n", 32, 4000, 65536, 0)
	k := cruiseJob(h2, "nmf", "22,10")
	run(k, h2.Plan(New())["nmf"])
	measure(k, truth, 22, 10)
	must.Less(t, DefaultMinGain, truth.Gain(22, 10, 23, 9))
	got = h2.Plan(New())["nmf"]
	must.Eq(t, 22, got.NumWorkers)
	must.StrContains(t, got.Reason, "below min_gain")
	// With no threshold it moves.
	cr := New().(*Cruise)
	must.NoError(t, cr.SetConfig(map[string]string{"min_gain": "0"}))
	got = h2.Plan(cr)["nmf"]
	must.Eq(t, 23, got.NumWorkers)
}

// TestCruise_Opportunistic: a measured job grows into free machines
// (N: 16 → 32) and gives them back, rebalanced, when a later job needs
// them; with opportunistic off it keeps its base size.
func TestCruise_Opportunistic(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 32, 4000, 65536, 0)
	first := cruiseJob(h, "first", "14,2")
	run(first, h.Plan(New())["first"])
	truth := Cost{A: 100, K: 4} // √(K/A) = 0.2: w* = N/1.2
	measure(first, truth, 14, 2)
	got := h.Plan(New())["first"]
	must.Eq(t, 32, got.NumPS+got.NumWorkers, must.Sprint("all 32 machines"))
	wantW, _ := truth.Split(32)
	must.Eq(t, wantW, got.NumWorkers)
	run(first, got)

	off := New().(*Cruise)
	must.NoError(t, off.SetConfig(map[string]string{"opportunistic": "false"}))
	must.Eq(t, 16, func() int { p := h.Plan(off)["first"]; return p.NumPS + p.NumWorkers }())

	second := cruiseJob(h, "second", "12,4")
	second.Job.SubmitTime = first.Job.SubmitTime + 1
	dec := h.Plan(New())
	must.Eq(t, 16, dec["first"].NumPS+dec["first"].NumWorkers, must.Sprint("reclaimed to its base"))
	wantW, _ = truth.Split(16)
	must.Eq(t, wantW, dec["first"].NumWorkers)
	must.StrContains(t, dec["first"].Reason, "reclaimed")
	must.Eq(t, 16, dec["second"].NumPS+dec["second"].NumWorkers)
}

// TestCruise_Heterogeneous345: §3.4.5's cluster, 28 r4.xlarge and 4
// r4.4xlarge (4× the cores, 5.00/1.25 = 4× the link), with NMF's fitted
// model (Table 3.1a, TestTable31). The text's grid search found
// (W:19+4, S:9+0)|P: the fast machines work. The model puts them on
// servers instead: with d ∝ speed a fast worker runs 4× the mini-batches,
// each of which waits on the servers' w·m_j/b_ij as long as a slow
// worker's (eq. 3.4), so its link buys it nothing as a worker but 4× the
// servers' bandwidth as a server. The text's optimum is logged and
// asserted slower by the model.
func TestCruise_Heterogeneous345(t *testing.T) {
	ms := make([]Machine, 32)
	for i := range ms {
		ms[i] = Machine{Speed: 1, Bandwidth: 1}
		if i >= 28 {
			ms[i] = Machine{Speed: 4, Bandwidth: 4}
		}
	}
	c := Cost{A: 1, K: fitFor(t, "NMF").r}
	workers, servers := c.SplitMachines(ms)
	fast := 0
	for _, i := range workers {
		if i >= 28 {
			fast++
		}
	}
	var textW, textS []int
	for i := range 19 {
		textW = append(textW, i)
	}
	textW = append(textW, 28, 29, 30, 31)
	for i := 19; i < 28; i++ {
		textS = append(textS, i)
	}
	slower := c.TimeOn(ms, textW, textS)/c.TimeOn(ms, workers, servers) - 1
	t.Logf("NMF on 28+4 machines: the model's optimum (W:%d+%d, S:%d+%d); the text's (W:19+4, S:9+0) is %.1f%% slower by the model",
		len(workers)-fast, fast, len(servers)-(4-fast), 4-fast, 100*slower)
	must.Eq(t, 0, fast)
	must.Eq(t, 32, len(workers)+len(servers))
	must.Greater(t, 0.065, slower)
}

// TestCruise_Disjoint: servers and workers go on disjoint nodes (Figure
// 3.2) when small tasks could share them; on a single node they share it,
// and the reason says so.
func TestCruise_Disjoint(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 4, 16000, 65536, 0)
	j := h.AddJob(planner.MockJob("j", structs.Bounds{Min: 1, Max: 6}, structs.Bounds{Min: 1, Max: 12}), nil)
	j.Subtasks = &planner.Subtasks{CPU: 1, Net: 1, PS: 1, Workers: 4} // A = 4, K = 1: w = 2s of 12
	cr := New().(*Cruise)
	must.NoError(t, cr.SetConfig(map[string]string{"opportunistic": "false"}))
	got := h.Plan(cr)["j"]
	must.Eq(t, 4, got.NumPS)
	must.Eq(t, 8, got.NumWorkers)
	for _, nt := range got.Nodes {
		must.True(t, nt.PS == 0 || nt.Workers == 0, must.Sprintf("node %s holds %d ps and %d workers", nt.NodeID, nt.PS, nt.Workers))
	}

	one := planner.NewHarness(t)
	one.AddNodes("n", 1, 16000, 65536, 0)
	k := one.AddJob(planner.MockJob("k", structs.Bounds{Min: 1, Max: 6}, structs.Bounds{Min: 1, Max: 12}), nil)
	k.Subtasks = j.Subtasks
	got = one.Plan(cr)["k"]
	must.Eq(t, 12, got.NumPS+got.NumWorkers)
	must.StrContains(t, got.Reason, "share nodes")
}
