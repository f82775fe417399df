package planner

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestReserve: held placements take their capacity from copies of the
// nodes, device instances included; overlapping ones take what is left
// and never drive it below zero; the nodes given are not modified.
func TestReserve(t *testing.T) {
	h := NewHarness(t)
	h.AddNodes("n", 1, 4000, 8192, 4)
	gpuJob := MockJob("a", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 4})
	gpuJob.Worker.Resources = &structs.Resources{CPU: 500, MemoryMB: 1024, Devices: []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}}
	gpuJob.Canonicalize()
	at := func(ps, workers int) *structs.Placement {
		return &structs.Placement{Namespace: "default", JobID: "a", NumPS: ps, NumWorkers: workers,
			Nodes: []*structs.NodeTasks{{NodeID: h.Nodes[0].ID, PS: ps, Workers: workers}}}
	}
	must.Eq(t, h.Nodes, Reserve(h.Nodes, nil), must.Sprint("nothing held, nothing copied"))

	out := Reserve(h.Nodes, []Held{{Job: &Job{Job: gpuJob}, Placement: at(0, 3)}})
	must.Eq(t, 2500, out[0].CPU)
	must.Eq(t, 1, out[0].Devices[0].HealthyCount())
	must.Eq(t, 4000, h.Nodes[0].CPU, must.Sprint("the nodes given are not modified"))
	must.Eq(t, 4, h.Nodes[0].Devices[0].HealthyCount())

	out = Reserve(h.Nodes, []Held{
		{Job: &Job{Job: gpuJob}, Placement: at(0, 3)},
		{Job: &Job{Job: gpuJob}, Placement: at(0, 3)}, // only one more fits
	})
	must.Eq(t, 2000, out[0].CPU)
	must.Eq(t, 0, out[0].Devices[0].HealthyCount())
}
