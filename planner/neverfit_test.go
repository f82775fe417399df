package planner

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

func TestCluster_FeasibleDrivers(t *testing.T) {
	h := NewHarness(t)
	nodes := h.AddNodes("n", 4, 8000, 16384, 0)
	nodes[0].Drivers = []string{"docker", "raw_exec"} // reported, without exec
	nodes[1].Drivers = []string{"exec", "raw_exec"}
	nodes[2].Attributes["driver.exec"] = "false" // no driver info: the attribute decides
	// nodes[3] reports neither: any driver
	j := MockJob("j", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 1})
	c := NewCluster(h.Nodes)
	task := c.NewTask(j, j.Worker)
	var feasible []string
	for i, n := range c.Nodes {
		if c.Feasible(i, task) {
			feasible = append(feasible, n.ID)
		}
	}
	must.Eq(t, []string{"n-1", "n-3"}, feasible)
	must.Eq(t, FilterMissingDrivers, c.filteredBy(0, j, j.Worker))
	must.Eq(t, FilterMissingDrivers, c.filteredBy(2, j, j.Worker))

	// Nodes alike but for their drivers are different classes.
	must.NotEq(t, c.class[0], c.class[1])
}

func TestNeverFits(t *testing.T) {
	cases := []struct {
		name  string
		nodes func(h *Harness)
		job   func() *structs.Job
		want  string // "" when the job fits
	}{
		{
			name:  "more gpus a worker than any node has",
			nodes: func(h *Harness) { h.AddNodes("g", 2, 8000, 16384, 4); h.AddNodes("c", 1, 8000, 16384, 0) },
			job: func() *structs.Job {
				j := gpuJob("big", 1)
				j.Worker.Resources.Devices[0].Count = 8
				return j
			},
			want: `job can never be placed: no node can run a worker even with nothing else on it (3 nodes evaluated; ` +
				`constraint "missing devices" filtered 3 nodes: a task asks for 8 nvidia/gpu)`,
		},
		{
			name:  "as many gpus a worker as a node has fits",
			nodes: func(h *Harness) { h.AddNodes("g", 2, 8000, 16384, 4) },
			job: func() *structs.Job {
				j := gpuJob("big", 1)
				j.Worker.Resources.Devices[0].Count = 4
				return j
			},
		},
		{
			name: "no node has the driver",
			nodes: func(h *Harness) {
				for _, n := range h.AddNodes("n", 2, 8000, 16384, 0) {
					n.Drivers = []string{"exec", "raw_exec"}
				}
			},
			job: func() *structs.Job {
				j := MockJob("d", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 1})
				j.Worker.Driver = "made-up"
				return j
			},
			want: `job can never be placed: no node can run a worker even with nothing else on it (2 nodes evaluated; ` +
				`constraint "missing drivers" filtered 2 nodes: no task driver "made-up")`,
		},
		{
			name:  "more memory than any node, and a constraint",
			nodes: func(h *Harness) { h.AddNodes("n", 2, 8000, 16384, 0); h.AddNodes("w", 1, 8000, 65536, 0) },
			job: func() *structs.Job {
				j := MockJob("m", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 1})
				j.Worker.Resources.MemoryMB = 32768
				j.Constraints = []*structs.Constraint{{LTarget: "${node.unique.name}", Operand: "!=", RTarget: "w-0"}}
				return j
			},
			want: `job can never be placed: no node can run a worker even with nothing else on it (3 nodes evaluated; ` +
				`constraint "${node.unique.name} != w-0" filtered 1 node; dimension "memory" exhausted on 2 nodes)`,
		},
		{
			name:  "the parameter server's template is checked too",
			nodes: func(h *Harness) { h.AddNodes("n", 2, 8000, 16384, 0) },
			job: func() *structs.Job {
				j := MockJob("p", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 1})
				j.ParameterServer = &structs.Role{Driver: "exec", Resources: &structs.Resources{CPU: 9000, MemoryMB: 1024}}
				return j
			},
			want: `job can never be placed: no node can run a ps even with nothing else on it (2 nodes evaluated; ` +
				`dimension "cpu" exhausted on 2 nodes)`,
		},
		{
			name:  "no node known: not refused",
			nodes: func(h *Harness) {},
			job: func() *structs.Job {
				j := gpuJob("big", 1)
				j.Worker.Resources.Devices[0].Count = 8
				return j
			},
		},
		{
			name: "nodes drained now count: not refused",
			nodes: func(h *Harness) {
				for _, n := range h.AddNodes("g", 2, 8000, 16384, 4) {
					n.Eligible = false
				}
			},
			job: func() *structs.Job {
				j := gpuJob("big", 1)
				j.Worker.Resources.Devices[0].Count = 4
				return j
			},
		},
		{
			name:  "no node known yet: not refused",
			nodes: func(*Harness) {},
			job: func() *structs.Job {
				j := gpuJob("big", 1)
				j.Worker.Resources.Devices[0].Count = 8
				return j
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHarness(t)
			tc.nodes(h)
			job := h.AddJob(tc.job(), nil).Job
			err := NeverFits(h.Nodes, job)
			if tc.want == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, ErrNeverFits)
			must.EqError(t, err, tc.want)
		})
	}
}
