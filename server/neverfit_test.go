package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestServer_RefusesJobThatNeverFits registers, on 4 simulated nodes of 4
// GPUs, a job whose worker asks for more GPUs than a node has, and one
// whose worker asks for more memory than any node has: both are refused
// with a 422 that says why, and neither is committed. A job that fits
// once the nodes are emptied (4 GPUs a worker) is accepted.
func TestServer_RefusesJobThatNeverFits(t *testing.T) {
	s := TestServer(t, TestConfig(t, simDriver(t, 500)))
	leaderOf(t, s)
	c := client(t, s)
	waitCommittedNodes(t, c, 4)
	withWorker := func(id, old, new string) *api.JobRegisterRequest {
		req := demoJob(t, id)
		must.StrContains(t, req.JobHCL, old)
		req.JobHCL = strings.Replace(req.JobHCL, old, new, 1)
		return req
	}
	gpus := func(n int) string {
		return fmt.Sprintf("memory = 64\n      device \"gpu\" {\n        count = %d\n      }", n)
	}
	cases := []struct {
		id, old, new string
		want         string
	}{
		{"gpus", "memory = 64", gpus(8), `constraint "missing devices" filtered 4 nodes: a task asks for 8 gpu`},
		{"memory", "memory = 64", "memory = 10000000", `dimension "memory" exhausted on 4 nodes`},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			_, _, err := c.Jobs().Register(withWorker(tc.id, tc.old, tc.new), nil)
			var apiErr *api.Error
			must.True(t, errors.As(err, &apiErr), must.Sprintf("error %v", err))
			must.Eq(t, http.StatusUnprocessableEntity, apiErr.StatusCode)
			must.StrContains(t, apiErr.Message, "can never be placed: no node can run a worker even with nothing else on it (4 nodes evaluated; "+tc.want+")")
			_, _, err = c.Jobs().Info(tc.id, nil)
			must.True(t, api.IsNotFound(err), must.Sprintf("the refused job is not committed: %v", err))
		})
	}
	resp, _, err := c.Jobs().Register(withWorker("fits", "memory = 64", gpus(4)), nil)
	must.NoError(t, err)
	must.Eq(t, "fits", resp.JobID)
}

// TestLeader_DeclaredJobNeverFits: a job declared in the cluster that no
// node could ever run is rejected through the leader's reject path, once,
// with why, and recorded as rejected, not registered to run.
func TestLeader_DeclaredJobNeverFits(t *testing.T) {
	disc := &declarations{decls: map[structs.JobKey]*structs.Declaration{}}
	cfg := TestConfig(t, simDriver(t, 1))
	cfg.Discoverer = disc
	cfg.Interval = time.Hour
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)
	waitCommittedNodes(t, c, 4)

	decl := declaredDemo(t, "huge", 10, 4)
	decl.Job.Worker.Resources.MemoryMB = 10000000
	disc.set("huge", decl)
	var evs []*api.Event
	agent.WaitFor(t, 10*time.Second, "a JobRejected event", func() error {
		all, _, err := c.Events("huge", nil)
		if err != nil {
			return err
		}
		evs = evs[:0]
		for _, e := range all {
			if e.Type == structs.EventJobRejected {
				evs = append(evs, e)
			}
		}
		if len(evs) == 0 {
			return fmt.Errorf("no JobRejected event among %d", len(all))
		}
		return nil
	})
	must.SliceLen(t, 1, evs)
	must.StrContains(t, evs[0].Message, `job can never be placed: no node can run a worker even with nothing else on it (4 nodes evaluated; dimension "memory" exhausted on 4 nodes)`)
	job, _, err := c.Jobs().Info("huge", nil)
	must.NoError(t, err)
	must.EqOp(t, api.JobStatusRejected, job.Status, must.Sprint("the job is recorded as rejected, not registered to run"))
	must.StrContains(t, job.StatusDescription, "job can never be placed")
}

// waitCommittedNodes waits until the server answers with n nodes: the
// leader committed the driver's inventory.
func waitCommittedNodes(t *testing.T, c *api.Client, n int) {
	t.Helper()
	agent.WaitFor(t, 20*time.Second, "the nodes committed", func() error {
		nodes, _, err := c.Nodes(nil)
		if err != nil {
			return err
		}
		if len(nodes) != n {
			return fmt.Errorf("%d nodes of %d", len(nodes), n)
		}
		return nil
	})
}
