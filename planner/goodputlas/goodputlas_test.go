package goodputlas

import (
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/planner/pollux"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// twoJobs is one node of four GPUs and two jobs of the same model, batch
// bounds and gradient noise, submitted an hour ago, that have held
// serviceA and serviceB GPU-seconds, neither running.
func twoJobs(serviceA, serviceB float64) *planner.Request {
	h := planner.NewHarness(nil)
	nodes := h.AddNodes("gpu", 1, 32000, 262144, 4)
	now := int64(10 * time.Hour)
	perf := goodput.PerfParams{AlphaC: 0.05, BetaC: 0.001, AlphaN: 0.1, BetaN: 0.01, AlphaR: 0.02, BetaR: 0.002, Gamma: 1.5}
	job := func(id string, service float64) *planner.Job {
		j := planner.MockAllReduceJob(id, structs.Bounds{Min: 1, Max: 4},
			&structs.BatchSize{Min: 128, Max: 4096, MinLocal: 16, MaxLocal: 512})
		j.SubmitTime = now - int64(time.Hour)
		return &planner.Job{Job: j, AttainedService: service,
			Perf: &goodput.Fit{Params: perf, Points: 4, MaxReplicas: 4},
			Grad: &goodput.GradParams{Sqr: 1, Var: 20}}
	}
	return &planner.Request{Nodes: nodes, Now: now, Jobs: []*planner.Job{job("a", serviceA), job("b", serviceB)}}
}

func workers(dec *planner.Decision) map[string]int {
	out := map[string]int{}
	for _, p := range dec.Placements {
		out[p.JobID] = p.NumWorkers
	}
	return out
}

// TestGoodputLAS_LeastServiceFirst: Pollux splits the node evenly between
// two identical jobs; goodput-las gives more of it to the job that has
// held less GPU time, and the same split when their service is equal.
func TestGoodputLAS_LeastServiceFirst(t *testing.T) {
	req := twoJobs(0, 40*3600)
	dec, err := pollux.New().Plan(req)
	must.NoError(t, err)
	must.Eq(t, map[string]int{"a": 2, "b": 2}, workers(dec), must.Sprint("pollux ignores attained service"))

	dec, err = New().Plan(req)
	must.NoError(t, err)
	must.NoError(t, planner.CheckDecision(req, dec))
	got := workers(dec)
	must.Greater(t, got["b"], got["a"], must.Sprintf("the job with less service gets more: %v", got))
	for _, p := range dec.Placements {
		must.NotNil(t, p.Batch, must.Sprint("adaptive jobs get a batch"))
	}

	dec, err = New().Plan(twoJobs(3600, 3600))
	must.NoError(t, err)
	must.Eq(t, map[string]int{"a": 2, "b": 2}, workers(dec), must.Sprint("equal service, equal split"))
}

// TestGoodputLAS_SetConfig checks the options and that a bad one changes
// nothing.
func TestGoodputLAS_SetConfig(t *testing.T) {
	g := New().(*GoodputLAS)
	must.NoError(t, g.SetConfig(map[string]string{"service_scale": "4h", "generations": "10"}))
	must.Eq(t, 4*3600.0, g.scale)
	must.ErrorContains(t, g.SetConfig(map[string]string{"service_scale": "-1h"}), "service_scale")
	must.ErrorContains(t, g.SetConfig(map[string]string{"fairness": "0"}), "fairness")
	must.ErrorContains(t, g.SetConfig(map[string]string{"bogus": "1"}), "bogus")
	must.Eq(t, 4*3600.0, g.scale, must.Sprint("a refused configuration changes nothing"))
	must.Eq(t, 0.5, g.weight(&planner.Job{AttainedService: 4 * 3600}))

	// The policy that plans weighs by the scale set, from the first call.
	fresh := New().(*GoodputLAS)
	must.NoError(t, fresh.SetConfig(map[string]string{"service_scale": "1h"}))
	must.Eq(t, 0.5, fresh.inner.WeightOf(&planner.Job{AttainedService: 3600}))
}
