package sia

import (
	"fmt"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// Regression tests for what review found in Sia's placement.

// Two of three 4-GPU nodes have an unhealthy GPU. Four jobs run at 2 GPUs
// and a new one arrives: the selection gives everyone 2 GPUs (10 = the
// type's capacity), the keep pass cannot place the newcomer, the repack
// moves every running job and still cannot place it, and its result is
// kept.
func TestPlace_RepackOnlyWhenItPlacesAll(t *testing.T) {
	h := planner.NewHarness(t)
	for k, n := range h.AddNodes("t4", 3, 64000, 262144, 4) {
		n.Devices[0].Name = "T4"
		if k > 0 {
			n.Devices[0].Instances[3].Healthy = false
		}
	}
	cur := map[string]string{"j1": "t4-0", "j2": "t4-0", "j3": "t4-1", "j4": "t4-2"}
	for _, id := range []string{"j1", "j2", "j3", "j4", "j5"} {
		v := adaptiveJob(h, id, 2)
		v.PerfByType = map[string]*goodput.Fit{"T4": perf(1, 2)}
		if n, ok := cur[id]; ok {
			v.Current = &structs.Placement{JobID: id, Namespace: "default", NumWorkers: 2, Nodes: []*structs.NodeTasks{{NodeID: n, Workers: 2}}}
		}
	}
	got := h.Plan(New())
	moved := 0
	for _, id := range []string{"j1", "j2", "j3", "j4", "j5"} {
		p := got[id]
		var on []string
		for _, nt := range p.Nodes {
			on = append(on, nt.NodeID)
		}
		t.Logf("%s: %d workers on %v (was %s) %q", id, p.NumWorkers, on, cur[id], p.Reason)
		if c, ok := cur[id]; ok && (len(on) != 1 || on[0] != c) {
			moved++
		}
	}
	must.Zero(t, moved, must.Sprint("running jobs moved although the repack placed no more than keeping"))
}

// A node with one extra non-GPU device group: its free "devices" count
// includes it, so types() overstates capacity and take() never finds a
// whole free node for a multi-node configuration.
func TestPlace_OtherDevicesAreNotGPUs(t *testing.T) {
	h := planner.NewHarness(t)
	for _, n := range h.AddNodes("t4", 2, 64000, 262144, 4) {
		n.Devices[0].Name = "T4"
		n.Devices = append(n.Devices, &structs.NodeDeviceResource{Vendor: "intel", Type: "fpga", Name: "x",
			Instances: []*structs.NodeDevice{{ID: n.ID + "-fpga", Healthy: true}}})
	}
	a := adaptiveJob(h, "a", 8)
	a.PerfByType = map[string]*goodput.Fit{"T4": perf(1, 8)}
	c := planner.NewCluster(h.Nodes)
	ts := types(c, h.Nodes)
	t.Logf("type %s perNode %d free (capacity) %d", ts[0].name, ts[0].perNode, ts[0].free)
	got := h.Plan(New())
	t.Logf("a: %d workers %v reason %q", got["a"].NumWorkers, got["a"].Nodes, got["a"].Reason)
	must.Eq(t, 8, got["a"].NumWorkers, must.Sprint(got["a"].Reason))
}

// Type without a model for a job (it was not seen to run there): the
// selection leaves it off that type, but fill puts it there when its own
// type is full.
func TestFill_OnlyTypesWithAModel(t *testing.T) {
	h := fleet(t)
	for i := range 9 {
		v := adaptiveJob(h, fmt.Sprintf("j%d", i), 1)
		v.PerfByType = map[string]*goodput.Fit{"A100": perf(1, 1)}
	}
	got := h.Plan(New())
	for id, p := range got {
		var on []string
		for _, nt := range p.Nodes {
			on = append(on, nt.NodeID)
		}
		t.Logf("%s: %v %q", id, on, p.Reason)
		for _, nt := range p.Nodes {
			must.StrNotContains(t, nt.NodeID, "t4", must.Sprint(id, " has no T4 model but runs on T4: ", p.Reason))
		}
	}
}
