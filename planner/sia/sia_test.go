package sia

import (
	"math"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// fleet is a small mixed cluster: two 4-GPU "T4" nodes and one 8-GPU
// "A100" node.
func fleet(t *testing.T) *planner.Harness {
	h := planner.NewHarness(t)
	for _, n := range h.AddNodes("t4", 2, 64000, 262144, 4) {
		n.Devices[0].Name = "T4"
	}
	for _, n := range h.AddNodes("a100", 1, 64000, 262144, 8) {
		n.Devices[0].Name = "A100"
	}
	return h
}

// perf is a throughput model whose compute time is scaled by slow; fitted
// on replicas at most.
func perf(slow float64, replicas int) *goodput.Fit {
	return &goodput.Fit{Params: goodput.PerfParams{AlphaC: 0.01 * slow, BetaC: 0.001 * slow, AlphaN: 0.05, BetaN: 0.001, AlphaR: 0.01, BetaR: 0.0005, Gamma: 1.5},
		Points: 4, MaxReplicas: replicas, MaxLocal: 256}
}

func adaptiveJob(h *planner.Harness, id string, maxW int) *planner.Job {
	j := planner.MockAllReduceJob(id, structs.Bounds{Min: 1, Max: maxW}, &structs.BatchSize{Min: 64, Max: 4096, MinLocal: 16, MaxLocal: 256})
	j.Training.GlobalBatchSize = 64
	v := h.AddJob(j, nil)
	v.Grad = &goodput.GradParams{Sqr: 1, Var: 40}
	return v
}

// TestConfigs checks §3.2's sets: powers of two on a node, then whole
// nodes.
func TestConfigs(t *testing.T) {
	got := configs(0, &gpuType{perNode: 4, nodes: []int{0, 1, 2}})
	must.Eq(t, []config{{0, 1, 1}, {0, 1, 2}, {0, 1, 4}, {0, 2, 8}, {0, 3, 12}}, got)
	got = configs(1, &gpuType{perNode: 6, nodes: []int{0}})
	must.Eq(t, []config{{1, 1, 1}, {1, 1, 2}, {1, 1, 4}, {1, 1, 6}}, got, must.Sprint("6 is no power of two: a node's whole is a configuration too"))
}

// TestPlan_FasterType checks that a job measured on both types, four
// times faster on A100s, runs on the A100 node at the largest allowed
// configuration, and that a new job without a model starts on one GPU.
func TestPlan_FasterType(t *testing.T) {
	h := fleet(t)
	a := adaptiveJob(h, "a", 8)
	a.PerfByType = map[string]*goodput.Fit{"T4": perf(4, 4), "A100": perf(1, 4)}
	adaptiveJob(h, "b", 8)
	got := h.Plan(New())
	pa := got["a"]
	must.Eq(t, 8, pa.NumWorkers, must.Sprint(pa.Reason))
	must.Eq(t, "a100-0", pa.Nodes[0].NodeID)
	must.NotNil(t, pa.Batch)
	must.Eq(t, 1, got["b"].NumWorkers, must.Sprint("no model: one GPU, ", got["b"].Reason))
	must.StrContains(t, got["b"].Nodes[0].NodeID, "t4")
}

// TestEstimator_Bootstrap checks §3.1's estimate for a type profiled on
// one GPU only: its single-GPU goodput over the other type's, times the
// other type's at N.
func TestEstimator_Bootstrap(t *testing.T) {
	h := fleet(t)
	v := adaptiveJob(h, "a", 8)
	v.PerfByType = map[string]*goodput.Fit{"T4": perf(1, 4), "A100": perf(0.25, 1)}
	c := planner.NewCluster(h.Nodes)
	ts := types(c, h.Nodes)
	must.Eq(t, "A100", ts[0].name)
	lim := goodput.Limits{MinBatch: 64, MaxBatch: 4096, MinLocal: 16, MaxLocal: 256, Accumulation: true}
	e := newEstimator(v, ts, &lim)
	must.Eq(t, 1, e.src, must.Sprint("T4 ran on the most replicas"))
	got := e.goodput(config{typ: 0, nodes: 1, gpus: 8}, 8)
	must.Eq(t, e.own(0, 1, 1)/e.own(1, 1, 1)*e.own(1, 2, 8), got)
	must.Greater(t, got, e.own(0, 1, 8), must.Sprint("the A100's own single-GPU model scales nearly linearly; T4's measured scaling is worse"))
}

// TestPlan_RestartFactor checks Eq. (2): a job that restarted often and
// runs at a configuration keeps it over a slightly better one.
func TestPlan_RestartFactor(t *testing.T) {
	s := NewWithOptions(Options{})
	v := &planner.Job{Job: &structs.Job{SubmitTime: 0}, Restarts: 3}
	must.Eq(t, 1.0, s.restartFactor(v, int64(20*time.Second)), must.Sprint("younger than S"))
	must.Eq(t, (600.0-90)/(630), s.restartFactor(v, int64(600*time.Second)))
	must.Eq(t, 0.0, s.restartFactor(&planner.Job{Job: &structs.Job{}, Restarts: 30}, int64(600*time.Second)))

	h := fleet(t)
	a := adaptiveJob(h, "a", 4)
	a.PerfByType = map[string]*goodput.Fit{"T4": perf(1, 4), "A100": perf(0.95, 4)}
	a.Job.SubmitTime = 0
	a.Restarts = 5
	a.Current = &structs.Placement{JobID: "a", Namespace: "default", NumWorkers: 4, Nodes: []*structs.NodeTasks{{NodeID: "t4-1", Workers: 4}}}
	req := h.Request()
	req.Now = int64(400 * time.Second)
	dec, err := New().Plan(req)
	must.NoError(t, err)
	p := dec.Placements[0]
	must.Eq(t, []*structs.NodeTasks{{NodeID: "t4-1", Workers: 4}}, p.Nodes, must.Sprint("kept: ", p.Reason))

	a.Restarts = 0
	a.PerfByType["A100"] = perf(0.5, 4)
	dec, err = New().Plan(req)
	must.NoError(t, err)
	must.Eq(t, "a100-0", dec.Placements[0].Nodes[0].NodeID, must.Sprint("without restarts a type twice as fast wins: ", dec.Placements[0].Reason))
}

// TestPlan_WholeNodes checks that a configuration of several nodes takes
// whole nodes, and that the selection shares the capacity of a type.
func TestPlan_WholeNodes(t *testing.T) {
	h := fleet(t)
	a := adaptiveJob(h, "a", 8)
	a.PerfByType = map[string]*goodput.Fit{"T4": perf(1, 8)}
	delete(a.PerfByType, "A100")
	got := h.Plan(New())
	must.Eq(t, 8, got["a"].NumWorkers, must.Sprint(got["a"].Reason))
	must.Eq(t, []*structs.NodeTasks{{NodeID: "t4-0", Workers: 4}, {NodeID: "t4-1", Workers: 4}}, got["a"].Nodes)
}

// TestOptions checks the options and their errors.
func TestOptions(t *testing.T) {
	s := NewWithOptions(Options{})
	must.Eq(t, -0.5, s.opts.P)
	must.Eq(t, 1.1, s.opts.Lambda)
	must.NoError(t, s.SetConfig(map[string]string{"p": "0.5", "lambda": "2", "restart_delay": "1m"}))
	must.Eq(t, Options{P: 0.5, Lambda: 2, RestartDelay: time.Minute, NodeLimit: DefaultNodeLimit}, s.opts)
	las := NewLAS().(*Sia)
	must.Eq(t, DefaultServiceScale, las.opts.ServiceScale)
	must.NoError(t, las.SetConfig(map[string]string{"p": "-1"}))
	must.Eq(t, DefaultServiceScale, las.opts.ServiceScale, must.Sprint("sia-las keeps its scale"))
	must.Eq(t, 0.5, las.weight(&planner.Job{Job: &structs.Job{}, AttainedService: DefaultServiceScale.Seconds()}))
	err := s.SetConfig(map[string]string{"p": "0", "lambda": "-1", "x": "1"})
	must.ErrorContains(t, err, "p = \"0\": must not be 0")
	must.ErrorContains(t, err, "lambda = \"-1\"")
	must.ErrorContains(t, err, "unknown option \"x\"")
	must.Eq(t, 0.5, s.opts.P, must.Sprint("unchanged on error"))
	must.True(t, math.Abs(s.opts.Lambda-2) < 1e-12)
}

// TestRestartFactor_Measured checks that a job's measured start cost is
// its S in Eq. (2), in place of the option.
func TestRestartFactor_Measured(t *testing.T) {
	s := NewWithOptions(Options{})
	v := &planner.Job{Job: &structs.Job{}, Restarts: 2, RestartCost: 250}
	must.Eq(t, 1.0, s.restartFactor(v, int64(200*time.Second)), must.Sprint("younger than its S"))
	must.Eq(t, (1000.0-500)/(1000+250), s.restartFactor(v, int64(1000*time.Second)))
}

// psGPUJob is a sync parameter-server job of one PS and one worker with a
// GPU, at a fixed global batch of 240.
func psGPUJob(h *planner.Harness, id string) *planner.Job {
	j := planner.MockJob(id, structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 1})
	j.Training.Mode, j.Training.GlobalBatchSize = structs.ModeSync, 240
	j.Worker.Resources.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}
	j.Worker.Resources.CPU, j.Worker.Resources.MemoryMB = 100, 128
	return h.AddJob(j, nil)
}

// TestPlan_PSJobByType checks that a parameter-server job, which Sia does
// not scale, still runs its workers on one GPU type: the fastest it has a
// model of where its batch fits (the T4's model, measured up to a local
// batch of 128, does not hold 240), and never one without a model; that
// it keeps its placement; and that it moves to a faster type only when
// the gain beats its restart factor.
func TestPlan_PSJobByType(t *testing.T) {
	h := fleet(t)
	big := psGPUJob(h, "big")
	big.PerfByType = map[string]*goodput.Fit{"T4": perf(1, 1), "A100": perf(4, 1)}
	big.PerfByType["T4"].MaxLocal = 128
	big.PerfByType["A100"].MaxLocal = 240
	small := psGPUJob(h, "small")
	small.PerfByType = map[string]*goodput.Fit{"T4": perf(4, 1)}
	huge := psGPUJob(h, "huge")
	huge.PerfByType = map[string]*goodput.Fit{"T4": perf(1, 1)}
	huge.PerfByType["T4"].MaxLocal = 128
	got := h.Plan(New())
	must.True(t, got["huge"].Paused(), must.Sprint("its batch of 240 was never seen to fit the T4"))
	must.StrHasSuffix(t, BatchReason, got["huge"].Reason)
	must.Eq(t, []*structs.NodeTasks{{NodeID: "a100-0", PS: 1, Workers: 1}}, got["big"].Nodes, must.Sprint(got["big"].Reason))
	must.StrContains(t, got["big"].Reason, "workers on A100")
	must.Eq(t, 1, got["small"].NumPS)
	for _, nt := range got["small"].Nodes {
		if nt.Workers > 0 {
			must.StrHasPrefix(t, "t4-", nt.NodeID, must.Sprint("the A100 is no type small has a model of"))
		}
	}

	// Running on the T4, small learns the A100 is 4 times as fast: it
	// moves while young; at an age where its restart factor is below ¼,
	// it stays.
	now := time.Unix(100000, 0)
	small.Current = got["small"]
	small.Job.SubmitTime = now.Add(-time.Hour).UnixNano()
	small.PerfByType["A100"] = perf(1, 1)
	big.Current = got["big"]
	req := h.Request()
	req.Now = now.UnixNano()
	dec, err := New().Plan(req)
	must.NoError(t, err)
	for _, p := range dec.Placements {
		if p.JobID == "small" {
			must.StrContains(t, p.Reason, "workers on A100", must.Sprint("restart factor (3600−0)/(3600+30) ≈ 0.99"))
		}
	}
	small.Restarts = 119 // (3600 − 119·30)/(3600 + 30) < ¼
	dec, err = New().Plan(req)
	must.NoError(t, err)
	for _, p := range dec.Placements {
		if p.JobID == "small" {
			must.Eq(t, small.Current.Nodes, p.Nodes, must.Sprint(p.Reason))
		}
	}
}
