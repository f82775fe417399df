package main

import (
	"testing"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// TestPickAlloc: job logs reads the oldest running allocation of the
// role's groups, else the newest of them, or the one -alloc names.
func TestPickAlloc(t *testing.T) {
	allocs := []*nomadapi.AllocationListStub{
		{ID: "c3", TaskGroup: "worker-n2", ClientStatus: "running", CreateTime: 3},
		{ID: "a1", TaskGroup: "worker-n1", ClientStatus: "complete", CreateTime: 1},
		{ID: "b2", TaskGroup: "ps-n1", ClientStatus: "running", CreateTime: 2},
		{ID: "d4", TaskGroup: "worker-n1", ClientStatus: "running", CreateTime: 4},
	}
	must.Eq(t, "c3", pickAlloc(allocs, "worker", "").ID)
	must.Eq(t, "b2", pickAlloc(allocs, "ps", "").ID)
	must.Eq(t, "a1", pickAlloc(allocs, "worker", "a").ID)
	must.True(t, pickAlloc(allocs, "worker", "z") == nil)
	done := []*nomadapi.AllocationListStub{{ID: "a1", TaskGroup: "worker-n1", ClientStatus: "complete", CreateTime: 1}, {ID: "e5", TaskGroup: "worker-n1", ClientStatus: "failed", CreateTime: 5}}
	must.Eq(t, "e5", pickAlloc(done, "worker", "").ID)
	must.True(t, pickAlloc(done, "ps", "") == nil)
}

// TestAllocStatus_SimulatedCluster: on the simulated cluster there is no
// Nomad to ask, and the CLI says so.
func TestAllocStatus_SimulatedCluster(t *testing.T) {
	addr := testAgent(t)
	code, _, errOut := runCLI(t, "job", "run", "-address", addr, "-detach", jobFile(t, "simjob"))
	must.Eq(t, 0, code, must.Sprint(errOut))
	for _, args := range [][]string{{"alloc", "status"}, {"job", "logs"}} {
		code, _, errOut = runCLI(t, append(args, "-address", addr, "sim")...)
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, "The agent runs the simulated cluster: its jobs have no Nomad allocations")
	}
}
