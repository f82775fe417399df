//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/shoenig/test/must"
)

// caravans is a cluster of real `caravan agent` processes on loopback that
// form a cluster through retry_join.
type caravans struct {
	// addrs are the agents' HTTP addresses, host:port.
	addrs   []string
	procs   map[string]*agent.Caravan
	clients map[string]*api.Client
	// bin and configs start an agent again (restart).
	bin     string
	configs map[string]string
}

// startCaravans starts n agents of the binary bin that join each other
// through retry_join. body is HCL added to each agent's configuration: the
// driver and its block, the scheduler. Every agent allows raw_exec jobs
// (jobs.denied_drivers = []), so body cannot have a jobs block.
func startCaravans(t *testing.T, bin string, n int, body string) *caravans {
	t.Helper()
	return startCaravansJoining(t, bin, n, body, true)
}

// startCaravansJoining starts n agents; with staticJoin they list each
// other's addresses in retry_join, without it body says how they meet.
func startCaravansJoining(t *testing.T, bin string, n int, body string, staticJoin bool) *caravans {
	t.Helper()
	ports := agent.FreePorts(t, 2*n)
	c := &caravans{procs: map[string]*agent.Caravan{}, clients: map[string]*api.Client{}, bin: bin, configs: map[string]string{}}
	for i := range n {
		c.addrs = append(c.addrs, fmt.Sprintf("127.0.0.1:%d", ports[2*i]))
	}
	join := ""
	if staticJoin {
		join = `retry_join = ["` + strings.Join(c.addrs, `", "`) + `"]`
	}
	for i, addr := range c.addrs {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "agent.hcl")
		hcl := fmt.Sprintf(`
name      = "server-%d"
data_dir  = %q
bind_addr = "127.0.0.1"
ports {
  http = %d
  raft = %d
}
server {
  bootstrap_expect = %d
  retry_interval   = "200ms"
  %s
}
# The tests' jobs, and examples/demo.hcl, run with raw_exec.
jobs {
  denied_drivers = []
}
%s
`, i+1, filepath.Join(dir, "data"), ports[2*i], ports[2*i+1], n, join, body)
		must.NoError(t, os.WriteFile(cfg, []byte(hcl), 0o600))
		c.configs[addr] = cfg
		c.procs[addr] = agent.StartCaravan(t, bin, fmt.Sprintf("caravan-%d", i+1), "-config", cfg)
		client, err := api.NewClient(&api.Config{Address: addr})
		must.NoError(t, err)
		c.clients[addr] = client
	}
	return c
}

// restart kills the agent at addr, as a crash would, and starts it again
// with its configuration and data directory.
func (c *caravans) restart(t *testing.T, addr string) {
	t.Helper()
	c.procs[addr].Kill()
	c.procs[addr] = agent.StartCaravan(t, c.bin, "caravan-restarted", "-config", c.configs[addr])
}

// leader returns the address of the leader that a cluster of all the
// agents elected, other than exclude.
func (c *caravans) leader(exclude string) (string, error) {
	for addr, client := range c.clients {
		if addr == exclude {
			continue
		}
		self, _, err := client.Agent().Self(nil)
		if err != nil || self.LeaderID == "" {
			continue
		}
		conf, _, err := client.Operator().RaftConfiguration(nil)
		if err != nil {
			continue
		}
		for _, sv := range conf.Servers {
			if sv.Leader && sv.HTTPAddr != "" && sv.HTTPAddr != exclude && len(conf.Servers) == len(c.addrs) {
				return sv.HTTPAddr, nil
			}
		}
	}
	return "", errors.New("no leader with a known address")
}

// waitLeader waits for a leader other than exclude.
func (c *caravans) waitLeader(t *testing.T, exclude string) string {
	t.Helper()
	var leader string
	agent.WaitFor(t, time.Minute, "a Caravan leader", func() (err error) {
		leader, err = c.leader(exclude)
		return err
	})
	return leader
}

// jobIs returns a check that a job has a status.
func jobIs(c *api.Client, id, want string) func() error {
	return func() error {
		job, _, err := c.Jobs().Info(id, nil)
		if err != nil {
			return err
		}
		if job.Status != want {
			return fmt.Errorf("job %s is %s (%s), want %s", id, job.Status, job.StatusDescription, want)
		}
		return nil
	}
}

// events returns a job's events of a type.
func events(t *testing.T, c *api.Client, job, typ string) []*api.Event {
	t.Helper()
	all, _, err := c.Events(job, nil)
	must.NoError(t, err)
	var out []*api.Event
	for _, ev := range all {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// TestCaravanCluster_ConsulJoin starts three agents that know nothing of
// each other but a Consul agent: they advertise themselves as service
// "caravan", find each other through it, and elect a leader; one that
// leaves is deregistered.
func TestCaravanCluster_ConsulJoin(t *testing.T) {
	t.Parallel()
	consul := agent.StartConsul(t)
	cl := startCaravansJoining(t, agent.BuildCaravan(t), 3, fmt.Sprintf(`
driver = "sim"
consul {
  address          = %q
  auto_advertise   = true
  server_auto_join = true
}
`, consul.HTTPAddr), false)
	leader := cl.waitLeader(t, "")

	passing := func(want int) func() error {
		return func() error {
			entries, _, err := consul.Client.Health().Service("caravan", "", true, nil)
			if err != nil {
				return err
			}
			if len(entries) != want {
				return fmt.Errorf("%d passing instances of caravan, want %d", len(entries), want)
			}
			return nil
		}
	}
	agent.WaitFor(t, 30*time.Second, "3 servers registered in Consul", passing(3))
	entries, _, err := consul.Client.Health().Service("caravan", "", true, nil)
	must.NoError(t, err)
	var raftAddrs []string
	for _, e := range entries {
		raftAddrs = append(raftAddrs, e.Service.Meta["raft_addr"])
	}
	conf, _, err := cl.clients[leader].Operator().RaftConfiguration(nil)
	must.NoError(t, err)
	for _, sv := range conf.Servers {
		must.SliceContains(t, raftAddrs, sv.Address, must.Sprint("Consul lists every Raft peer"))
	}

	for _, addr := range cl.addrs {
		if addr != leader {
			cl.procs[addr].Stop()
			break
		}
	}
	agent.WaitFor(t, 30*time.Second, "the stopped server deregistered", passing(2))
}
