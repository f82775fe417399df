package queue

import (
	"fmt"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// gpuNode returns a ready node with gpus GPUs of model ("NVIDIA A100",
// "Tesla T4"), 64 cores and 256 GB.
func gpuNode(id, model string, gpus int) *structs.Node {
	n := &structs.Node{
		ID: id, Name: id, Datacenter: "dc1", Status: structs.NodeStatusReady, Eligible: true,
		CPU: 64000, MemoryMB: 262144, NodeClass: "gpu",
		Attributes: map[string]string{"kernel.name": "linux"},
	}
	d := &structs.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: model,
		Attributes: map[string]*structs.Attribute{"memory": structs.ParseAttribute("40 GiB")}}
	for g := range gpus {
		d.Instances = append(d.Instances, &structs.NodeDevice{ID: fmt.Sprintf("%s-gpu-%d", id, g), Healthy: true})
	}
	n.Devices = []*structs.NodeDeviceResource{d}
	return n
}

// gpuJob returns an all-reduce job of namespace ns whose workers take one
// GPU each, between minW and maxW of them.
func gpuJob(ns, id string, minW, maxW int) *planner.Job {
	j := planner.MockAllReduceJob(id, structs.Bounds{Min: minW, Max: maxW}, nil)
	j.Namespace = ns
	return &planner.Job{Job: j}
}

// on is an entry of workers on a node.
func on(node string, workers int) *structs.NodeTasks {
	return &structs.NodeTasks{NodeID: node, Workers: workers}
}

// at is job j's placement on entries.
func at(j *planner.Job, entries ...*structs.NodeTasks) *structs.Placement {
	p := &structs.Placement{Namespace: j.Job.Namespace, JobID: j.Job.ID, Nodes: entries, Reason: "the algorithm's"}
	for _, e := range entries {
		p.NumWorkers += e.Workers
		p.NumPS += e.PS
	}
	return p
}

// gpuQueue returns a queue of namespace ns (and name ns) in cohort with
// GPU quotas.
func gpuQueue(ns, cohort string, gpu ...*structs.GPUQuota) *structs.Queue {
	q := &structs.Queue{Name: ns, Namespaces: []string{ns}, Cohort: cohort, Quota: structs.QueueQuota{GPU: gpu}}
	q.Canonicalize()
	return q
}

func a100(nominal int) *structs.GPUQuota { return &structs.GPUQuota{Type: "A100", Nominal: nominal} }

func intp(n int) *int { return &n }

// apply runs Apply on the jobs with the decision placements, checks the
// result with CheckDecision, and returns it by job ID.
func apply(t *testing.T, nodes []*structs.Node, jobs []*planner.Job, placements []*structs.Placement, queues []*structs.Queue, held []planner.Held) (map[string]*structs.Placement, []Preemption) {
	t.Helper()
	req := &planner.Request{Nodes: nodes, Jobs: jobs}
	dec := &planner.Decision{Placements: placements}
	planner.SortPlacements(dec.Placements)
	must.NoError(t, planner.CheckDecision(req, dec), must.Sprint("the test's own decision"))
	out, pre := Apply(req, dec, queues, held)
	must.NoError(t, planner.CheckDecision(req, out))
	again, pre2 := Apply(req, dec, queues, held)
	must.Eq(t, out, again, must.Sprint("not deterministic"))
	must.Eq(t, pre, pre2)
	byID := map[string]*structs.Placement{}
	for _, p := range out.Placements {
		byID[p.JobID] = p
	}
	return byID, pre
}

func TestApply_NoQueues(t *testing.T) {
	nodes := []*structs.Node{gpuNode("n0", "NVIDIA A100", 8)}
	a1 := gpuJob("a", "a1", 1, 8)
	req := &planner.Request{Nodes: nodes, Jobs: []*planner.Job{a1}}
	dec := &planner.Decision{Placements: []*structs.Placement{at(a1, on("n0", 8))}}
	out, pre := Apply(req, dec, nil, nil)
	must.True(t, out == dec)
	must.Nil(t, pre)
}

// TestApply_Cohort is the worked case of issue 32: two queues of 8 A100s
// each in cohort "research" on 16 A100s.
func TestApply_Cohort(t *testing.T) {
	nodes := []*structs.Node{gpuNode("n0", "NVIDIA A100", 8), gpuNode("n1", "NVIDIA A100", 8)}
	queues := []*structs.Queue{gpuQueue("a", "research", a100(8)), gpuQueue("b", "research", a100(8))}

	t.Run("a borrows b's idle GPUs", func(t *testing.T) {
		a1 := gpuJob("a", "a1", 2, 16)
		got, pre := apply(t, nodes, []*planner.Job{a1}, []*structs.Placement{at(a1, on("n0", 8), on("n1", 8))}, queues, nil)
		must.Eq(t, 16, got["a1"].NumWorkers)
		must.Eq(t, "the algorithm's", got["a1"].Reason)
		must.SliceEmpty(t, pre)
	})

	t.Run("b's job arrives: a shrinks, b runs at its nominal", func(t *testing.T) {
		a1, b1 := gpuJob("a", "a1", 2, 16), gpuJob("b", "b1", 8, 8)
		got, pre := apply(t, nodes, []*planner.Job{a1, b1},
			[]*structs.Placement{at(a1, on("n0", 8), on("n1", 8)), planner.Paused(b1, "no room")}, queues, nil)
		want := `queue "a": over its quota of A100 GPUs (8 nominal + 0 borrowed); cohort "research" has nothing more to lend`
		must.Eq(t, 8, got["a1"].NumWorkers)
		must.Eq(t, []*structs.NodeTasks{on("n0", 8)}, got["a1"].Nodes, must.Sprint("workers come off the last nodes"))
		must.Eq(t, want+"; shrunk to 0 ps and 8 workers", got["a1"].Reason)
		must.Eq(t, 8, got["b1"].NumWorkers)
		must.Eq(t, []*structs.NodeTasks{on("n1", 8)}, got["b1"].Nodes)
		must.StrContains(t, got["b1"].Reason, `queue "b": started at its minimum`)
		must.Eq(t, []Preemption{{Job: a1.Job.Key(), Queue: "a", From: structs.Shape{Workers: 16}, To: structs.Shape{Workers: 8}, Reason: want}}, pre)
	})

	t.Run("the next round: a's shrunk job, paused by a fixed-size algorithm, is kept", func(t *testing.T) {
		// fifo keeps a job only at its request (16 workers) and finds no
		// room for it: it pauses the job the queues shrank.
		a1, b1 := gpuJob("a", "a1", 2, 16), gpuJob("b", "b1", 8, 8)
		a1.Current, b1.Current = at(a1, on("n0", 8)), at(b1, on("n1", 8))
		got, pre := apply(t, nodes, []*planner.Job{a1, b1},
			[]*structs.Placement{planner.Paused(a1, "fifo: waiting for room"), at(b1, on("n1", 8))}, queues, nil)
		must.Eq(t, []*structs.NodeTasks{on("n0", 8)}, got["a1"].Nodes)
		must.Eq(t, `queue "a": kept at 0 ps and 8 workers within its quota`, got["a1"].Reason)
		must.Eq(t, 8, got["b1"].NumWorkers)
		must.SliceEmpty(t, pre)
	})

	t.Run("a job paused for a job of its own queue is not kept", func(t *testing.T) {
		a1, a2, b1 := gpuJob("a", "a1", 8, 8), gpuJob("a", "a2", 8, 8), gpuJob("b", "b1", 8, 8)
		a1.Current, b1.Current = at(a1, on("n0", 8)), at(b1, on("n1", 8))
		got, _ := apply(t, nodes, []*planner.Job{a1, a2, b1},
			[]*structs.Placement{planner.Paused(a1, "the algorithm's"), at(a2, on("n0", 8)), at(b1, on("n1", 8))}, queues, nil)
		must.True(t, got["a1"].Paused())
		must.Eq(t, 8, got["a2"].NumWorkers)
	})

	t.Run("shrinking is not enough: the lower priority job pauses", func(t *testing.T) {
		a1, a2, b1 := gpuJob("a", "a1", 6, 8), gpuJob("a", "a2", 8, 8), gpuJob("b", "b1", 8, 8)
		a1.Job.Priority, a2.Job.Priority = 70, 30
		got, pre := apply(t, nodes, []*planner.Job{a1, a2, b1},
			[]*structs.Placement{at(a1, on("n0", 8)), at(a2, on("n1", 8)), planner.Paused(b1, "no room")}, queues, nil)
		must.Eq(t, 8, got["a1"].NumWorkers, must.Sprint("shrunk, then grown back once a2 paused"))
		must.Eq(t, "the algorithm's", got["a1"].Reason)
		must.True(t, got["a2"].Paused())
		must.StrContains(t, got["a2"].Reason, `queue "a": over its quota of A100 GPUs`)
		must.Eq(t, 8, got["b1"].NumWorkers)
		must.SliceLen(t, 1, pre)
		must.Eq(t, a2.Job.Key(), pre[0].Job)
		must.Eq(t, structs.Shape{}, pre[0].To)
	})

	t.Run("lower progress gives back first among equal priorities", func(t *testing.T) {
		a1, a2, b1 := gpuJob("a", "a1", 8, 8), gpuJob("a", "a2", 8, 8), gpuJob("b", "b1", 8, 8)
		a1.Step, a2.Step = 10, 500
		got, _ := apply(t, nodes, []*planner.Job{a1, a2, b1},
			[]*structs.Placement{at(a1, on("n0", 8)), at(a2, on("n1", 8)), planner.Paused(b1, "no room")}, queues, nil)
		must.True(t, got["a1"].Paused())
		must.Eq(t, 8, got["a2"].NumWorkers)
		must.Eq(t, 8, got["b1"].NumWorkers)
	})
}

// TestApply_Limits: a lender's lending limit and a borrower's borrowing
// limit bound what moves between them.
func TestApply_Limits(t *testing.T) {
	nodes := []*structs.Node{gpuNode("n0", "NVIDIA A100", 8), gpuNode("n1", "NVIDIA A100", 8)}
	a1 := gpuJob("a", "a1", 2, 16)
	dec := []*structs.Placement{at(a1, on("n0", 8), on("n1", 8))}

	lend := a100(8)
	lend.LendingLimit = intp(2)
	got, pre := apply(t, nodes, []*planner.Job{a1}, dec, []*structs.Queue{gpuQueue("a", "c", a100(8)), gpuQueue("b", "c", lend)}, nil)
	must.Eq(t, 10, got["a1"].NumWorkers)
	must.Eq(t, `queue "a": over its quota of A100 GPUs (8 nominal + 2 borrowed); cohort "c" has nothing more to lend`, pre[0].Reason)

	borrow := a100(8)
	borrow.BorrowingLimit = intp(3)
	got, pre = apply(t, nodes, []*planner.Job{a1}, dec, []*structs.Queue{gpuQueue("a", "c", borrow), gpuQueue("b", "c", a100(8))}, nil)
	must.Eq(t, 11, got["a1"].NumWorkers)
	must.Eq(t, `queue "a": over its quota of A100 GPUs (8 nominal + 3 borrowed); its borrowing limit is reached`, pre[0].Reason)
}

// TestApply_Cohorts: queues of different cohorts never borrow from each
// other; unclaimed capacity is everyone's.
func TestApply_Cohorts(t *testing.T) {
	nodes := []*structs.Node{gpuNode("n0", "NVIDIA A100", 8), gpuNode("n1", "NVIDIA A100", 8), gpuNode("n2", "NVIDIA A100", 4)}
	a1 := gpuJob("a", "a1", 2, 20)
	dec := []*structs.Placement{at(a1, on("n0", 8), on("n1", 8), on("n2", 4))}
	got, pre := apply(t, nodes, []*planner.Job{a1}, dec, []*structs.Queue{gpuQueue("a", "x", a100(8)), gpuQueue("b", "y", a100(8))}, nil)
	must.Eq(t, 12, got["a1"].NumWorkers, must.Sprint("its 8 and the 4 no queue claims, none of b's"))
	must.Eq(t, `queue "a": over its quota of A100 GPUs (8 nominal + 4 borrowed); cohort "x" has nothing more to lend`, pre[0].Reason)
	must.Eq(t, []*structs.NodeTasks{on("n0", 8), on("n1", 4)}, got["a1"].Nodes, must.Sprint("workers come off the last nodes first"))
}

// TestApply_DefaultQueue: jobs of a namespace no queue names run only on
// unclaimed capacity, unless the default queue is defined.
func TestApply_DefaultQueue(t *testing.T) {
	nodes := []*structs.Node{gpuNode("n0", "NVIDIA A100", 8), gpuNode("n1", "NVIDIA A100", 8)}
	d1, a1 := gpuJob("other", "d1", 2, 16), gpuJob("a", "a1", 4, 4)
	dec := []*structs.Placement{at(d1, on("n0", 8), on("n1", 8)), planner.Paused(a1, "no room")}
	queues := []*structs.Queue{gpuQueue("a", "", a100(12))}
	got, pre := apply(t, nodes, []*planner.Job{d1, a1}, dec, queues, nil)
	must.Eq(t, 4, got["d1"].NumWorkers, must.Sprint("the 4 GPUs no queue claims"))
	must.Eq(t, `queue "default": over its quota of NVIDIA A100 GPUs (0 nominal + 4 borrowed); it is in no cohort and no more capacity is unclaimed`, pre[0].Reason)
	must.Eq(t, 4, got["a1"].NumWorkers)

	def := gpuQueue("default", "", a100(4))
	def.Namespaces = nil
	got, _ = apply(t, nodes, []*planner.Job{d1, a1}, dec, append(queues, def), nil)
	must.Eq(t, 4, got["d1"].NumWorkers, must.Sprint("its own 4, nothing unclaimed"))
	must.Eq(t, 4, got["a1"].NumWorkers)
}

// TestApply_Types: quotas per GPU type; a queue without a quota of a type
// only borrows it.
func TestApply_Types(t *testing.T) {
	nodes := []*structs.Node{gpuNode("a0", "NVIDIA A100-SXM4-40GB", 8), gpuNode("t0", "Tesla T4", 8)}
	a1, a2, b1 := gpuJob("a", "a1", 8, 8), gpuJob("a", "a2", 4, 8), gpuJob("b", "b1", 8, 8)
	b1.Job.Worker.Resources.Devices[0].Name = "nvidia/gpu/Tesla T4"
	queues := []*structs.Queue{
		gpuQueue("a", "c", a100(8)),
		gpuQueue("b", "c", &structs.GPUQuota{Type: "t4", Nominal: 8}),
	}
	// b idle: a borrows the T4s.
	got, pre := apply(t, nodes, []*planner.Job{a1, a2}, []*structs.Placement{at(a1, on("a0", 8)), at(a2, on("t0", 8))}, queues, nil)
	must.Eq(t, 8, got["a2"].NumWorkers)
	must.SliceEmpty(t, pre)
	// b's T4 job arrives: a gives the T4s back, keeps its A100s.
	got, pre = apply(t, nodes, []*planner.Job{a1, a2, b1},
		[]*structs.Placement{at(a1, on("a0", 8)), at(a2, on("t0", 8)), planner.Paused(b1, "no room")}, queues, nil)
	must.Eq(t, 8, got["a1"].NumWorkers)
	must.True(t, got["a2"].Paused())
	must.Eq(t, `queue "a": over its quota of Tesla T4 GPUs (0 nominal + 0 borrowed); cohort "c" has nothing more to lend`, got["a2"].Reason)
	must.Eq(t, []*structs.NodeTasks{on("t0", 8)}, got["b1"].Nodes)
	must.SliceLen(t, 1, pre)
}

// TestApply_Held: a change in flight counts toward its queue, and its
// GPUs toward the cluster's.
func TestApply_Held(t *testing.T) {
	all := []*structs.Node{gpuNode("n0", "NVIDIA A100", 8), gpuNode("n1", "NVIDIA A100", 8)}
	queues := []*structs.Queue{gpuQueue("a", "c", a100(8)), gpuQueue("b", "c", a100(8))}
	for _, tc := range []struct {
		held, want int
	}{{8, 8}, {4, 12}, {0, 16}} {
		t.Run(fmt.Sprint(tc.held), func(t *testing.T) {
			b1 := gpuJob("b", "b1", tc.held, tc.held)
			var held []planner.Held
			if tc.held > 0 {
				held = []planner.Held{{Job: b1, Placement: at(b1, on("n1", tc.held))}}
			}
			nodes := planner.Reserve(all, held)
			a1 := gpuJob("a", "a1", 2, 16)
			got, _ := apply(t, nodes, []*planner.Job{a1}, []*structs.Placement{at(a1, on("n0", 8), on("n1", 8-tc.held))}, queues, held)
			must.Eq(t, tc.want, got["a1"].NumWorkers)
		})
	}
}

// TestApply_CPU: a queue's CPU quota is one more resource, with the same
// rules.
func TestApply_CPU(t *testing.T) {
	nodes := []*structs.Node{gpuNode("n0", "NVIDIA A100", 0)}
	nodes[0].CPU = 16000
	j := planner.MockJob("a1", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 15})
	j.Namespace = "a"
	a1 := &planner.Job{Job: j}
	q := gpuQueue("a", "")
	q.Quota.CPU = 8000
	other := gpuQueue("b", "")
	other.Quota.CPU = 6000
	got, pre := apply(t, nodes, []*planner.Job{a1}, []*structs.Placement{at(a1, &structs.NodeTasks{NodeID: "n0", PS: 1, Workers: 15})}, []*structs.Queue{q, other}, nil)
	// 8000 nominal + 2000 unclaimed: 1 ps and 9 workers.
	must.Eq(t, structs.Shape{PS: 1, Workers: 9}, got["a1"].Shape())
	must.Eq(t, `queue "a": over its quota of CPU (8000 MHz nominal + 2000 MHz borrowed); it is in no cohort and no more capacity is unclaimed`, pre[0].Reason)
}

// TestWaterFill: borrowers share a pool by weight, none beyond what it
// wants, deterministically.
func TestWaterFill(t *testing.T) {
	for _, tc := range []struct {
		name    string
		weights []float64
		wants   []int
		pool    int
		want    []int
	}{
		{"equal", []float64{1, 1}, []int{10, 10}, 8, []int{4, 4}},
		{"weighted", []float64{3, 1}, []int{10, 10}, 8, []int{6, 2}},
		{"one satisfied", []float64{1, 1}, []int{1, 10}, 8, []int{1, 7}},
		{"remainder by name", []float64{1, 1, 1}, []int{5, 5, 5}, 7, []int{3, 2, 2}},
		{"pool larger", []float64{1, 2}, []int{2, 3}, 100, []int{2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var qs []*queueState
			var members []int
			for i, w := range tc.weights {
				qs = append(qs, &queueState{name: fmt.Sprint("q", i), weight: w, shares: make([]share, 1)})
				members = append(members, i)
			}
			wants := append([]int(nil), tc.wants...)
			waterFill(qs, members, wants, 0, tc.pool)
			var got []int
			for _, q := range qs {
				got = append(got, q.shares[0].borrowed)
			}
			must.Eq(t, tc.want, got)
		})
	}
}

// TestApply_AnyType: a quota of type "*" counts every GPU type, split
// over the types by the queue's demand in the order of their names.
func TestApply_AnyType(t *testing.T) {
	nodes := []*structs.Node{gpuNode("a0", "NVIDIA A100", 8), gpuNode("t0", "Tesla T4", 8)}
	a1, a2, b1 := gpuJob("a", "a1", 8, 8), gpuJob("a", "a2", 8, 8), gpuJob("b", "b1", 8, 8)
	queues := []*structs.Queue{
		gpuQueue("a", "c", &structs.GPUQuota{Type: "*", Nominal: 8}),
		gpuQueue("b", "c", &structs.GPUQuota{Type: "T4", Nominal: 8}),
	}
	got, pre := apply(t, nodes, []*planner.Job{a1, a2, b1},
		[]*structs.Placement{at(a1, on("a0", 8)), at(a2, on("t0", 8)), planner.Paused(b1, "no room")}, queues, nil)
	must.Eq(t, 8, got["a1"].NumWorkers, must.Sprint("the 8 of * go to the A100s, first by name"))
	must.True(t, got["a2"].Paused())
	must.Eq(t, `queue "a": over its quota of Tesla T4 GPUs (0 nominal + 0 borrowed); cohort "c" has nothing more to lend`, got["a2"].Reason)
	must.Eq(t, []*structs.NodeTasks{on("t0", 8)}, got["b1"].Nodes)
	must.SliceLen(t, 1, pre)
}
