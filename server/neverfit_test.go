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
	agent.WaitFor(t, 20*time.Second, "the nodes committed", func() error {
		nodes, _, err := c.Nodes(nil)
		if err != nil {
			return err
		}
		if len(nodes) != 4 {
			return fmt.Errorf("%d nodes of 4", len(nodes))
		}
		return nil
	})
	withWorker := func(id, extra string) *api.JobRegisterRequest {
		req := demoJob(t, id)
		req.JobHCL = strings.Replace(req.JobHCL, "      memory = 64\n", "      memory = 64\n"+extra, 1)
		return req
	}
	cases := []struct {
		id, resources string
		want          string
	}{
		{"gpus", "      device \"gpu\" {\n        count = 8\n      }\n",
			`constraint "missing devices" filtered 4 nodes: a task asks for 8 gpu`},
		{"memory", "      memory = 10000000\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			req := withWorker(tc.id, tc.resources)
			if tc.id == "memory" {
				req = demoJob(t, tc.id)
				req.JobHCL = strings.Replace(req.JobHCL, "memory = 64", "memory = 10000000", 1)
				tc.want = `dimension "memory" exhausted on 4 nodes`
			}
			_, _, err := c.Jobs().Register(req, nil)
			var apiErr *api.Error
			must.True(t, errors.As(err, &apiErr), must.Sprintf("error %v", err))
			must.Eq(t, http.StatusUnprocessableEntity, apiErr.StatusCode)
			must.StrContains(t, apiErr.Message, "can never be placed: no node can run a worker even with nothing else on it (4 nodes evaluated; ")
			must.StrContains(t, apiErr.Message, tc.want)
			_, _, err = c.Jobs().Info(tc.id, nil)
			must.True(t, api.IsNotFound(err), must.Sprintf("the refused job is not committed: %v", err))
		})
	}
	resp, _, err := c.Jobs().Register(withWorker("fits", "      device \"gpu\" {\n        count = 4\n      }\n"), nil)
	must.NoError(t, err)
	must.Eq(t, "fits", resp.JobID)
}
