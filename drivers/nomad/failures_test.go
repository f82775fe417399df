package nomad

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

func TestEvalFailures(t *testing.T) {
	metric := &api.AllocationMetric{
		NodesEvaluated:     3,
		ConstraintFiltered: map[string]int{"${node.unique.id} = n1": 2, "missing compatible host volumes": 1},
		DimensionExhausted: map[string]int{},
	}
	failed := &api.Evaluation{ID: "e2", JobModifyIndex: 10, CreateIndex: 12, Status: api.EvalStatusComplete, BlockedEval: "e3",
		FailedTGAllocs: map[string]*api.AllocationMetric{"worker-n1": metric}}
	older := &api.Evaluation{ID: "e1", JobModifyIndex: 5, CreateIndex: 6, Status: api.EvalStatusComplete,
		FailedTGAllocs: map[string]*api.AllocationMetric{"worker-n0": {NodesEvaluated: 0}}}
	blocked := &api.Evaluation{ID: "e3", JobModifyIndex: 10, CreateIndex: 13, Status: api.EvalStatusBlocked}
	want := []*structs.Failure{{
		Kind: structs.FailurePlacement, Group: "worker-n1", Summary: `Task Group "worker-n1" (failed to place 1 allocation)`,
		Details: []string{
			`Constraint "${node.unique.id} = n1": 2 nodes excluded by filter`,
			`Constraint "missing compatible host volumes": 1 nodes excluded by filter`,
		},
	}}
	must.Eq(t, want, evalFailures([]*api.Evaluation{older, failed, blocked}, 10))

	// A later evaluation of the version that placed everything, with no
	// blocked one left: no failure.
	placed := &api.Evaluation{ID: "e4", JobModifyIndex: 10, CreateIndex: 14, Status: api.EvalStatusComplete}
	must.Nil(t, evalFailures([]*api.Evaluation{failed, placed}, 10))
	// While one is blocked, the latest failure stands.
	must.Eq(t, want, evalFailures([]*api.Evaluation{failed, blocked, placed}, 10))
	// An older version's failures are not this version's.
	must.Nil(t, evalFailures([]*api.Evaluation{older}, 10))

	must.Eq(t, []string{"No nodes were eligible for evaluation", `Dimension "disk" exhausted on 1 nodes`, `Quota limit hit "gpu"`},
		formatAllocMetrics(&api.AllocationMetric{DimensionExhausted: map[string]int{"disk": 1}, QuotaExhausted: []string{"gpu"}}))
}

func TestTaskFailures(t *testing.T) {
	allocs := []*api.AllocationListStub{
		{ID: "a1", TaskGroup: "worker-n1", NodeID: "n1", ClientStatus: api.AllocClientStatusRunning},
		{ID: "a2", TaskGroup: "worker-n2", NodeID: "n2", ClientStatus: api.AllocClientStatusPending,
			TaskStates: map[string]*api.TaskState{"worker": {State: "pending", Events: []*api.TaskEvent{
				{Type: api.TaskReceived},
				{Type: api.TaskDriverFailure, DisplayMessage: "failed to launch command with executor: exec: \"nope\": executable file not found"},
				{Type: api.TaskRestarting, DisplayMessage: "Task restarting in 15s"},
			}}}},
	}
	must.Eq(t, []*structs.Failure{{Kind: structs.FailureTask, Group: "worker-n2",
		Summary: `task worker of worker-n2 on node n2: Driver Failure: failed to launch command with executor: exec: "nope": executable file not found`}},
		taskFailures(allocs))
	must.SliceEmpty(t, taskFailures(allocs[:1]))
}
