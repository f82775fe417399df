package queue

import (
	"fmt"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/builtin"
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
// over the capacity the one-type quotas leave: here all of it on the
// A100s, b's T4 quota taking the T4s.
func TestApply_AnyType(t *testing.T) {
	nodes := []*structs.Node{gpuNode("a0", "NVIDIA A100", 8), gpuNode("t0", "Tesla T4", 8)}
	a1, a2, b1 := gpuJob("a", "a1", 8, 8), gpuJob("a", "a2", 8, 8), gpuJob("b", "b1", 8, 8)
	queues := []*structs.Queue{
		gpuQueue("a", "c", &structs.GPUQuota{Type: "*", Nominal: 8}),
		gpuQueue("b", "c", &structs.GPUQuota{Type: "T4", Nominal: 8}),
	}
	got, pre := apply(t, nodes, []*planner.Job{a1, a2, b1},
		[]*structs.Placement{at(a1, on("a0", 8)), at(a2, on("t0", 8)), planner.Paused(b1, "no room")}, queues, nil)
	must.Eq(t, 8, got["a1"].NumWorkers, must.Sprint("the 8 of * go to the A100s, the T4s being b's"))
	must.True(t, got["a2"].Paused())
	must.Eq(t, `queue "a": over its quota of Tesla T4 GPUs (0 nominal + 0 borrowed); cohort "c" has nothing more to lend`, got["a2"].Reason)
	must.Eq(t, []*structs.NodeTasks{on("t0", 8)}, got["b1"].Nodes)
	must.SliceLen(t, 1, pre)
}

func TestNeverAdmitted(t *testing.T) {
	nodes := []*structs.Node{gpuNode("a1", "NVIDIA A100", 8), gpuNode("t1", "Tesla T4", 8)}
	limited := func(nominal, borrow int) *structs.GPUQuota {
		return &structs.GPUQuota{Type: "*", Nominal: nominal, BorrowingLimit: new(borrow)}
	}
	queues := []*structs.Queue{
		{Name: "a", Namespaces: []string{"a"}, Quota: structs.QueueQuota{GPU: []*structs.GPUQuota{limited(4, 2)}}},
		{Name: "b", Namespaces: []string{"b"}, Quota: structs.QueueQuota{GPU: []*structs.GPUQuota{
			{Type: "A100", Nominal: 2, BorrowingLimit: new(0)}, {Type: "T4", Nominal: 8}}}},
	}
	job := func(ns string, min int) *structs.Job { return gpuJob(ns, "j", min, min+2).Job }
	must.NoError(t, NeverAdmitted(queues, planner.NewCluster(nodes), job("a", 6)), must.Sprint("4 nominal + 2 borrowed"))
	err := NeverAdmitted(queues, planner.NewCluster(nodes), job("a", 7))
	must.EqError(t, err, `its minimum takes 7 GPUs, more than queue "a" may ever hold of any GPU type: at most 6 of NVIDIA A100 (4 nominal + 2 borrowing limit); 6 of Tesla T4 (4 nominal + 2 borrowing limit)`)
	must.NoError(t, NeverAdmitted(queues, planner.NewCluster(nodes), job("b", 7)), must.Sprint("T4s have no borrowing limit"))
	must.NoError(t, NeverAdmitted(queues, planner.NewCluster(nodes), job("other", 100)), must.Sprint("the default queue, undefined, bounds nothing"))
	must.NoError(t, NeverAdmitted(nil, planner.NewCluster(nodes), job("a", 100)))
}

// TestNominals: a quota of several types is split in proportion to the
// capacity the one-type quotas leave, rounding coordinated so that no
// type's nominals sum beyond its capacity.
func TestNominals(t *testing.T) {
	anyGPU := func(n int) *structs.GPUQuota { return &structs.GPUQuota{Type: "*", Nominal: n} }
	for _, tc := range []struct {
		name   string
		cap    []int // of "NVIDIA A100", "Tesla V100"
		quotas [][]*structs.GPUQuota
		want   [][]int // per queue, per type
	}{
		{"two * of 8 on 8+8", []int{8, 8}, [][]*structs.GPUQuota{{anyGPU(8)}, {anyGPU(8)}}, [][]int{{4, 4}, {4, 4}}},
		{"by capacity", []int{12, 4}, [][]*structs.GPUQuota{{anyGPU(8)}}, [][]int{{6, 2}}},
		{"rounding fills the types with room", []int{8, 8}, [][]*structs.GPUQuota{{anyGPU(5)}, {anyGPU(5)}, {anyGPU(6)}}, [][]int{{3, 2}, {2, 3}, {3, 3}}},
		{"one-type quotas first", []int{8, 8}, [][]*structs.GPUQuota{{a100(8)}, {anyGPU(8)}}, [][]int{{8, 0}, {0, 8}}},
		{"no capacity to spare: by capacity", []int{8, 8}, [][]*structs.GPUQuota{{a100(8)}, {{Type: "V100", Nominal: 8}}, {anyGPU(2)}}, [][]int{{8, 0}, {0, 8}, {1, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dims := []dim{{name: "NVIDIA A100", gpu: true, capacity: tc.cap[0]}, {name: "Tesla V100", gpu: true, capacity: tc.cap[1]}}
			var qs []*queueState
			for i, gq := range tc.quotas {
				qs = append(qs, &queueState{name: fmt.Sprint("q", i), quota: &structs.QueueQuota{GPU: gq}, shares: make([]share, len(dims))})
			}
			nominals(dims, qs)
			var got [][]int
			for _, q := range qs {
				got = append(got, []int{q.shares[0].nominal, q.shares[1].nominal})
			}
			must.Eq(t, tc.want, got)
		})
	}
}

// TestApply_Reclaim is the dev cluster's case: 2 nodes of 4 A100s and 2
// of 4 V100s, queues nlp and vision in cohort "research" with "*" 8
// each. nlp's job runs at 16, then vision's arrives: each queue's 8
// split 4 and 4 over the types, nlp shrinks to 8, and vision's job,
// started at its minimum, grows to its queue's 8: no GPU idle.
func TestApply_Reclaim(t *testing.T) {
	nodes := []*structs.Node{gpuNode("a0", "NVIDIA A100", 4), gpuNode("a1", "NVIDIA A100", 4), gpuNode("v0", "Tesla V100", 4), gpuNode("v1", "Tesla V100", 4)}
	anyGPU := &structs.GPUQuota{Type: "*", Nominal: 8}
	queues := []*structs.Queue{gpuQueue("nlp", "research", anyGPU), gpuQueue("vision", "research", anyGPU)}
	n1, v1 := gpuJob("nlp", "n1", 2, 16), gpuJob("vision", "v1", 4, 16)
	v1.Job.SubmitTime = n1.Job.SubmitTime + 1

	check := func(t *testing.T, got map[string]*structs.Placement, pre []Preemption) {
		t.Helper()
		must.Eq(t, 8, got["n1"].NumWorkers)
		must.Eq(t, 8, got["v1"].NumWorkers)
		perType := map[string]map[string]int{}
		usage(perType, nodes, []*planner.Job{n1, v1}, []*structs.Placement{got["n1"], got["v1"]}, queues)
		for _, q := range []string{"nlp", "vision"} {
			must.Eq(t, 4, perType[q]["NVIDIA A100"], must.Sprintf("queue %s: its 4 A100s", q))
			must.Eq(t, 4, perType[q]["Tesla V100"], must.Sprintf("queue %s: its 4 V100s", q))
		}
		must.StrContains(t, got["v1"].Reason, `queue "vision": started at its minimum of 0 ps and 4 workers`)
		must.StrContains(t, got["v1"].Reason, "grown to 0 ps and 8 workers within its quota")
		must.SliceLen(t, 1, pre)
		must.Eq(t, n1.Job.Key(), pre[0].Job)
		must.Eq(t, structs.Shape{Workers: 8}, pre[0].To)
	}

	t.Run("nlp alone keeps 16", func(t *testing.T) {
		got, pre := apply(t, nodes, []*planner.Job{n1}, []*structs.Placement{at(n1, on("a0", 4), on("a1", 4), on("v0", 4), on("v1", 4))}, queues, nil)
		must.Eq(t, 16, got["n1"].NumWorkers)
		must.SliceEmpty(t, pre)
	})

	t.Run("vision arrives", func(t *testing.T) {
		got, pre := apply(t, nodes, []*planner.Job{n1, v1},
			[]*structs.Placement{at(n1, on("a0", 4), on("a1", 4), on("v0", 4), on("v1", 4)), planner.Paused(v1, "no room")}, queues, nil)
		check(t, got, pre)
		must.Eq(t, []*structs.NodeTasks{on("a0", 4), on("v0", 4)}, got["n1"].Nodes)
		must.Eq(t, []*structs.NodeTasks{on("a1", 4), on("v1", 4)}, got["v1"].Nodes)
	})

	t.Run("the queue's running job grows too", func(t *testing.T) {
		v2 := gpuJob("vision", "v2", 2, 2)
		v2.Job.SubmitTime = v1.Job.SubmitTime + 1
		got, pre := apply(t, nodes, []*planner.Job{n1, v1, v2},
			[]*structs.Placement{at(n1, on("a0", 4), on("v0", 4), on("v1", 4)), at(v1, on("a1", 4)), planner.Paused(v2, "no room")}, queues, nil)
		must.Eq(t, []*structs.NodeTasks{on("a0", 4), on("v0", 4)}, got["n1"].Nodes)
		must.Eq(t, []*structs.NodeTasks{on("v1", 2)}, got["v2"].Nodes)
		must.Eq(t, []*structs.NodeTasks{on("a1", 4), on("v1", 2)}, got["v1"].Nodes, must.Sprint("onto the V100s, its A100s being all its queue's"))
		must.Eq(t, `queue "vision": grown to 0 ps and 6 workers within its quota (Tesla V100 GPUs: 4 nominal + 0 borrowed) from the algorithm's 0 ps and 4 workers`, got["v1"].Reason)
		must.SliceLen(t, 1, pre)
		must.Eq(t, n1.Job.Key(), pre[0].Job)
	})

	t.Run("after fifo", func(t *testing.T) {
		n1.Current = at(n1, on("a0", 4), on("a1", 4), on("v0", 4), on("v1", 4))
		defer func() { n1.Current = nil }()
		req := &planner.Request{Nodes: nodes, Jobs: []*planner.Job{n1, v1}}
		dec, err := builtin.Algorithms["fifo"]().Plan(req)
		must.NoError(t, err)
		planner.SortPlacements(dec.Placements)
		got, pre := apply(t, nodes, req.Jobs, dec.Placements, queues, nil)
		check(t, got, pre)
	})
}

// TestApply_Priority: within a queue at its quota, a paused job starts
// ahead of running jobs of strictly lower priority, which shrink toward
// their minimum, then pause, lowest priority and least progress first;
// where that cannot make room, nothing changes.
func TestApply_Priority(t *testing.T) {
	queues := []*structs.Queue{gpuQueue("nlp", "", a100(8))}
	one := []*structs.Node{gpuNode("n0", "NVIDIA A100", 8)}
	two := []*structs.Node{gpuNode("n0", "NVIDIA A100", 4), gpuNode("n1", "NVIDIA A100", 4)}
	job := func(id string, minW, maxW, priority int, step float64) *planner.Job {
		j := gpuJob("nlp", id, minW, maxW)
		j.Job.Priority, j.Step = priority, step
		return j
	}
	preempted := func(by string, pb, pv int) string {
		return fmt.Sprintf(`queue "nlp": preempted by higher-priority job %q (priority %d > %d)`, by, pb, pv)
	}

	t.Run("an elastic job shrinks", func(t *testing.T) {
		low, urgent := job("low", 2, 8, 50, 0), job("urgent", 4, 8, 90, 0)
		got, pre := apply(t, one, []*planner.Job{low, urgent}, []*structs.Placement{at(low, on("n0", 8)), planner.Paused(urgent, "no room")}, queues, nil)
		must.Eq(t, []*structs.NodeTasks{on("n0", 4)}, got["low"].Nodes)
		must.Eq(t, preempted("urgent", 90, 50)+"; shrunk to 0 ps and 4 workers", got["low"].Reason)
		must.Eq(t, []*structs.NodeTasks{on("n0", 4)}, got["urgent"].Nodes)
		must.Eq(t, `queue "nlp": started at its minimum of 0 ps and 4 workers on A100 GPUs within its quota (8 nominal + 0 borrowed), preempting its lower-priority jobs "low"`, got["urgent"].Reason)
		must.Eq(t, []Preemption{{Job: low.Job.Key(), Queue: "nlp", From: structs.Shape{Workers: 8}, To: structs.Shape{Workers: 4}, Reason: preempted("urgent", 90, 50)}}, pre)
	})

	t.Run("a rigid job pauses", func(t *testing.T) {
		low, urgent := job("low", 8, 8, 50, 0), job("urgent", 4, 8, 90, 0)
		got, pre := apply(t, one, []*planner.Job{low, urgent}, []*structs.Placement{at(low, on("n0", 8)), planner.Paused(urgent, "no room")}, queues, nil)
		must.True(t, got["low"].Paused())
		must.Eq(t, preempted("urgent", 90, 50), got["low"].Reason)
		must.Eq(t, 4, got["urgent"].NumWorkers)
		must.Eq(t, []Preemption{{Job: low.Job.Key(), Queue: "nlp", From: structs.Shape{Workers: 8}, Reason: preempted("urgent", 90, 50)}}, pre)
	})

	t.Run("lowest priority first, then least progress", func(t *testing.T) {
		for _, tc := range []struct {
			name           string
			prio1, prio2   int
			step1, step2   float64
			paused, stayed string
		}{
			{"by priority", 40, 50, 500, 10, "a1", "a2"},
			{"by progress", 50, 50, 500, 10, "a2", "a1"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				a1, a2, urgent := job("a1", 4, 4, tc.prio1, tc.step1), job("a2", 4, 4, tc.prio2, tc.step2), job("urgent", 4, 4, 90, 0)
				got, pre := apply(t, one, []*planner.Job{a1, a2, urgent},
					[]*structs.Placement{at(a1, on("n0", 4)), at(a2, on("n0", 4)), planner.Paused(urgent, "no room")}, queues, nil)
				must.True(t, got[tc.paused].Paused())
				must.Eq(t, 4, got[tc.stayed].NumWorkers)
				must.Eq(t, "the algorithm's", got[tc.stayed].Reason)
				must.Eq(t, 4, got["urgent"].NumWorkers)
				must.SliceLen(t, 1, pre)
				must.Eq(t, tc.paused, pre[0].Job.ID)
			})
		}
	})

	t.Run("a job shrunk while pausing one was enough grows back", func(t *testing.T) {
		// Shrinking takes low1 to 2 and low2 to 3, not enough for 4;
		// pausing low1 is, and low2 gets its fourth worker back.
		low1, low2, urgent := job("low1", 2, 4, 30, 0), job("low2", 3, 4, 40, 0), job("urgent", 4, 4, 90, 0)
		got, pre := apply(t, two, []*planner.Job{low1, low2, urgent},
			[]*structs.Placement{at(low1, on("n0", 4)), at(low2, on("n1", 4)), planner.Paused(urgent, "no room")}, queues, nil)
		must.True(t, got["low1"].Paused())
		must.Eq(t, []*structs.NodeTasks{on("n1", 4)}, got["low2"].Nodes)
		must.Eq(t, "the algorithm's", got["low2"].Reason)
		must.Eq(t, []*structs.NodeTasks{on("n0", 4)}, got["urgent"].Nodes)
		must.SliceLen(t, 1, pre)
		must.Eq(t, low1.Job.Key(), pre[0].Job)
	})

	t.Run("equal priority: nothing", func(t *testing.T) {
		low, urgent := job("low", 2, 8, 90, 0), job("urgent", 4, 8, 90, 0)
		got, pre := apply(t, one, []*planner.Job{low, urgent}, []*structs.Placement{at(low, on("n0", 8)), planner.Paused(urgent, "no room")}, queues, nil)
		must.Eq(t, 8, got["low"].NumWorkers)
		must.Eq(t, "the algorithm's", got["low"].Reason)
		must.True(t, got["urgent"].Paused())
		must.SliceEmpty(t, pre)
	})

	t.Run("not enough even after pausing: nothing", func(t *testing.T) {
		// urgent needs 6 of the queue's 8; only low (4) is below it, top
		// (4) is above.
		low, top, urgent := job("low", 4, 4, 50, 0), job("top", 4, 4, 95, 0), job("urgent", 6, 6, 90, 0)
		got, pre := apply(t, two, []*planner.Job{low, top, urgent},
			[]*structs.Placement{at(low, on("n0", 4)), at(top, on("n1", 4)), planner.Paused(urgent, "no room")}, queues, nil)
		must.Eq(t, 4, got["low"].NumWorkers)
		must.Eq(t, "the algorithm's", got["low"].Reason)
		must.Eq(t, 4, got["top"].NumWorkers)
		must.True(t, got["urgent"].Paused())
		must.Eq(t, "no room", got["urgent"].Reason)
		must.SliceEmpty(t, pre)
	})
}
