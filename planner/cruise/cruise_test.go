package cruise

import (
	"math"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

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
