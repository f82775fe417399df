package pollux

import (
	"fmt"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/structs"
)

// app is one model of the Pollux traces as the benchmarks use it: its
// throughput model fitted to its traces (planner/goodput's
// TestFitPerf_Traces, rounded) and its batch bounds (applications.py).
type app struct {
	perf               goodput.PerfParams
	minBatch, maxBatch int
	minLocal, maxLocal int
}

var apps = []app{
	{goodput.PerfParams{AlphaC: 0.169, BetaC: 0.0586, AlphaN: 1.35, BetaN: 0.0142, AlphaR: 0.297, BetaR: 1e-8, Gamma: 1.90}, 12, 384, 4, 12},
	{goodput.PerfParams{AlphaC: 0.0173, BetaC: 0.0007, AlphaN: 0.121, BetaN: 0.0024, AlphaR: 0.0325, BetaR: 1e-8, Gamma: 2.0}, 128, 4096, 32, 1024},
	{goodput.PerfParams{AlphaC: 0.304, BetaC: 0.0242, AlphaN: 0.378, BetaN: 0.0285, AlphaR: 0.0862, BetaR: 1e-8, Gamma: 1.43}, 20, 640, 10, 80},
	{goodput.PerfParams{AlphaC: 0.0645, BetaC: 0.00447, AlphaN: 0.299, BetaN: 0.00555, AlphaR: 0.0770, BetaR: 1e-8, Gamma: 2.49}, 200, 12800, 20, 200},
	{goodput.PerfParams{AlphaC: 0.00693, BetaC: 6.3e-7, AlphaN: 0.0154, BetaN: 0.00042, AlphaR: 0.00385, BetaR: 0.000494, Gamma: 1.0}, 256, 32768, 32, 32768},
	{goodput.PerfParams{AlphaC: 0.183, BetaC: 0.026, AlphaN: 0.699, BetaN: 0.0234, AlphaR: 0.139, BetaR: 0.0215, Gamma: 1.16}, 8, 512, 4, 8},
}

// gpuNodes returns n nodes of 4 GPUs each.
func gpuNodes(n int) []*structs.Node {
	h := planner.NewHarness(nil)
	return h.AddNodes("gpu", n, 32000, 262144, 4)
}

// WorkloadRequest is a round of a Pollux-like workload, for benchmarks of
// goodput policies (here and in planner/goodputlas): jobs of the six
// models in turn, submitted a minute apart, with fitted models measured
// at up to 8 replicas and gradient statistics of a noise scale of 1 to
// 8 reference batches; the first jobs run, packed on the nodes in turn
// at 1 to 4 workers, until half the GPUs are taken.
func WorkloadRequest(nodes, jobs int) *planner.Request {
	req := &planner.Request{Nodes: gpuNodes(nodes), Now: int64(jobs+60) * int64(time.Minute)}
	node, free, used := 0, 4, 0
	for k := range jobs {
		a := apps[k%len(apps)]
		j := planner.MockAllReduceJob(fmt.Sprintf("job-%04d", k), structs.Bounds{Min: 1, Max: 64},
			&structs.BatchSize{Min: a.minBatch, Max: a.maxBatch, MinLocal: a.minLocal, MaxLocal: a.maxLocal})
		j.SubmitTime = int64(k) * int64(time.Minute)
		v := &planner.Job{
			Job:      j,
			Perf:     &goodput.Fit{Params: a.perf, Points: 4, MaxReplicas: 1 << (k % 4)},
			Grad:     &goodput.GradParams{Sqr: 1, Var: float64(1 + k%8)},
			Restarts: k % 3,
		}
		if w := 1 + k%4; used+w <= 2*nodes && node < nodes {
			w = min(w, free)
			v.Current = &structs.Placement{
				Namespace: j.Namespace, JobID: j.ID, NumWorkers: w,
				Nodes: []*structs.NodeTasks{{NodeID: req.Nodes[node].ID, Workers: w}},
			}
			used += w
			if free -= w; free == 0 {
				node, free = node+1, 4
			}
		}
		req.Jobs = append(req.Jobs, v)
	}
	return req
}

// BenchmarkRound times alg's plan of WorkloadRequest(nodes, jobs), after
// checking that its decision keeps every rule of planner.CheckDecision,
// and reports the decision's Objective as mean-speedup, the same mean
// over the jobs it runs as running-speedup, and the jobs it runs (the
// same every run: the plan is deterministic).
func BenchmarkRound(b *testing.B, alg planner.Algorithm, nodes, jobs int) {
	req := WorkloadRequest(nodes, jobs)
	dec, err := alg.Plan(req)
	if err != nil {
		b.Fatal(err)
	}
	if err := planner.CheckDecision(req, dec); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := alg.Plan(req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	all, mean := objectives(req, dec)
	b.ReportMetric(all, "mean-speedup")
	b.ReportMetric(mean, "running-speedup")
	running := 0
	for _, p := range dec.Placements {
		if p.NumWorkers > 0 {
			running++
		}
	}
	b.ReportMetric(float64(running), "jobs-running")
}

// Objective is the power mean of speed-ups (p = −1, every job of weight
// 1) that Pollux maximises, of dec on req: the quality of a decision, for
// tests and benchmarks. A job dec does not place counts 0.
func Objective(req *planner.Request, dec *planner.Decision) float64 {
	all, _ := objectives(req, dec)
	return all
}

// objectives returns Objective and the same mean over the jobs dec runs
// alone, which the jobs it pauses (each a term of 1/10⁻³) do not drown.
func objectives(req *planner.Request, dec *planner.Decision) (all, running float64) {
	pr := newProblem(req, Options{}.withDefaults())
	ind := pr.newIndividual()
	byID := map[string]*structs.Placement{}
	for _, p := range dec.Placements {
		byID[p.JobID] = p
	}
	for j, jb := range pr.jobs {
		ind.n[j] = 0
		if p := byID[jb.view.Job.ID]; p != nil {
			for _, nt := range p.Nodes {
				if i, ok := pr.c.NodeIndex(nt.NodeID); ok && nt.Workers > 0 && int(ind.n[j]) < pr.width(j) {
					pr.insert(ind, j, int32(i), int32(nt.Workers))
				}
			}
		}
	}
	pr.evaluate(ind)
	sum, n := 0.0, 0.0
	for j, jb := range pr.jobs {
		if r := pr.replicas(ind, j); r > 0 {
			s := pr.speedup(jb, int(ind.n[j]), r)
			if !pr.isCurrent(ind, j) {
				s *= jb.restart
			}
			sum += pr.term(s)
			n++
		}
	}
	return ind.fit, pr.mean(sum, n)
}

// WeightOf is the weight p gives job j in its mean (1 without a Weight
// hook), for the tests of policies built on Pollux's hooks.
func (p *Pollux) WeightOf(j *planner.Job) float64 {
	if p.opts.Weight == nil {
		return 1
	}
	return p.opts.Weight(j)
}
