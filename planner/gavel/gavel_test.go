package gavel

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// where returns, for each job of the decision, the GPU type of its nodes
// ("" when paused), failing when a placement spans two types.
func where(t *testing.T, req *planner.Request, dec *planner.Decision) map[string]string {
	t.Helper()
	typeOf := map[string]string{}
	for _, n := range req.Nodes {
		typeOf[n.ID] = n.GPUType()
	}
	out := map[string]string{}
	for _, p := range dec.Placements {
		out[p.JobID] = ""
		for k, nt := range p.Nodes {
			if k > 0 {
				must.Eq(t, out[p.JobID], typeOf[nt.NodeID], must.Sprintf("job %s spans two GPU types", p.JobID))
			}
			out[p.JobID] = typeOf[nt.NodeID]
		}
		if !p.Paused() {
			must.NotEq(t, "", out[p.JobID], must.Sprintf("job %s runs on a node of no GPU type", p.JobID))
		}
	}
	return out
}

// plan runs g on req and checks the decision's rules.
func plan(t *testing.T, g planner.Algorithm, req *planner.Request) (*planner.Decision, map[string]string) {
	t.Helper()
	dec, err := g.Plan(req)
	must.NoError(t, err)
	must.NoError(t, planner.CheckDecision(req, dec))
	must.Len(t, len(req.Jobs), dec.Placements)
	return dec, where(t, req, dec)
}

// commit makes the decision every job's current placement and advances
// the clock by a round, as the server does between rounds.
func commit(req *planner.Request, dec *planner.Decision) {
	byID := map[string]*structs.Placement{}
	for _, p := range dec.Placements {
		byID[p.JobID] = p
	}
	for _, j := range req.Jobs {
		j.Current = byID[j.Job.ID]
		if j.Current.Paused() {
			j.Current = nil
		}
	}
	req.Now += int64(DefaultRound)
}

// TestGavel_TwoJobsTwoTypes: two jobs of 4 GPUs on one 4-GPU node of
// each type. a is 4× faster on A100 than on T4, b 2×: the sum of
// throughputs is 4 + 1 with a on A100 and b on T4, 2 + 1 the other way,
// so a gets the A100 node and b the T4 node, each all its time.
func TestGavel_TwoJobsTwoTypes(t *testing.T) {
	nodes := append(TypedNodes("t4", T4, 1, 4), TypedNodes("a100", A100, 1, 4)...)
	req := &planner.Request{Nodes: nodes, Now: int64(time.Hour), Jobs: []*planner.Job{
		RigidJob("a", 4, 128, 0, map[string]float64{T4: 1, A100: 0.25}),
		RigidJob("b", 4, 128, time.Minute, map[string]float64{T4: 1, A100: 0.5}),
	}}
	r := newRound(req)
	x, err := solve(r)
	must.NoError(t, err)
	// Pairs are job by job, type by type in name order (A100 < T4).
	must.Eq(t, []float64{1, 0, 0, 1}, x)

	dec, types := plan(t, New(), req)
	must.Eq(t, map[string]string{"a": A100, "b": T4}, types)
	for _, p := range dec.Placements {
		must.Eq(t, 4, p.NumWorkers)
		must.Len(t, 1, p.Nodes)
	}
}

// TestGavel_TimeShares: one node of 4 T4 and jobs a (4 GPUs, 2 steps/s),
// b (2 GPUs, 1.5 steps/s) and c (2 GPUs, 0.5 steps/s). The program gives
// b all its time (0.75 steps/s a GPU) and a half of it (0.5 a GPU), c
// none. Every job starts with half a round of credit, so the priorities
// are x × 3: b (3) runs, a (1.5) does not fit beside it, and c (0) takes
// the 2 GPUs left. The next round a has received a seventh of the time
// and b three sevenths: a's priority 0.5 × 7 beats b's 1 × 7/3, and a
// runs alone. The round after, a and b have received as much; b leads
// again.
func TestGavel_TimeShares(t *testing.T) {
	req := &planner.Request{Nodes: TypedNodes("t4", T4, 1, 4), Now: int64(time.Hour), Jobs: []*planner.Job{
		RigidJob("a", 4, 128, 0, map[string]float64{T4: 0.5}),
		RigidJob("b", 2, 64, time.Minute, map[string]float64{T4: 1 / 1.5}),
		RigidJob("c", 2, 64, 2*time.Minute, map[string]float64{T4: 2}),
	}}
	x, err := solve(newRound(req))
	must.NoError(t, err)
	must.Eq(t, []float64{0.5, 1, 0}, x)

	g := New()
	running := func(dec *planner.Decision) []string {
		var ids []string
		for _, p := range dec.Placements {
			if !p.Paused() {
				ids = append(ids, p.JobID)
			}
		}
		return ids
	}
	var got [][]string
	for range 3 {
		dec, _ := plan(t, g, req)
		got = append(got, running(dec))
		commit(req, dec)
	}
	must.Eq(t, [][]string{{"b", "c"}, {"a"}, {"b", "c"}}, got)
}

// TestGavel_Fallbacks: a job without a model of a type takes its model
// of all types (Perf) there; a job with no model at all counts 1 step/s
// on every type.
func TestGavel_Fallbacks(t *testing.T) {
	nodes := append(TypedNodes("t4", T4, 1, 4), TypedNodes("a100", A100, 1, 4)...)
	a := RigidJob("a", 4, 128, 0, map[string]float64{A100: 0.25})
	a.Perf = &goodput.Fit{Params: goodput.PerfParams{AlphaC: 0.5, BetaC: 1e-12, AlphaN: 1e-8, BetaN: 1e-8, AlphaR: 1e-8, BetaR: 1e-8, Gamma: 1}}
	b := RigidJob("b", 4, 128, time.Minute, nil)
	b.PerfByType = nil
	r := newRound(&planner.Request{Nodes: nodes, Jobs: []*planner.Job{a, b}})
	var got []float64
	for _, p := range r.pairs {
		got = append(got, p.throughput)
	}
	must.Len(t, 4, got)
	must.InDelta(t, 4, got[0], 1e-6) // a on A100: its own model
	must.InDelta(t, 2, got[1], 1e-6) // a on T4: Perf
	must.Eq(t, []float64{1, 1}, got[2:])
}

// TestGavel_NoRoom: a job larger than every type's GPUs waits, saying so;
// with no nodes every job waits.
func TestGavel_NoRoom(t *testing.T) {
	nodes := append(TypedNodes("t4", T4, 2, 4), TypedNodes("a100", A100, 1, 4)...)
	big := RigidJob("big", 12, 384, 0, map[string]float64{T4: 1, A100: 0.5})
	dec, types := plan(t, New(), &planner.Request{Nodes: nodes, Jobs: []*planner.Job{big}})
	must.Eq(t, "", types["big"])
	must.StrContains(t, dec.Placements[0].Reason, "the nodes of no GPU type can hold its request")

	small := RigidJob("small", 1, 32, 0, map[string]float64{T4: 1})
	dec, _ = plan(t, New(), &planner.Request{Jobs: []*planner.Job{big, small}})
	for _, p := range dec.Placements {
		must.True(t, p.Paused())
	}
}

// TestGavel_Properties: on random requests over the cluster of Sia's
// evaluation, planned round after round by one Gavel with each decision
// committed: every decision keeps CheckDecision's rules (capacity,
// devices, bounds), gives every job one placement, runs every job at its
// request on one GPU type, and leaves no job waiting whose request fits
// the room left on some type.
func TestGavel_Properties(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 1))
	types := []string{T4, RTX, A100}
	paused := 0
	for trial := range 40 {
		req := &planner.Request{Nodes: SiaCluster(), Now: int64(time.Hour)}
		for k := range 5 + rng.IntN(60) {
			w := []int{1, 2, 4, 8, 16}[rng.IntN(5)]
			step := map[string]float64{}
			for _, ty := range types {
				if rng.IntN(4) > 0 {
					step[ty] = 0.05 + rng.Float64()
				}
			}
			j := RigidJob(string(rune('a'+k%26))+string(rune('a'+k/26)), w, 32*w, time.Duration(rng.IntN(600))*time.Second, step)
			if rng.IntN(5) == 0 {
				j.Job.Worker.Resources.CPU = 12000 // at most two a node
			}
			req.Jobs = append(req.Jobs, j)
		}
		g := New()
		for round := range 4 {
			dec, on := plan(t, g, req)
			left := map[string]*planner.Cluster{}
			for _, ty := range types {
				var nodes []*structs.Node
				for _, n := range req.Nodes {
					if n.GPUType() == ty {
						nodes = append(nodes, n)
					}
				}
				left[ty] = planner.NewCluster(nodes)
			}
			byID := map[string]*structs.Placement{}
			for _, p := range dec.Placements {
				byID[p.JobID] = p
			}
			for _, j := range req.Jobs {
				p := byID[j.Job.ID]
				if p.Paused() {
					continue
				}
				must.Eq(t, j.Job.Elastic.Workers.Max, p.NumWorkers)
				c := left[on[j.Job.ID]]
				tasks := c.JobTasks(j)
				for _, nt := range p.Nodes {
					i, ok := c.NodeIndex(nt.NodeID)
					must.True(t, ok)
					c.Take(i, tasks.Worker, nt.Workers)
				}
			}
			for _, j := range req.Jobs {
				if !byID[j.Job.ID].Paused() {
					continue
				}
				paused++
				for _, ty := range types {
					c := left[ty]
					tasks := c.JobTasks(j)
					_, fits := placement.New(c).Place(tasks.PS, 0, tasks.Worker, j.Job.Elastic.Workers.Max)
					must.False(t, fits, must.Sprintf("trial %d round %d: %s waits (%s) but fits on %s", trial, round, j.Job.ID, byID[j.Job.ID].Reason, ty))
				}
			}
			commit(req, dec)
		}
	}
	must.Positive(t, paused, must.Sprint("the instances should stress capacity"))
}

// TestGavel_Deterministic: the same request in any job order gets the
// same decision from a new Gavel.
func TestGavel_Deterministic(t *testing.T) {
	req := WorkloadRequest(50)
	dec, err := New().Plan(req)
	must.NoError(t, err)
	shuffled := *req
	shuffled.Jobs = slices.Clone(req.Jobs)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled.Jobs), func(a, b int) { shuffled.Jobs[a], shuffled.Jobs[b] = shuffled.Jobs[b], shuffled.Jobs[a] })
	again, err := New().Plan(&shuffled)
	must.NoError(t, err)
	must.Eq(t, dec, again)
}

// TestGavel_SetConfig: round is a positive duration; anything else is
// refused and changes nothing.
func TestGavel_SetConfig(t *testing.T) {
	g := New().(*Gavel)
	must.NoError(t, g.SetConfig(map[string]string{"round": "60s"}))
	must.Eq(t, 60.0, g.round)
	must.ErrorContains(t, g.SetConfig(map[string]string{"round": "0s"}), "positive duration")
	must.ErrorContains(t, g.SetConfig(map[string]string{"interval": "60s"}), `unknown option "interval"`)
	must.Eq(t, 60.0, g.round)
	must.NoError(t, g.SetConfig(nil))
	must.Eq(t, DefaultRound.Seconds(), g.round)
}

// TestGavel_ForgetsFinishedJobs: the time received is kept for the
// request's jobs only.
func TestGavel_ForgetsFinishedJobs(t *testing.T) {
	g := New().(*Gavel)
	req := WorkloadRequest(8)
	_, err := g.Plan(req)
	must.NoError(t, err)
	must.MapLen(t, 8, g.received)
	req.Jobs = req.Jobs[:3]
	req.Now += int64(DefaultRound)
	_, err = g.Plan(req)
	must.NoError(t, err)
	must.MapLen(t, 3, g.received)
}

// TestSolve_EachAtBestIsTheSimplexOptimum: on random rounds of 1 to 3
// types, where each job's best type holds every job whose best it is,
// the shortcut gives the simplex's answer; where a type is
// oversubscribed it does not apply.
func TestSolve_EachAtBestIsTheSimplexOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 33))
	types := []string{T4, RTX, A100}
	applied, declined := 0, 0
	for trial := range 200 {
		var nodes []*structs.Node
		k := 1 + rng.IntN(len(types))
		for _, name := range types[:k] {
			nodes = append(nodes, TypedNodes(name, name, 1+rng.IntN(3), 8)...)
		}
		req := &planner.Request{Nodes: nodes, Now: int64(time.Hour)}
		for j := range 1 + rng.IntN(12) {
			step := map[string]float64{}
			for _, name := range types[:k] {
				step[name] = 0.1 + rng.Float64()
			}
			req.Jobs = append(req.Jobs, RigidJob(string(rune('a'+j)), 1<<rng.IntN(4), 128, time.Duration(j)*time.Minute, step))
		}
		r := newRound(req)
		want, err := simplex(r)
		must.NoError(t, err)
		best, ok := eachAtBest(r)
		if !ok {
			declined++
			continue
		}
		applied++
		got := make([]float64, len(r.pairs))
		for _, p := range best {
			got[p] = 1
		}
		must.Eq(t, want, got, must.Sprintf("trial %d: %d jobs on %d types", trial, len(req.Jobs), k))
	}
	must.Greater(t, 20, applied)
	must.Greater(t, 20, declined)
}

// TestSolve_OneTypeIsTheSimplexOptimum: on random contended rounds of one
// type, where the jobs' throughputs per GPU differ, the knapsack gives
// the simplex's answer; on a tie the earlier job gets all its time.
func TestSolve_OneTypeIsTheSimplexOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	contended := 0
	for trial := range 200 {
		req := &planner.Request{Nodes: TypedNodes("t4", T4, 1+rng.IntN(3), 4), Now: int64(time.Hour)}
		for j := range 2 + rng.IntN(20) {
			step := map[string]float64{T4: 0.1 + rng.Float64()}
			req.Jobs = append(req.Jobs, RigidJob(string(rune('a'+j)), 1<<rng.IntN(3), 128, time.Duration(j)*time.Minute, step))
		}
		r := newRound(req)
		if _, ok := eachAtBest(r); !ok {
			contended++
		}
		want, err := simplex(r)
		must.NoError(t, err)
		must.Eq(t, want, oneType(r), must.Sprintf("trial %d: %d jobs", trial, len(req.Jobs)))
	}
	must.Greater(t, 100, contended)

	// Three identical jobs of 2 GPUs on 4 tie: the two that came first
	// (pairs are in arrival order) get all their time.
	tie := &planner.Request{Nodes: TypedNodes("t4", T4, 1, 4), Now: int64(time.Hour), Jobs: []*planner.Job{
		RigidJob("a", 2, 64, 2*time.Minute, map[string]float64{T4: 1}),
		RigidJob("b", 2, 64, time.Minute, map[string]float64{T4: 1}),
		RigidJob("c", 2, 64, 0, map[string]float64{T4: 1}),
	}}
	r := newRound(tie)
	must.Eq(t, "c", r.jobs[0].view.Job.ID)
	x, err := solve(r)
	must.NoError(t, err)
	must.Eq(t, []float64{1, 1, 0}, x)
}
