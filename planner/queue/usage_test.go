package queue

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// usageOf runs Usage on planner jobs and their placements, checks it is
// deterministic, and returns it.
func usageOf(t *testing.T, queues []*structs.Queue, nodes []*structs.Node, jobs []*planner.Job, placements ...*structs.Placement) map[string]*QueueUsage {
	t.Helper()
	var js []*structs.Job
	for _, j := range jobs {
		js = append(js, j.Job)
	}
	got := Usage(queues, nodes, js, placements)
	must.Eq(t, got, Usage(queues, nodes, js, placements), must.Sprint("not deterministic"))
	return got
}

func TestUsage_NoQueues(t *testing.T) {
	must.Nil(t, Usage(nil, []*structs.Node{gpuNode("n0", "NVIDIA A100", 8)}, nil, nil))
}

// TestUsage_BorrowerAndLenders: a borrows 5 A100s in cohort "lab",
// which b (6 idle) and c (4 idle, but a lending limit of 2) lend in
// proportion to what each may lend, 3.75 and 1.25, the unit left by
// rounding going to b's larger fraction.
func TestUsage_BorrowerAndLenders(t *testing.T) {
	nodes := []*structs.Node{gpuNode("n0", "NVIDIA A100", 8), gpuNode("n1", "NVIDIA A100", 8), gpuNode("n2", "NVIDIA A100", 8)}
	a := gpuQueue("a", "lab", a100(8))
	a.Quota.CPU = 10000
	c100 := a100(4)
	c100.LendingLimit = intp(2)
	queues := []*structs.Queue{a, gpuQueue("b", "lab", a100(8)), gpuQueue("c", "lab", c100), gpuQueue("d", "", a100(2))}
	a1, b1 := gpuJob("a", "a1", 1, 16), gpuJob("b", "b1", 1, 2)
	got := usageOf(t, queues, nodes, []*planner.Job{a1, b1}, at(a1, on("n0", 8), on("n1", 5)), at(b1, on("n2", 2)))

	must.MapLen(t, 4, got, must.Sprint("one per queue; the default one has no jobs"))
	must.Eq(t, &QueueUsage{
		Resources: []structs.QueueResource{
			{Resource: "gpu/NVIDIA A100", Quota: "A100", Nominal: 8, Used: 13, Borrowed: 5},
			{Resource: "cpu", Nominal: 10000, Used: 13000, Borrowed: 3000},
		},
		Jobs: []structs.JobKey{a1.Job.Key()},
	}, got["a"])
	must.Eq(t, []structs.QueueResource{{Resource: "gpu/NVIDIA A100", Quota: "A100", Nominal: 8, Used: 2, Lent: 4}}, got["b"].Resources)
	must.Eq(t, []structs.QueueResource{{Resource: "gpu/NVIDIA A100", Quota: "A100", Nominal: 4, Lent: 1}}, got["c"].Resources)
	must.Eq(t, []structs.QueueResource{{Resource: "gpu/NVIDIA A100", Quota: "A100", Nominal: 2}}, got["d"].Resources,
		must.Sprint("outside the cohort: lends nothing"))
}

// TestUsage_Idle: with nobody borrowing, idle quota is not lent; a
// queue outside any cohort that uses beyond its nominal borrows the
// capacity no nominal covers, which no queue lends.
func TestUsage_Idle(t *testing.T) {
	nodes := []*structs.Node{gpuNode("n0", "NVIDIA A100", 8), gpuNode("n1", "NVIDIA A100", 8)}
	queues := []*structs.Queue{gpuQueue("a", "lab", a100(4)), gpuQueue("b", "lab", a100(4)), gpuQueue("solo", "", a100(2))}
	s1 := gpuJob("solo", "s1", 1, 8)
	got := usageOf(t, queues, nodes, []*planner.Job{s1}, at(s1, on("n0", 6)))
	must.Eq(t, []structs.QueueResource{{Resource: "gpu/NVIDIA A100", Quota: "A100", Nominal: 4}}, got["a"].Resources)
	must.Eq(t, []structs.QueueResource{{Resource: "gpu/NVIDIA A100", Quota: "A100", Nominal: 4}}, got["b"].Resources)
	must.Eq(t, []structs.QueueResource{{Resource: "gpu/NVIDIA A100", Quota: "A100", Nominal: 2, Used: 6, Borrowed: 4}}, got["solo"].Resources)
	must.SliceEmpty(t, got["a"].Jobs)
}

// TestUsage_Pending: a paused job, one below its minimum and one the
// decision has not placed yet lack their minimum; the pending jobs come
// first.
func TestUsage_Pending(t *testing.T) {
	nodes := []*structs.Node{gpuNode("n0", "NVIDIA A100", 8), gpuNode("n1", "NVIDIA A100", 8)}
	q := gpuQueue("a", "", a100(8))
	q.Quota.MemoryMB = 16384
	queues := []*structs.Queue{q}
	run, paused, below, unplaced := gpuJob("a", "run", 2, 4), gpuJob("a", "paused", 4, 8), gpuJob("a", "below", 4, 8), gpuJob("a", "unplaced", 1, 1)
	got := usageOf(t, queues, nodes, []*planner.Job{run, paused, below, unplaced},
		at(run, on("n0", 4)), planner.Paused(paused, "no room"), at(below, on("n1", 1)))
	must.Eq(t, &QueueUsage{
		Resources: []structs.QueueResource{
			// paused lacks 4, below 3, unplaced 1.
			{Resource: "gpu/NVIDIA A100", Quota: "A100", Nominal: 8, Used: 5, Pending: 8},
			{Resource: "memory", Nominal: 16384, Used: 5 * 1024, Pending: 8 * 1024},
		},
		Jobs:        []structs.JobKey{below.Job.Key(), paused.Job.Key(), unplaced.Job.Key(), run.Job.Key()},
		PendingJobs: 3,
	}, got["a"])
}

// TestUsage_Types: a "*" quota is split over the cluster's types as Apply
// splits it (in proportion to their capacity: 10 over 8 + 4 GPUs is 7
// and 3), a quota of a type
// the cluster lacks keeps its nominal, and jobs of no queue's namespace
// are the default queue's.
func TestUsage_Types(t *testing.T) {
	nodes := []*structs.Node{gpuNode("n0", "NVIDIA A100", 8), gpuNode("n1", "Tesla T4", 4)}
	q := gpuQueue("a", "", &structs.GPUQuota{Type: "H100", Nominal: 2}, &structs.GPUQuota{Type: "*", Nominal: 10})
	a1, other := gpuJob("a", "a1", 1, 6), gpuJob("elsewhere", "o1", 1, 1)
	got := usageOf(t, []*structs.Queue{q}, nodes, []*planner.Job{a1, other}, at(a1, on("n1", 3)), at(other, on("n0", 1)))
	must.Eq(t, []structs.QueueResource{
		{Resource: "gpu/H100", Quota: "H100", Nominal: 2},
		{Resource: "gpu/NVIDIA A100", Quota: "*", Nominal: 7},
		{Resource: "gpu/Tesla T4", Quota: "*", Nominal: 3, Used: 3},
	}, got["a"].Resources)
	must.Eq(t, &QueueUsage{
		Resources: []structs.QueueResource{{Resource: "gpu/NVIDIA A100", Used: 1, Borrowed: 1}},
		Jobs:      []structs.JobKey{other.Job.Key()},
	}, got[structs.DefaultQueue])
}

// TestUsage_Properties checks Usage on random clusters, queues and
// decisions (fifo's, within the queues) against what the placements take,
// counted independently: used as placed, borrowed beyond the nominal, lent
// within the idle nominal and the lending limit and never more than the
// cohort borrows, and the same answer for the jobs in any order.
func TestUsage_Properties(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 12))
	lending := 0
	for trial := range 300 {
		msg := must.Sprintf("trial %d", trial)
		req := planner.RandomRequest(rng)
		for _, j := range req.Jobs {
			j.Job.Namespace = []string{"ns-0", "ns-1", "ns-2", "ns-3", "other"}[rng.IntN(5)]
			if j.Current != nil {
				j.Current.Namespace = j.Job.Namespace
			}
		}
		queues := randomQueues(t, rng)
		dec, err := builtin.Algorithms["fifo"]().Plan(req)
		must.NoError(t, err)
		dec, _ = Apply(req, dec, queues, nil)
		var jobs []*structs.Job
		for _, j := range req.Jobs {
			jobs = append(jobs, j.Job)
		}
		got := Usage(queues, req.Nodes, jobs, dec.Placements)

		rjobs, rplacements := slices.Clone(jobs), slices.Clone(dec.Placements)
		rng.Shuffle(len(rjobs), func(a, b int) { rjobs[a], rjobs[b] = rjobs[b], rjobs[a] })
		rng.Shuffle(len(rplacements), func(a, b int) { rplacements[a], rplacements[b] = rplacements[b], rplacements[a] })
		must.Eq(t, got, Usage(queues, req.Nodes, rjobs, rplacements), msg)

		want := map[string]map[string]int{}
		usage(want, req.Nodes, req.Jobs, dec.Placements, queues)
		lent, borrowed := map[[2]string]int{}, map[[2]string]int{}
		for name, u := range got {
			for typ, n := range want[name] {
				if typ != dimCPU && typ != dimMemory && n > 0 {
					must.NotNil(t, u.Resource("gpu/"+typ), must.Sprintf("trial %d: queue %s uses %d %s GPUs", trial, name, n, typ))
				}
			}
			for _, r := range u.Resources {
				at := must.Sprintf("trial %d: queue %s, %s: %+v", trial, name, r.Resource, r)
				typ := strings.TrimPrefix(r.Resource, "gpu/")
				must.Eq(t, want[name][typ], r.Used, at)
				must.Eq(t, max(r.Used-r.Nominal, 0), r.Borrowed, at)
				must.LessEq(t, max(r.Nominal-r.Used, 0), r.Lent, at)
				must.GreaterEq(t, 0, r.Pending, at)
				if r.IsGPU() {
					nominal, _, lend := nominalOf(queues, name, typ)
					must.Eq(t, nominal, r.Nominal, at)
					must.LessEq(t, lend, r.Lent, at)
				}
				key := [2]string{cohortOf(queues, name), r.Resource}
				lent[key] += r.Lent
				borrowed[key] += r.Borrowed
				if key[0] == "" {
					must.Eq(t, 0, r.Lent, at)
				}
			}
			pending := 0
			for _, k := range u.Jobs {
				p := dec.Placements[slices.IndexFunc(dec.Placements, func(p *structs.Placement) bool { return p.Key() == k })]
				least := findView(req, k).Minimum()
				if p.NumPS < least.PS || p.NumWorkers < least.Workers {
					pending++
				}
			}
			must.Eq(t, pending, u.PendingJobs, msg)
		}
		for key, n := range lent {
			must.LessEq(t, borrowed[key], n, must.Sprintf("trial %d: cohort %q lends %d %s, borrows %d", trial, key[0], n, key[1], borrowed[key]))
			if n > 0 {
				lending++
			}
		}
	}
	t.Logf("%d cohorts and resources lent in", lending)
	must.Greater(t, 10, lending, must.Sprint("trials where a cohort lends"))
}
