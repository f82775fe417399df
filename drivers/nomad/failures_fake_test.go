package nomad

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// TestStatus_PlacementFailures submits a job whose tasks Nomad does not
// place: after FailureDelay a Status report carries the failed task
// group's metrics, read once from the job's evaluations on its worker, and
// once the tasks run, none, with no further read.
func TestStatus_PlacementFailures(t *testing.T) {
	f := newFakeNomad(t)
	d := startDriver(t, f, Config{Host: &testHost{}, UsageInterval: time.Hour})
	job := shJob(t, "sh")
	reports, err := d.Enact(context.Background(), &structs.Plan{Index: 1, Placements: []*structs.Placement{placementOn(job, 1, 1)}}, []*structs.Job{job})
	must.NoError(t, err)
	must.Nil(t, reports[0].Failures, must.Sprint("nothing known at the submission"))
	var group string
	agent.WaitFor(t, 10*time.Second, "the job submitted", func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		nj := f.jobs[JobPrefix+"sh"]
		if nj == nil {
			return fmt.Errorf("not submitted yet")
		}
		group = *nj.TaskGroups[0].Name
		v := *nj.JobModifyIndex
		f.evals = map[string][]*api.Evaluation{JobPrefix + "sh": {
			{ID: "e1", JobModifyIndex: v, CreateIndex: v + 1, Status: api.EvalStatusComplete, BlockedEval: "e2",
				FailedTGAllocs: map[string]*api.AllocationMetric{group: {NodesEvaluated: 1, ConstraintFiltered: map[string]int{"missing compatible host volumes": 1}}}},
			{ID: "e2", JobModifyIndex: v, CreateIndex: v + 2, Status: api.EvalStatusBlocked},
		}}
		return nil
	})

	r := waitReport(t, d, "sh", "Nomad's placement failure", func(r *structs.JobReport) bool { return len(r.Failures) > 0 })
	must.Eq(t, []*structs.Failure{{Kind: structs.FailurePlacement, Group: group,
		Summary: fmt.Sprintf("Task Group %q (failed to place 1 allocation)", group),
		Details: []string{`Constraint "missing compatible host volumes": 1 nodes excluded by filter`}}}, r.Failures)
	// One read, or a second on a machine slow enough that FailureReread
	// passed before the report was seen.
	must.Between(t, 1, f.count("GET /v1/job/<id>/evaluations"), 2)

	f.runAll(JobPrefix + "sh")
	r = waitReport(t, d, "sh", "all tasks running", func(r *structs.JobReport) bool {
		return r.Change != nil && r.Change.Phase == structs.ChangeDone
	})
	must.NotNil(t, r.Failures)
	must.SliceEmpty(t, r.Failures, must.Sprint("none once every task runs"))
	reads := f.count("GET /v1/job/<id>/evaluations")
	for range 20 {
		_, err := d.Status(context.Background())
		must.NoError(t, err)
	}
	must.Eq(t, reads, f.count("GET /v1/job/<id>/evaluations"), must.Sprint("no read while every task runs"))
}
