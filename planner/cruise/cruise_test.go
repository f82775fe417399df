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
		if t := c.Time(w, n-w); t < bestT {
			best, bestT = w, t
		}
	}
	return best, bestT
}

// TestSplit_WorkedCases: equal computation and communication split evenly;
// four times the computation gives workers twice the servers (√A : √K);
// communication-bound jobs stop at an even split, below which servers
// would bottleneck.
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

// TestSplit_Optimal: the closed form gives the least time of every split,
// within bounds too, on random models.
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
		must.Less(t, 1e-12, c.Time(w, s)-wantT, must.Sprintf("%+v n=%d: w=%d, brute force w=%d", c, n, w, want))
	}
}

// TestEstimate: a job measured anywhere gives the ratio its model has.
func TestEstimate(t *testing.T) {
	truth := Cost{A: 3, K: 1.5}
	for _, ws := range [][2]int{{2, 2}, {6, 2}, {2, 6}} {
		w, s := float64(ws[0]), float64(ws[1])
		// A step computes A/D·b and pulls K/D·b·max(w/s, 1): with D/b = 1.
		sub := &planner.Subtasks{CPU: truth.A, Net: truth.K * math.Max(w/s, 1), Workers: ws[0], PS: ws[1]}
		got, ok := Estimate(sub)
		must.True(t, ok)
		must.Less(t, 1e-12, math.Abs(got.K/got.A-truth.K/truth.A))
	}
	_, ok := Estimate(&planner.Subtasks{CPU: 0, Net: 1, Workers: 1, PS: 1})
	must.False(t, ok)
	_, ok = Estimate(nil)
	must.False(t, ok)
}

// TestSplitMachines: on identical machines it is Split; when machines
// specialise, fast computers work and fast links serve; on random small
// clusters it is within 3% of the best of every assignment.
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

	// A machine with a link eight times as fast serves.
	workers, servers = c.SplitMachines([]Machine{{1, 1}, {1, 1}, {1, 8}, {1, 1}})
	must.SliceContains(t, servers, 2)
	must.SliceNotContains(t, workers, 2)

	// Beyond exhaustiveMachines, the search against every assignment.
	rng := rand.New(rand.NewPCG(3, 4))
	worst := 1.0
	for range 20 {
		ms := make([]Machine, exhaustiveMachines+1+rng.IntN(3))
		for i := range ms {
			ms[i] = Machine{Speed: 0.5 + rng.Float64()*2, Bandwidth: 0.5 + rng.Float64()*2}
		}
		c := Cost{A: rng.ExpFloat64(), K: rng.ExpFloat64()}
		wk, sv := c.SplitMachines(ms)
		got := c.TimeOn(ms, wk, sv)
		best := math.Inf(1)
		isWorker := make([]bool, len(ms))
		for mask := 1; mask < 1<<len(ms)-1; mask++ {
			for i := range isWorker {
				isWorker[i] = mask&(1<<i) != 0
			}
			best = math.Min(best, c.timeOfRoles(ms, isWorker))
		}
		worst = math.Max(worst, got/best)
	}
	t.Logf("SplitMachines beyond %d machines against every assignment: worst %.4f× the best", exhaustiveMachines, worst)
	must.Less(t, 1.05, worst)
}

// TestCruise_Plan: a measured job is split by its model; an unmeasured
// one by its bounds; the decision is valid.
func TestCruise_Plan(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 4, 16000, 65536, 0)
	measured := h.AddJob(planner.MockJob("measured", structs.Bounds{Min: 1, Max: 6}, structs.Bounds{Min: 1, Max: 12}), nil)
	measured.Subtasks = &planner.Subtasks{CPU: 4, Net: 1, PS: 1, Workers: 1} // K/A = 1/4: w = 2s of 12
	h.AddJob(planner.MockJob("fresh", structs.Bounds{Min: 1, Max: 2}, structs.Bounds{Min: 1, Max: 4}), nil)
	req := h.Request()
	dec, err := New().Plan(req)
	must.NoError(t, err)
	must.NoError(t, planner.CheckDecision(req, dec))
	byID := map[string]*structs.Placement{}
	for _, p := range dec.Placements {
		byID[p.JobID] = p
	}
	must.Eq(t, 4, byID["measured"].NumPS)
	must.Eq(t, 8, byID["measured"].NumWorkers)
	must.Eq(t, 2, byID["fresh"].NumPS, must.Sprint("4 tasks in the bounds' ratio, 2:4"))
	must.Eq(t, 2, byID["fresh"].NumWorkers)
}
