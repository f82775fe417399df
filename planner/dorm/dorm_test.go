package dorm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// configured returns Dorm with options; the test fails (it does not skip)
// when glpsol is missing: `make tools` installs it.
func configured(t *testing.T, options map[string]string) *Dorm {
	t.Helper()
	d := New().(*Dorm)
	must.NoError(t, d.SetConfig(options), must.Sprint("dorm's tests need glpsol: run make tools"))
	return d
}

func allReduce(id string, minW, maxW, cpu, mem int) *structs.Job {
	j := planner.MockJob(id, structs.Bounds{}, structs.Bounds{Min: minW, Max: maxW})
	j.Training.Architecture, j.Training.Mode, j.Elastic.ParameterServers = structs.ArchitectureAllReduce, structs.ModeSync, nil
	j.Worker.Resources.CPU, j.Worker.Resources.MemoryMB = cpu, mem
	j.Training.GlobalBatchSize = 720 // divisible by every worker count
	return j
}

// exhaustive returns the largest utilisation (eq. 1) of any assignment of
// workers to nodes within the jobs' bounds, the nodes' capacity and the
// fairness budget, by enumerating them all.
func exhaustive(t *testing.T, req *planner.Request, lossBound float64) float64 {
	best := -1.0
	n := len(req.Nodes)
	var rec func(k int, ps []*structs.Placement)
	rec = func(k int, ps []*structs.Placement) {
		if k == len(req.Jobs) {
			dec := &planner.Decision{Placements: ps}
			if planner.CheckDecision(req, dec) != nil {
				return
			}
			m := Measure(req, dec, nil)
			if m.FairnessLoss <= lossBound+1e-9 && m.Utilisation > best {
				best = m.Utilisation
			}
			return
		}
		j := req.Jobs[k]
		_, wb := j.Bounds()
		counts := make([]int, n)
		for {
			p := &structs.Placement{Namespace: j.Job.Namespace, JobID: j.Job.ID}
			for i, c := range counts {
				if c > 0 {
					p.Nodes = append(p.Nodes, &structs.NodeTasks{NodeID: req.Nodes[i].ID, Workers: c})
					p.NumWorkers += c
				}
			}
			if p.NumWorkers == 0 || p.NumWorkers >= wb.Min && p.NumWorkers <= wb.Max {
				rec(k+1, append(ps[:k:k], p))
			}
			i := 0
			for ; i < n; i++ {
				if counts[i] < wb.Max {
					counts[i]++
					break
				}
				counts[i] = 0
			}
			if i == n {
				return
			}
		}
	}
	rec(0, nil)
	return best
}

// TestPlan_ExhaustiveOptimum: on small instances the MILP's utilisation is
// the exhaustive search's best within the fairness budget (within MIPGap).
func TestPlan_ExhaustiveOptimum(t *testing.T) {
	type jobSpec struct{ minW, maxW, cpu, mem int }
	cases := []struct {
		name   string
		nodes  int
		cpu    int
		mem    int
		jobs   []jobSpec
		theta1 string
	}{
		{"one job fills", 2, 4000, 8192, []jobSpec{{1, 4, 1000, 1024}}, "1"},
		{"cpu and memory heavy pack", 2, 4000, 8192, []jobSpec{{1, 3, 2000, 1024}, {1, 3, 500, 4096}}, "1"},
		{"awkward sizes", 2, 5000, 8192, []jobSpec{{1, 3, 3000, 2048}, {2, 3, 1000, 3072}}, "1"},
		{"tight fairness", 2, 4000, 8192, []jobSpec{{1, 3, 2000, 1024}, {1, 3, 500, 4096}, {1, 2, 1500, 1500}}, "0"},
		{"three jobs, middle fairness", 3, 3000, 6144, []jobSpec{{1, 2, 1500, 1024}, {1, 3, 1000, 2048}, {1, 2, 500, 3072}}, "0.1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := planner.NewHarness(t)
			h.AddNodes("n", tc.nodes, tc.cpu, tc.mem, 0)
			for k, js := range tc.jobs {
				h.AddJob(allReduce(fmt.Sprintf("j%d", k), js.minW, js.maxW, js.cpu, js.mem), nil)
			}
			req := h.Request()
			d := configured(t, map[string]string{"theta1": tc.theta1, "theta2": "1"})
			dec, err := d.Plan(req)
			must.NoError(t, err)
			must.NoError(t, planner.CheckDecision(req, dec))
			got := d.LastSolve()
			must.Eq(t, "", got.Fallback)
			want := exhaustive(t, req, got.LossBound)
			t.Logf("utilisation %.4f, exhaustive %.4f, loss %.3f ≤ %.0f", got.Utilisation, want, got.FairnessLoss, got.LossBound)
			must.True(t, got.Utilisation <= want+1e-9, must.Sprintf("MILP %.6f above the exhaustive best %.6f", got.Utilisation, want))
			must.True(t, got.Utilisation >= want*(1-MIPGap)-1e-9, must.Sprintf("MILP %.6f below the exhaustive best %.6f", got.Utilisation, want))
			must.True(t, got.FairnessLoss <= got.LossBound+1e-6)
		})
	}
}

// smallRequest returns a random request small enough for glpsol to solve
// in well under a second.
func smallRequest(rng *rand.Rand) *planner.Request {
	for {
		req := planner.RandomRequest(rng)
		if len(req.Jobs) <= 8 && len(req.Nodes) <= 8 {
			return req
		}
	}
}

// TestPlan_Thresholds: in every decision of random instances, planned
// twice (the second time from the first decision), the fairness loss stays
// within eq. 15's bound and the adjusted jobs within eq. 16's, and the
// decision passes CheckDecision. Fallbacks to DRF are counted, not
// checked against the bounds.
func TestPlan_Thresholds(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 3))
	solved, fellBack := 0, 0
	for trial := range 25 {
		req := smallRequest(rng)
		preset := []string{"dorm-1", "dorm-2", "dorm-3"}[trial%3]
		for round := range 2 {
			d := configured(t, map[string]string{"preset": preset, "time_limit": "2s"})
			dec, err := d.Plan(req)
			must.NoError(t, err)
			must.NoError(t, planner.CheckDecision(req, dec), must.Sprintf("trial %d round %d", trial, round))
			s := d.LastSolve()
			if s.Fallback != "" {
				fellBack++
				for _, p := range dec.Placements {
					must.StrHasPrefix(t, FallbackReason, p.Reason)
				}
			} else {
				solved++
				must.True(t, s.FairnessLoss <= s.LossBound+1e-6, must.Sprintf("trial %d round %d: loss %.4f over %.0f", trial, round, s.FairnessLoss, s.LossBound))
				must.True(t, s.Adjusted <= s.AdjustBound, must.Sprintf("trial %d round %d: %d adjusted, bound %d", trial, round, s.Adjusted, s.AdjustBound))
				th := Presets[preset]
				must.Eq(t, math.Ceil(th.Theta1*2*resourceTypes(req)-1e-9), s.LossBound)
			}
			byID := map[string]*structs.Placement{}
			for _, p := range dec.Placements {
				byID[p.JobID] = p
			}
			for _, j := range req.Jobs {
				j.Current = byID[j.Job.ID]
			}
		}
	}
	t.Logf("%d solved, %d fell back to drf", solved, fellBack)
	must.Positive(t, solved)
}

// resourceTypes is |M|: CPU, memory and each device type with a healthy
// instance.
func resourceTypes(req *planner.Request) float64 {
	types := map[string]bool{"cpu": true, "memory": true}
	for _, n := range req.Nodes {
		for _, d := range n.Devices {
			if d.HealthyCount() > 0 {
				types[d.Type] = true
			}
		}
	}
	return float64(len(types))
}

// TestPlan_TimeLimitFallback: a time limit glpsol cannot meet gives DRF's
// decision, every reason saying so.
func TestPlan_TimeLimitFallback(t *testing.T) {
	req := planner.LargeRequest(t, 40, 60)
	d := configured(t, map[string]string{"time_limit": "1ms"})
	dec, err := d.Plan(req)
	must.NoError(t, err)
	must.NoError(t, planner.CheckDecision(req, dec))
	s := d.LastSolve()
	must.Eq(t, StatusNoSolution, s.Status)
	must.StrContains(t, s.Fallback, "no solution within 1ms")
	for _, p := range dec.Placements {
		must.StrHasPrefix(t, FallbackReason+" (P2 no solution within 1ms): drf:", p.Reason)
	}
}

func TestSetConfig(t *testing.T) {
	d := configured(t, map[string]string{"preset": "dorm-1"})
	must.Eq(t, Presets["dorm-1"], d.thresholds)
	d = configured(t, map[string]string{"preset": "dorm-2", "theta1": "0.3"})
	must.Eq(t, Thresholds{Theta1: 0.3, Theta2: 0.2}, d.thresholds)

	err := d.SetConfig(map[string]string{"theta1": "1.5", "preset": "dorm-9", "time_limit": "-1s", "x": "1"})
	for _, want := range []string{`theta1 = "1.5"`, `preset = "dorm-9"`, `time_limit = "-1s"`, `unknown option "x"`} {
		must.ErrorContains(t, err, want)
	}
	must.Eq(t, Thresholds{Theta1: 0.3, Theta2: 0.2}, d.thresholds, must.Sprint("a refused configuration changes nothing"))

	err = d.SetConfig(map[string]string{"glpsol": "/nonexistent/glpsol"})
	must.ErrorIs(t, err, ErrNoSolver)
	must.StrContains(t, err.Error(), "install glpk-utils (make tools)")

	t.Setenv("PATH", t.TempDir())
	must.ErrorIs(t, New().(planner.Configurable).SetConfig(nil), ErrNoSolver)
}

func TestParseSolution(t *testing.T) {
	sol, err := parseSolution([]byte("c x\ns mip 2 3 f 1.5\ni 1 2\nj 1 2\nj 2 0\nj 3 1\ne o f\n"), 3)
	must.NoError(t, err)
	must.Eq(t, StatusFeasible, sol.status)
	must.Eq(t, []float64{2, 0, 1}, sol.cols)
	_, err = parseSolution([]byte("s mip 2 4 o 1\n"), 3)
	must.ErrorContains(t, err, "4 columns, the model has 3")
	must.True(t, strings.Contains(fmt.Sprint(parseSolution(nil, 1)), "no status line"))
}
