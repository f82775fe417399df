package planner

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// gpuJob returns an all-reduce job of workers..workers tasks of 1000 MHz,
// 1024 MB and one nvidia/gpu each.
func gpuJob(id string, workers int) *structs.Job {
	j := MockJob(id, structs.Bounds{}, structs.Bounds{Min: workers, Max: workers})
	j.Training.Architecture, j.Training.Mode, j.Elastic.ParameterServers = structs.ArchitectureAllReduce, structs.ModeSync, nil
	j.Worker.Resources.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}
	return j
}

// running returns a placement of job id with the given workers per node.
func running(id string, workers map[string]int) *structs.Placement {
	p := &structs.Placement{Namespace: structs.DefaultNamespace, JobID: id}
	for _, n := range []string{"a-0", "a-1", "a-2", "a-3", "b-0", "b-1", "gpu-0", "gpu-1", "gpu-2", "cpu-0", "win-0"} {
		if w := workers[n]; w > 0 {
			p.Nodes = append(p.Nodes, &structs.NodeTasks{NodeID: n, Workers: w})
			p.NumWorkers += w
		}
	}
	return p
}

func TestExplainPaused(t *testing.T) {
	cases := []struct {
		name string
		// setup adds nodes and jobs to h and returns the decision's
		// placements of the jobs other than "x", which is paused.
		setup func(h *Harness) []*structs.Placement
		want  string // "" when x's minimum fits and it is not explained
	}{
		{
			name: "gpu memory constraint no node meets",
			setup: func(h *Harness) []*structs.Placement {
				h.AddNodes("a", 4, 8000, 16384, 4)
				j := gpuJob("x", 1)
				j.Worker.Resources.Devices[0].Constraints = []*structs.Constraint{{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "32 GiB"}}
				h.AddJob(j, nil)
				return nil
			},
			want: "waiting for capacity: the minimum of 0 ps and 1 worker does not fit: no node has room for a worker; 4 nodes evaluated; " +
				"device nvidia/gpu: ${device.attr.memory} >= 32 GiB filtered 4 of 4 nodes",
		},
		{
			name: "gpus all taken",
			setup: func(h *Harness) []*structs.Placement {
				h.AddNodes("a", 4, 8000, 16384, 2)
				h.AddJob(gpuJob("big", 8), nil)
				h.AddJob(gpuJob("x", 1), nil)
				return []*structs.Placement{running("big", map[string]int{"a-0": 2, "a-1": 2, "a-2": 2, "a-3": 2})}
			},
			want: "waiting for capacity: the minimum of 0 ps and 1 worker does not fit: no node has room for a worker; 4 nodes evaluated; " +
				"gpu exhausted on 4 nodes",
		},
		{
			name: "job constraint on the kernel",
			setup: func(h *Harness) []*structs.Placement {
				h.AddNodes("a", 4, 8000, 16384, 0)
				j := MockJob("x", structs.Bounds{Min: 1, Max: 2}, structs.Bounds{Min: 1, Max: 4})
				j.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "windows"}}
				h.AddJob(j, nil)
				return nil
			},
			want: "waiting for capacity: the minimum of 1 ps and 1 worker does not fit: no node has room for a ps; 4 nodes evaluated; " +
				"${attr.kernel.name} = windows filtered 4 of 4 nodes",
		},
		{
			name: "cpu and memory exhausted",
			setup: func(h *Harness) []*structs.Placement {
				h.AddNodes("a", 2, 4000, 8192, 0)
				h.AddNodes("b", 2, 8000, 2048, 0)
				j := MockJob("x", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 1})
				j.Worker.Resources.CPU, j.Worker.Resources.MemoryMB = 6000, 4096
				h.AddJob(j, nil)
				return nil
			},
			want: "waiting for capacity: the minimum of 1 ps and 1 worker does not fit: no node has room for a ps; 4 nodes evaluated; " +
				"cpu exhausted on 2 nodes; memory exhausted on 2 nodes",
		},
		{
			name: "mixed",
			setup: func(h *Harness) []*structs.Placement {
				h.AddNodes("gpu", 3, 8000, 16384, 2)
				h.AddNodes("cpu", 1, 8000, 16384, 0)
				h.AddNodes("win", 1, 8000, 16384, 2)[0].Attributes["kernel.name"] = "windows"
				h.AddJob(gpuJob("big", 2), nil)
				j := gpuJob("x", 3)
				j.Training.Architecture, j.Training.Mode = structs.ArchitecturePS, structs.ModeAsync
				j.Elastic.ParameterServers = &structs.Bounds{Min: 1, Max: 1}
				j.ParameterServer = &structs.Role{Driver: "exec", Resources: &structs.Resources{CPU: 500, MemoryMB: 512}}
				j.Worker.Constraints = []*structs.Constraint{
					{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"},
					{Operand: structs.OpDistinctHosts},
				}
				h.AddJob(j, nil)
				return []*structs.Placement{running("big", map[string]int{"gpu-2": 2})}
			},
			want: "waiting for capacity: the minimum of 1 ps and 3 workers does not fit: room for 1 ps and 2 workers, no node has room for another worker; " +
				"5 nodes evaluated; distinct_hosts filtered 2 of 5 nodes; ${attr.kernel.name} = linux filtered 1 of 5 nodes; " +
				"device nvidia/gpu: missing filtered 1 of 5 nodes; gpu exhausted on 1 node",
		},
		{
			name: "datacenter and node pool",
			setup: func(h *Harness) []*structs.Placement {
				h.AddNodes("a", 2, 8000, 16384, 0)
				h.AddNodes("b", 1, 8000, 16384, 0)[0].Datacenter = "dc2"
				h.Nodes[1].NodePool = "batch"
				h.AddJob(MockJob("x", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 1}), nil).Job.Datacenters = []string{"dc2"}
				h.Nodes[2].CPU = 500
				return nil
			},
			want: "waiting for capacity: the minimum of 1 ps and 1 worker does not fit: no node has room for a ps; 3 nodes evaluated; " +
				"datacenter not in [dc2] filtered 2 of 3 nodes; cpu exhausted on 1 node",
		},
		{
			name: "the minimum fits: the policy's reason stays",
			setup: func(h *Harness) []*structs.Placement {
				h.AddNodes("a", 1, 8000, 16384, 2)
				h.AddJob(gpuJob("x", 2), nil)
				return nil
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHarness(t)
			placements := tc.setup(h)
			x := Paused(h.Jobs[len(h.Jobs)-1], "policy: waiting")
			dec := &Decision{Placements: append(placements, x)}
			req := h.Request()
			must.NoError(t, CheckDecision(req, dec))

			ExplainPaused(req, dec)
			if tc.want == "" {
				must.Nil(t, x.Metric)
				must.Eq(t, "policy: waiting", x.Reason)
				return
			}
			must.NotNil(t, x.Metric)
			must.Eq(t, tc.want, x.Reason)
			must.Eq(t, x.Metric.String(), x.Reason)
			filtered, exhausted := 0, 0
			for _, n := range x.Metric.ConstraintFiltered {
				filtered += n
			}
			for _, n := range x.Metric.DimensionExhausted {
				exhausted += n
			}
			must.Eq(t, x.Metric.NodesEvaluated, filtered+exhausted, must.Sprint("every node is filtered or exhausted"))
			for _, p := range placements {
				must.Nil(t, p.Metric)
			}
		})
	}
}

// TestExplainPaused_NodeIdentity: a constraint on node identity is checked
// per node, not per class of alike nodes.
func TestExplainPaused_NodeIdentity(t *testing.T) {
	h := NewHarness(t)
	h.AddNodes("a", 3, 8000, 16384, 0)
	j := MockJob("x", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 2, Max: 2})
	j.Worker.Constraints = []*structs.Constraint{
		{LTarget: "${node.unique.id}", Operand: "=", RTarget: "a-1"},
		{Operand: structs.OpDistinctHosts},
	}
	x := Paused(h.AddJob(j, nil), "waiting")
	dec := &Decision{Placements: []*structs.Placement{x}}
	ExplainPaused(h.Request(), dec)
	must.Eq(t, "waiting for capacity: the minimum of 1 ps and 2 workers does not fit: room for 1 ps and 1 worker, no node has room for another worker; "+
		"3 nodes evaluated; ${node.unique.id} = a-1 filtered 2 of 3 nodes; distinct_hosts filtered 1 of 3 nodes", x.Reason)
}

// TestExplainPaused_AlikeJobs: waiting jobs alike in what their minimum
// needs are explained once and get equal metrics of their own; a job that
// differs in its minimum or its device request gets its own answer.
func TestExplainPaused_AlikeJobs(t *testing.T) {
	h := NewHarness(t)
	h.AddNodes("a", 2, 8000, 16384, 2)
	h.AddJob(gpuJob("big", 4), nil)
	dec := &Decision{Placements: []*structs.Placement{running("big", map[string]int{"a-0": 2, "a-1": 1})}}
	for _, id := range []string{"x", "y"} {
		dec.Placements = append(dec.Placements, Paused(h.AddJob(gpuJob(id, 2), nil), "waiting"))
	}
	dec.Placements = append(dec.Placements, Paused(h.AddJob(gpuJob("one", 1), nil), "waiting"))
	other := gpuJob("other", 2)
	other.Worker.Resources.Devices[0].Name = "amd/gpu"
	dec.Placements = append(dec.Placements, Paused(h.AddJob(other, nil), "waiting"))
	ExplainPaused(h.Request(), dec)
	x, y, one, amd := dec.Placements[1], dec.Placements[2], dec.Placements[3], dec.Placements[4]
	must.Eq(t, "waiting for capacity: the minimum of 0 ps and 2 workers does not fit: room for 0 ps and 1 worker, no node has room for another worker; "+
		"2 nodes evaluated; gpu exhausted on 2 nodes", x.Reason)
	must.Eq(t, x.Reason, y.Reason)
	must.Eq(t, x.Metric, y.Metric)
	must.True(t, x.Metric != y.Metric, must.Sprint("each placement has a metric of its own"))
	must.Nil(t, one.Metric, must.Sprint("a minimum of 1 fits on a-1"))
	must.Eq(t, "waiting", one.Reason)
	must.StrContains(t, amd.Reason, "device amd/gpu: missing filtered 2 of 2 nodes")
}

func TestExplainPaused_NothingPaused(t *testing.T) {
	h := NewHarness(t)
	h.AddNodes("a", 1, 8000, 16384, 0)
	j := h.AddJob(MockJob("x", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 1}), nil)
	p := &structs.Placement{Namespace: j.Job.Namespace, JobID: "x", NumPS: 1, NumWorkers: 1,
		Nodes: []*structs.NodeTasks{{NodeID: "a-0", PS: 1, Workers: 1}}, Reason: "running"}
	ExplainPaused(h.Request(), &Decision{Placements: []*structs.Placement{p}})
	must.Nil(t, p.Metric)
	must.Eq(t, "running", p.Reason)
	ExplainPaused(h.Request(), nil)
}

func BenchmarkExplainPaused(b *testing.B) {
	req := LargeRequest(b, 4000, 1000)
	// Every job is paused and asks for GPUs with more memory than any has.
	for _, j := range req.Jobs {
		j.Job.Worker.Resources.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1,
			Constraints: []*structs.Constraint{{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "80 GiB"}}}}
	}
	b.ReportAllocs()
	for b.Loop() {
		dec := &Decision{Placements: make([]*structs.Placement, len(req.Jobs))}
		for i, j := range req.Jobs {
			dec.Placements[i] = Paused(j, "waiting")
		}
		ExplainPaused(req, dec)
	}
}
