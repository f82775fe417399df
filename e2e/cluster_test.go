//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/shoenig/test/must"
)

// TestCaravanCluster_SIGKILLLeader runs three real `caravan agent` processes
// that form a cluster through retry_join, kills the leader with SIGKILL,
// and checks that another server takes over with every job and plan, and
// plans new jobs. Each agent drives its own embedded simulated cluster, so
// the new leader reconciles its simulator with the plan in force.
func TestCaravanCluster_SIGKILLLeader(t *testing.T) {
	t.Parallel()
	cl := startCaravans(t, agent.BuildCaravan(t), 3, `
driver = "sim"
scheduler {
  interval = "10s"
}
sim {
  speed = 20
}
`)
	leader := cl.waitLeader(t, "")

	src, err := os.ReadFile("../examples/demo.hcl")
	must.NoError(t, err)
	register := func(c *api.Client, id string) error {
		hcl := strings.Replace(string(src), `job "demo"`, fmt.Sprintf("job %q", id), 1)
		_, _, err := c.Jobs().Register(&api.JobRegisterRequest{JobHCL: hcl, Filename: "demo.hcl"}, nil)
		return err
	}
	var follower string
	for _, addr := range cl.addrs {
		if addr != leader {
			follower = addr
		}
	}
	for _, id := range []string{"a", "b"} {
		must.NoError(t, register(cl.clients[follower], id), must.Sprint("registered through a follower"))
	}
	agent.WaitFor(t, 30*time.Second, "jobs placed", jobIs(cl.clients[follower], "b", api.JobStatusRunning))
	plan, _, err := cl.clients[leader].LatestPlan(nil)
	must.NoError(t, err)

	start := time.Now()
	cl.procs[leader].Kill()
	next := cl.waitLeader(t, leader)
	t.Logf("failover after SIGKILL took %v", time.Since(start))

	c := cl.clients[next]
	jobs, _, err := c.Jobs().List(nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, jobs)
	plan2, _, err := c.LatestPlan(nil)
	must.NoError(t, err)
	must.GreaterEq(t, plan.Index, plan2.Index)
	must.NoError(t, register(c, "c"))
	agent.WaitFor(t, 30*time.Second, "a job placed by the new leader", jobIs(c, "c", api.JobStatusRunning))
}
