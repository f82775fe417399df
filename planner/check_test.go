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
