package planner

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestCheckDecision_PSAloneOnCPUNode: a job whose workers need GPUs and
// whose parameter servers do not may put a parameter server alone on a
// node without GPUs. Checking that decision once panicked, taking zero
// workers where workers cannot run.
func TestCheckDecision_PSAloneOnCPUNode(t *testing.T) {
	h := NewHarness(t)
	h.AddNodes("cpu", 1, 8000, 16384, 0)
	h.AddNodes("gpu", 1, 8000, 16384, 2)
	j := MockJob("a", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 2})
	j.Worker.Resources.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}
	j.ParameterServer = &structs.Role{Driver: "exec", Resources: &structs.Resources{CPU: 500, MemoryMB: 512}}
	req := &Request{Nodes: h.Nodes, Jobs: []*Job{h.AddJob(j, nil)}}
	dec := &Decision{Placements: []*structs.Placement{{
		Namespace: "default", JobID: "a", NumPS: 1, NumWorkers: 2,
		Nodes: []*structs.NodeTasks{{NodeID: "cpu-0", PS: 1}, {NodeID: "gpu-0", Workers: 2}},
	}}}
	must.NoError(t, CheckDecision(req, dec))

	dec.Placements[0].Nodes = []*structs.NodeTasks{{NodeID: "cpu-0", PS: 1, Workers: 2}}
	must.ErrorIs(t, CheckDecision(req, dec), ErrInvalidDecision, must.Sprint("workers where no GPU is"))
}

// TestCheckDecision_Sizes checks the rules of per-task sizes: only for a
// resource given as a range, within it, and capacity counted at the size.
func TestCheckDecision_Sizes(t *testing.T) {
	h := NewHarness(t)
	h.AddNodes("n", 2, 8000, 16384, 0)
	j := MockJob("a", structs.Bounds{Min: 1, Max: 2}, structs.Bounds{Min: 1, Max: 4})
	j.Worker.Resources = &structs.Resources{
		CPURange:    &structs.ResourceRange{Min: 1000, Max: 6000},
		MemoryRange: &structs.ResourceRange{Min: 512}, // no max: the node's
	}
	j.ParameterServer = &structs.Role{Driver: "exec", Resources: &structs.Resources{CPU: 500, MemoryMB: 512}}
	j.Canonicalize()
	must.NoError(t, j.Validate())
	must.Eq(t, 6000, j.Worker.Resources.CPU)
	req := &Request{Nodes: h.Nodes, Jobs: []*Job{h.AddJob(j, nil)}}

	cases := []struct {
		name  string
		nodes []*structs.NodeTasks
		err   string
	}{
		{"unsized", []*structs.NodeTasks{{NodeID: "n-0", PS: 1, Workers: 1}, {NodeID: "n-1", Workers: 1}}, ""},
		{"two sizes on a node", []*structs.NodeTasks{
			{NodeID: "n-0", PS: 1, Workers: 1, WorkerSize: structs.TaskSize{CPU: 3000}},
			{NodeID: "n-0", Workers: 1, WorkerSize: structs.TaskSize{CPU: 4000, MemoryMB: 8192}},
		}, ""},
		{"memory up to the node", []*structs.NodeTasks{{NodeID: "n-0", PS: 1, Workers: 2, WorkerSize: structs.TaskSize{CPU: 1000, MemoryMB: 7936}}}, ""},
		{"over the node at the sizes", []*structs.NodeTasks{{NodeID: "n-0", PS: 1, Workers: 2, WorkerSize: structs.TaskSize{CPU: 4000}}},
			`job "a"'s 1 ps and 2 workers do not fit on node n-0 (free cpu 8000 MHz`},
		{"memory over the node", []*structs.NodeTasks{{NodeID: "n-0", PS: 1, Workers: 1, WorkerSize: structs.TaskSize{MemoryMB: 16000}}},
			`do not fit on node n-0`},
		{"above the range", []*structs.NodeTasks{{NodeID: "n-0", PS: 1, Workers: 1, WorkerSize: structs.TaskSize{CPU: 7000}}},
			`job "a"'s worker on node "n-0": cpu is sized 7000 MHz, outside the role's range 1000..6000`},
		{"below the range", []*structs.NodeTasks{{NodeID: "n-0", PS: 1, Workers: 1, WorkerSize: structs.TaskSize{MemoryMB: 256}}},
			`memory is sized 256 MB, outside the role's range 512..node`},
		{"fixed role", []*structs.NodeTasks{{NodeID: "n-0", PS: 1, Workers: 1, PSSize: structs.TaskSize{CPU: 1000}}},
			`job "a"'s ps on node "n-0": cpu is sized 1000 MHz, but the role's cpu is fixed`},
		{"same sizes twice", []*structs.NodeTasks{{NodeID: "n-0", PS: 1}, {NodeID: "n-0", Workers: 1}},
			`node "n-0" appears more than once`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &structs.Placement{Namespace: "default", JobID: "a"}
			for _, nt := range tc.nodes {
				p.NumPS += nt.PS
				p.NumWorkers += nt.Workers
			}
			p.Nodes = tc.nodes
			err := CheckDecision(req, &Decision{Placements: []*structs.Placement{p}})
			if tc.err == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, ErrInvalidDecision)
			must.ErrorContains(t, err, tc.err)
		})
	}

	// KeepCurrent takes a sized placement at its sizes: 2 workers at
	// 3500 MHz and the PS fill n-0 but for 500 MHz.
	cur := &structs.Placement{Namespace: "default", JobID: "a", NumPS: 1, NumWorkers: 2, Nodes: []*structs.NodeTasks{
		{NodeID: "n-0", PS: 1, Workers: 2, WorkerSize: structs.TaskSize{CPU: 3500}},
	}}
	c := NewCluster(h.Nodes)
	kept := c.KeepCurrent(cur, c.JobTasks(req.Jobs[0]), 1, 2)
	must.Eq(t, cur, kept)
	cpu, _, _ := c.Free(0)
	must.Eq(t, 500, cpu)
	reserved := Reserve(h.Nodes, []Held{{Job: req.Jobs[0], Placement: cur}})
	must.Eq(t, 500, reserved[0].CPU)

	// Two entries of one node must fit together: 500 + 3500 and 4500 MHz
	// each fit n-0's 8000 MHz, but not both.
	split := &structs.Placement{Namespace: "default", JobID: "a", NumPS: 1, NumWorkers: 2, Nodes: []*structs.NodeTasks{
		{NodeID: "n-0", PS: 1, Workers: 1, WorkerSize: structs.TaskSize{CPU: 3500}},
		{NodeID: "n-0", Workers: 1, WorkerSize: structs.TaskSize{CPU: 4500}},
	}}
	c = NewCluster(h.Nodes)
	must.Nil(t, c.KeepCurrent(split, c.JobTasks(req.Jobs[0]), 1, 2))
	cpu, _, _ = c.Free(0)
	must.Eq(t, 8000, cpu, must.Sprint("nothing taken"))
	split.Nodes[1].WorkerSize.CPU = 4000
	must.NotNil(t, c.KeepCurrent(split, c.JobTasks(req.Jobs[0]), 1, 2))
	cpu, _, _ = c.Free(0)
	must.Eq(t, 0, cpu)
}

// TestCheckDecision_Batch checks the rules of a placement's batch: only
// for a job whose batch may vary, within its global and local bounds.
func TestCheckDecision_Batch(t *testing.T) {
	h := NewHarness(t)
	h.AddNodes("gpu", 1, 8000, 16384, 4)
	fixed := MockAllReduceJob("fixed", structs.Bounds{Min: 1, Max: 4}, nil)
	adaptive := MockAllReduceJob("adaptive", structs.Bounds{Min: 1, Max: 4}, &structs.BatchSize{Min: 128, Max: 1024, MaxLocal: 128})
	req := &Request{Nodes: h.Nodes, Jobs: []*Job{h.AddJob(fixed, nil), h.AddJob(adaptive, nil)}}
	place := func(id string, b *structs.Batch) *structs.Placement {
		return &structs.Placement{Namespace: "default", JobID: id, NumWorkers: 2, Nodes: []*structs.NodeTasks{{NodeID: "gpu-0", Workers: 2}}, Batch: b}
	}
	for _, tc := range []struct {
		name  string
		fixed *structs.Batch
		adapt *structs.Batch
		err   string
	}{
		{"none", nil, nil, ""},
		{"within bounds", nil, &structs.Batch{Global: 512, Local: 128, AccumSteps: 1}, ""},
		{"fixed job", &structs.Batch{Global: 128, Local: 64}, nil, `job "fixed" has a fixed batch but gets batch 128`},
		{"global", nil, &structs.Batch{Global: 64, Local: 32}, `job "adaptive" gets global batch 64, outside its bounds 128..1024`},
		{"local", nil, &structs.Batch{Global: 512, Local: 256}, `job "adaptive" gets local batch 256, outside its bounds 1..128`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDecision(req, &Decision{Placements: []*structs.Placement{place("fixed", tc.fixed), place("adaptive", tc.adapt)}})
			if tc.err == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, ErrInvalidDecision)
			must.ErrorContains(t, err, tc.err)
		})
	}
}
