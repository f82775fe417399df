package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestJobRegister_CheckpointInterval registers a job with a checkpoint
// interval on the simulated cluster: it is kept through the API, both as
// HCL and as the JSON the CLI sends, and the job runs; an interval that is
// not positive is refused with its position and stores nothing.
func TestJobRegister_CheckpointInterval(t *testing.T) {
	s := TestServer(t, TestConfig(t, simDriver(t, 1)))
	leaderOf(t, s)
	c := client(t, s)
	ctx := context.Background()
	req := demoJob(t, "ivl")
	req.JobHCL = strings.Replace(req.JobHCL, `timeout = "30s"`, "timeout  = \"30s\"\n      interval = \"10m\"", 1)
	_, _, err := c.Jobs().Register(req, (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	agent.WaitFor(t, 20*time.Second, "job placed", jobStatus(t, c, "ivl", structs.JobStatusRunning))
	job, _, err := c.Jobs().Info("ivl", nil)
	must.NoError(t, err)
	must.Eq(t, 10*time.Minute, job.Elastic.Checkpoint.Interval)

	// The CLI sends the parsed job as JSON: the same spec changes nothing.
	again, _, err := c.Jobs().Update("ivl", &api.JobRegisterRequest{Job: job}, (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	must.True(t, again.Unchanged)

	bad := demoJob(t, "bad-ivl")
	bad.JobHCL = strings.Replace(bad.JobHCL, `timeout = "30s"`, "timeout  = \"30s\"\n      interval = \"0s\"", 1)
	_, _, err = c.Jobs().Register(bad, (&api.WriteOptions{}).WithContext(ctx))
	must.ErrorContains(t, err, "demo.hcl:44:18: Invalid elastic.checkpoint.interval")
	_, _, err = c.Jobs().Info("bad-ivl", nil)
	must.Error(t, err, must.Sprint("nothing of the refused job is stored"))
}
