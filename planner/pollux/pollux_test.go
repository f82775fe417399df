package pollux

import (
	"fmt"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// cifar and imagenet are two of the traces' models (bench_test.go).
var cifar, imagenet = apps[1], apps[3]

// adaptiveJob returns a job of app a whose batch varies within the app's
// bounds, with a throughput model measured at up to measured replicas
// and a noise scale of noise reference batches, submitted age ago.
func adaptiveJob(id string, a app, maxW, measured int, noise float64, now int64, age time.Duration) *planner.Job {
	j := planner.MockAllReduceJob(id, structs.Bounds{Min: 1, Max: maxW},
		&structs.BatchSize{Min: a.minBatch, Max: a.maxBatch, MinLocal: a.minLocal, MaxLocal: a.maxLocal})
	j.SubmitTime = now - int64(age)
	return &planner.Job{
		Job:  j,
		Perf: &goodput.Fit{Params: a.perf, Points: 4, MaxReplicas: measured},
		Grad: &goodput.GradParams{Sqr: 1, Var: noise},
	}
}

// objective is the power mean Pollux maximises, of a decision on req
// (Objective), whose nodes must all be req's.
func objective(t *testing.T, req *planner.Request, dec *planner.Decision) float64 {
	t.Helper()
	c := planner.NewCluster(req.Nodes)
	for _, p := range dec.Placements {
		for _, nt := range p.Nodes {
			_, ok := c.NodeIndex(nt.NodeID)
			must.True(t, ok, must.Sprintf("job %s on unknown node %s", p.JobID, nt.NodeID))
		}
	}
	return Objective(req, dec)
}

// TestPollux_TwoJobs: two jobs on two nodes of four GPUs. Every
// allocation that keeps the rules (capacity, at most one distributed job
// a node) is enumerated, and the decision must reach the largest power
// mean of speed-ups among them.
func TestPollux_TwoJobs(t *testing.T) {
	now := int64(1e6) * int64(time.Second)
	req := &planner.Request{Nodes: gpuNodes(2), Now: now, Jobs: []*planner.Job{
		adaptiveJob("a", cifar, 8, 4, 2, now, time.Hour),
		adaptiveJob("b", imagenet, 8, 4, 8, now, 2*time.Hour),
	}}
	dec, err := New().Plan(req)
	must.NoError(t, err)
	must.NoError(t, planner.CheckDecision(req, dec))
	got := objective(t, req, dec)

	best, bestName := 0.0, ""
	for a0 := range 5 {
		for a1 := range 5 - 0 {
			for b0 := range 5 - a0 {
				for b1 := range 5 - a1 {
					if a0 > 0 && a1 > 0 && (b0 > 0 || b1 > 0) || b0 > 0 && b1 > 0 && (a0 > 0 || a1 > 0) {
						continue // two jobs on a node, one distributed
					}
					if a0+a1 > 8 || b0+b1 > 8 {
						continue
					}
					d := &planner.Decision{}
					for _, x := range []struct {
						id     string
						c0, c1 int
					}{{"a", a0, a1}, {"b", b0, b1}} {
						p := &structs.Placement{Namespace: "default", JobID: x.id, NumWorkers: x.c0 + x.c1}
						if x.c0 > 0 {
							p.Nodes = append(p.Nodes, &structs.NodeTasks{NodeID: "gpu-0", Workers: x.c0})
						}
						if x.c1 > 0 {
							p.Nodes = append(p.Nodes, &structs.NodeTasks{NodeID: "gpu-1", Workers: x.c1})
						}
						d.Placements = append(d.Placements, p)
					}
					if v := objective(t, req, d); v > best {
						best, bestName = v, fmt.Sprintf("a %d+%d, b %d+%d", a0, a1, b0, b1)
					}
				}
			}
		}
	}
	t.Logf("decision %.4f (%s | %s), best %.4f (%s)", got, dec.Placements[0].Reason, dec.Placements[1].Reason, best, bestName)
	must.GreaterEq(t, best-1e-9, got)
	for _, p := range dec.Placements {
		must.NotNil(t, p.Batch, must.Sprint("adaptive jobs get a batch"))
	}
}

// TestPollux_RestartPenalty: a job restarted a minute ago keeps its two
// workers although two more GPUs are free, because the penalty
// (max(60 − 1·30, 0)/(60 + 30) = 1/3) outweighs the gain; the same job
// running for days grows.
func TestPollux_RestartPenalty(t *testing.T) {
	now := int64(1e6) * int64(time.Second)
	for _, tc := range []struct {
		name     string
		age      time.Duration
		restarts int
		workers  int
	}{
		{"restarted a minute ago", time.Minute, 1, 2},
		{"running for days", 72 * time.Hour, 1, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := adaptiveJob("a", cifar, 4, 2, 8, now, tc.age)
			v.Restarts = tc.restarts
			req := &planner.Request{Nodes: gpuNodes(1), Now: now, Jobs: []*planner.Job{v}}
			v.Current = &structs.Placement{Namespace: "default", JobID: "a", NumWorkers: 2, Nodes: []*structs.NodeTasks{{NodeID: "gpu-0", Workers: 2}}}
			dec, err := New().Plan(req)
			must.NoError(t, err)
			must.NoError(t, planner.CheckDecision(req, dec))
			must.Eq(t, tc.workers, dec.Placements[0].NumWorkers, must.Sprint(dec.Placements[0].Reason))
		})
	}
}

// TestPollux_FixedBatch: a job without batch bounds keeps its batch (no
// Batch in its placement); an adaptive job gets the batch its goodput
// model chooses at its placement, within its bounds.
func TestPollux_FixedBatch(t *testing.T) {
	now := int64(1e6) * int64(time.Second)
	fixed := planner.MockAllReduceJob("fixed", structs.Bounds{Min: 1, Max: 4}, nil)
	fixed.SubmitTime = now - int64(time.Hour)
	adaptive := adaptiveJob("adaptive", cifar, 4, 2, 8, now, time.Hour)
	req := &planner.Request{Nodes: gpuNodes(2), Now: now, Jobs: []*planner.Job{
		{Job: fixed, Perf: &goodput.Fit{Params: cifar.perf, MaxReplicas: 2}},
		adaptive,
	}}
	dec, err := New().Plan(req)
	must.NoError(t, err)
	must.NoError(t, planner.CheckDecision(req, dec))
	byID := map[string]*structs.Placement{}
	for _, p := range dec.Placements {
		byID[p.JobID] = p
	}
	must.Positive(t, byID["fixed"].NumWorkers)
	must.Nil(t, byID["fixed"].Batch)
	p := byID["adaptive"]
	must.Positive(t, p.NumWorkers)
	m := &goodput.Model{Perf: cifar.perf, Grad: *adaptive.Grad, RefBatch: cifar.minBatch}
	want, ok := m.Optimize(len(p.Nodes), p.NumWorkers, goodput.Limits{
		MinBatch: cifar.minBatch, MaxBatch: cifar.maxBatch, MinLocal: cifar.minLocal, MaxLocal: cifar.maxLocal, Accumulation: true,
	})
	must.True(t, ok)
	must.Eq(t, &structs.Batch{Global: want.Global, Local: want.Local, AccumSteps: want.Accum}, p.Batch)
	must.StrContains(t, p.Reason, fmt.Sprintf("batch %d", want.Global))
}

// TestPollux_Rules: on a loaded cluster, no node holds two distributed
// jobs, no job spans more nodes than max_nodes or more workers than
// twice the replicas it was measured at, and a job without a throughput
// model runs one worker.
func TestPollux_Rules(t *testing.T) {
	req := WorkloadRequest(16, 40)
	req.Jobs[7].Perf = nil
	alg := NewWithOptions(Options{MaxNodes: 3})
	dec, err := alg.Plan(req)
	must.NoError(t, err)
	must.NoError(t, planner.CheckDecision(req, dec))
	distributed := map[string]string{}
	byID := map[string]*planner.Job{}
	for _, j := range req.Jobs {
		byID[j.Job.ID] = j
	}
	running := 0
	for _, p := range dec.Placements {
		v := byID[p.JobID]
		if p.Paused() {
			continue
		}
		running++
		must.LessEq(t, 3, len(p.Nodes))
		if v.Perf == nil {
			must.Eq(t, 1, p.NumWorkers, must.Sprint(p.Reason))
		} else {
			must.LessEq(t, max(2*v.Perf.MaxReplicas, 1), p.NumWorkers, must.Sprint(p.Reason))
		}
		if len(p.Nodes) < 2 {
			continue
		}
		for _, nt := range p.Nodes {
			other, taken := distributed[nt.NodeID]
			must.False(t, taken, must.Sprintf("%s and %s are both distributed on %s", other, p.JobID, nt.NodeID))
			distributed[nt.NodeID] = p.JobID
		}
	}
	for _, p := range dec.Placements {
		if len(p.Nodes) == 1 {
			if other, ok := distributed[p.Nodes[0].NodeID]; ok {
				t.Logf("%s shares %s with distributed %s", p.JobID, p.Nodes[0].NodeID, other)
			}
		}
	}
	must.Eq(t, 40, running, must.Sprint("40 jobs fit on 64 GPUs"))
}

// TestPollux_Deterministic: the same request gives the same decision,
// whatever the order of its jobs.
func TestPollux_Deterministic(t *testing.T) {
	req := WorkloadRequest(16, 160)
	a, err := New().Plan(req)
	must.NoError(t, err)
	rev := *req
	rev.Jobs = nil
	for i := len(req.Jobs) - 1; i >= 0; i-- {
		rev.Jobs = append(rev.Jobs, req.Jobs[i])
	}
	b, err := New().Plan(&rev)
	must.NoError(t, err)
	must.Eq(t, a, b)
}

// TestPollux_BeatsCurrent: on the benchmark's workload, the decision's
// power mean is at least the current allocation's and the greedy seed's:
// the search keeps the best it has seen.
func TestPollux_BeatsCurrent(t *testing.T) {
	req := WorkloadRequest(16, 160)
	dec, err := New().Plan(req)
	must.NoError(t, err)
	got := objective(t, req, dec)
	pr := newProblem(req, Options{}.withDefaults())
	base := pr.newIndividual()
	for j := range pr.jobs {
		pr.setCurrent(base, j)
	}
	pr.evaluate(base)
	greedy := pr.greedy()
	pr.repair(greedy)
	pr.evaluate(greedy)
	t.Logf("current %.4f, greedy %.4f, decision %.4f", base.fit, greedy.fit, got)
	must.GreaterEq(t, base.fit, got)
	must.GreaterEq(t, greedy.fit, got)
}

func TestPollux_SetConfig(t *testing.T) {
	p := NewWithOptions(Options{})
	must.NoError(t, p.SetConfig(map[string]string{"population": "20", "generations": "5", "fairness": "0", "restart_delay": "1m", "max_nodes": "4", "budget": "5000"}))
	must.Eq(t, 20, p.opts.Population)
	must.Eq(t, 5, p.opts.Generations)
	must.Eq(t, 0.0, *p.opts.Fairness)
	must.Eq(t, time.Minute, p.opts.RestartDelay)
	must.Eq(t, 4, p.opts.MaxNodes)
	must.Eq(t, 5000, p.opts.Budget)
	err := p.SetConfig(map[string]string{"population": "-1", "fairness": "2", "colour": "red"})
	must.ErrorContains(t, err, `population = "-1": must be a positive integer`)
	must.ErrorContains(t, err, `fairness = "2": must be a number at most 1`)
	must.ErrorContains(t, err, `unknown option "colour"`)
	must.Eq(t, 20, p.opts.Population, must.Sprint("a bad config changes nothing"))
	must.NoError(t, p.SetConfig(nil))
	must.Eq(t, 100, p.opts.Population)
	must.Eq(t, -1.0, *p.opts.Fairness)
	must.Eq(t, DefaultBudget, p.opts.Budget)
}

// TestOptions_Sizes: the artifact's search up to the budget, then
// population and generations shrunk alike, the work within the budget.
func TestOptions_Sizes(t *testing.T) {
	for _, tc := range []struct {
		jobs, budget    int
		population, gen int
	}{
		{160, DefaultBudget, 100, 100},
		{990, DefaultBudget, 100, 100},
		{991, DefaultBudget, 98, 100}, // a smaller population, never more generations
		{2000, DefaultBudget, 70, 70},
		{10000, DefaultBudget, 30, 32},
		{10, 100, 4, 1}, // the floor: 4 individuals, 1 generation
	} {
		t.Run(fmt.Sprint(tc.jobs, "/", tc.budget), func(t *testing.T) {
			o := Options{Budget: tc.budget}.withDefaults()
			pop, gen := o.sizes(tc.jobs)
			must.Eq(t, tc.population, pop)
			must.Eq(t, tc.gen, gen)
			if tc.population > 4 {
				must.LessEq(t, tc.budget, pop*(gen+1)*tc.jobs)
			}
		})
	}
}

// TestSearch_WithinBudget counts the allocations a search evaluates: at
// most the budget, and most of it.
func TestSearch_WithinBudget(t *testing.T) {
	req := WorkloadRequest(16, 200)
	for _, budget := range []int{10_000, 100_000, 1_000_000} {
		pr := newProblem(req, Options{Budget: budget}.withDefaults())
		pr.search()
		work := pr.evaluated * len(pr.jobs)
		must.LessEq(t, budget, work, must.Sprintf("budget %d", budget))
		must.Greater(t, budget/2, work, must.Sprintf("budget %d", budget))
	}
}
