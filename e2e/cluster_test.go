//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestCaravanCluster_SIGKILLLeader runs three real `caravan agent` processes
// that form a cluster through retry_join, kills the leader with SIGKILL,
// and checks that another server takes over with every job and plan, and
// plans new jobs. Each agent drives its own embedded simulated cluster, so
// the new leader reconciles its simulator with the last committed plan.
func TestCaravanCluster_SIGKILLLeader(t *testing.T) {
	bin := agent.BuildCaravan(t)
	ports := agent.FreePorts(t, 6)
	var join []string
	for i := range 3 {
		join = append(join, fmt.Sprintf("127.0.0.1:%d", ports[2*i]))
	}
	procs := map[string]*agent.Caravan{}
	clients := map[string]*api.Client{}
	for i := range 3 {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "agent.hcl")
		hcl := fmt.Sprintf(`
name      = "server-%d"
data_dir  = %q
bind_addr = "127.0.0.1"
driver    = "sim"
ports {
  http = %d
  raft = %d
}
server {
  bootstrap_expect = 3
  retry_join       = [%s]
  retry_interval   = "200ms"
}
scheduler {
  interval = "10s"
}
sim {
  speed = 20
}
`, i+1, filepath.Join(dir, "data"), ports[2*i], ports[2*i+1], `"`+strings.Join(join, `", "`)+`"`)
		must.NoError(t, os.WriteFile(cfg, []byte(hcl), 0o600))
		procs[join[i]] = agent.StartCaravan(t, bin, fmt.Sprintf("caravan-%d", i+1), "-config", cfg)
		c, err := api.NewClient(&api.Config{Address: join[i]})
		must.NoError(t, err)
		clients[join[i]] = c
	}

	leaderAddr := func(exclude string) (string, error) {
		for addr, c := range clients {
			if addr == exclude {
				continue
			}
			self, err := c.Agent().Self(context.Background())
			if err != nil || self.LeaderID == "" {
				continue
			}
			conf, err := c.Operator().RaftConfiguration(context.Background())
			if err != nil {
				continue
			}
			for _, sv := range conf.Servers {
				if sv.Leader && sv.HTTPAddr != "" && sv.HTTPAddr != exclude && len(conf.Servers) == 3 {
					return sv.HTTPAddr, nil
				}
			}
		}
		return "", errors.New("no leader with a known address")
	}
	var leader string
	agent.WaitFor(t, 30*time.Second, "a 3-server cluster with a leader", func() (err error) {
		leader, err = leaderAddr("")
		return err
	})

	src, err := os.ReadFile("../examples/demo.hcl")
	must.NoError(t, err)
	register := func(c *api.Client, id string) error {
		hcl := strings.Replace(string(src), `job "demo"`, fmt.Sprintf("job %q", id), 1)
		_, err := c.Jobs().Register(context.Background(), &api.JobRegisterRequest{JobHCL: hcl, Filename: "demo.hcl"})
		return err
	}
	var follower string
	for addr := range clients {
		if addr != leader {
			follower = addr
		}
	}
	for _, id := range []string{"a", "b"} {
		must.NoError(t, register(clients[follower], id), must.Sprint("registered through a follower"))
	}
	running := func(c *api.Client, id string) func() error {
		return func() error {
			job, _, err := c.Jobs().Info(id, nil)
			if err != nil {
				return err
			}
			if job.Status != structs.JobStatusRunning {
				return fmt.Errorf("job %s is %s", id, job.Status)
			}
			return nil
		}
	}
	agent.WaitFor(t, 30*time.Second, "jobs placed", running(clients[follower], "b"))
	plan, _, err := clients[leader].LatestPlan(nil)
	must.NoError(t, err)

	start := time.Now()
	procs[leader].Kill()
	var next string
	agent.WaitFor(t, 30*time.Second, "a new leader", func() (err error) {
		next, err = leaderAddr(leader)
		return err
	})
	t.Logf("failover after SIGKILL took %v", time.Since(start))

	c := clients[next]
	jobs, _, err := c.Jobs().List(nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, jobs)
	plan2, _, err := c.LatestPlan(nil)
	must.NoError(t, err)
	must.GreaterEq(t, plan.Index, plan2.Index)
	must.NoError(t, register(c, "c"))
	agent.WaitFor(t, 30*time.Second, "a job placed by the new leader", running(c, "c"))
}
