//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// TestDeploy_HAClusterOnNomad runs deploy/nomad/caravan-servers.nomad.hcl
// on the e2e Nomad cluster: three Caravan servers on distinct clients find
// each other through Consul, elect a leader, and run a trainer job on the
// same Nomad cluster to completion.
func TestDeploy_HAClusterOnNomad(t *testing.T) {
	consul := agent.StartConsul(t)
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{Consul: consul})
	dumpOnFailure(t, nc)
	bin := agent.BuildCaravan(t)
	trainer := buildTrainer(t)

	src, err := os.ReadFile("../deploy/nomad/caravan-servers.nomad.hcl")
	must.NoError(t, err)
	vars := fmt.Sprintf(`
driver              = "raw_exec"
caravan_binary      = %q
nomad_addr          = %q
consul_addr         = %q
checkpoint_dir      = %q
scheduler_algorithm = "drf"
scheduler_interval  = "10m"
cpu                 = 100
job_denied_drivers  = []
`, bin, nc.Address, consul.HTTPAddr, t.TempDir())
	job, err := nc.Client.Jobs().ParseHCLOpts(&nomadapi.JobsParseRequest{JobHCL: string(src), Variables: vars, Canonicalize: true})
	must.NoError(t, err)
	_, _, err = nc.Client.Jobs().Register(job, nil)
	must.NoError(t, err)

	// Three servers, each on its own client, registered and passing.
	var c *api.Client
	agent.WaitFor(t, 3*time.Minute, "3 Caravan servers in Consul with a leader", func() error {
		entries, _, err := consul.Client.Health().Service("caravan", "", true, nil)
		if err != nil {
			return err
		}
		if len(entries) != 3 {
			return fmt.Errorf("%d passing Caravan servers", len(entries))
		}
		e := entries[0]
		c, err = api.NewClient(&api.Config{Address: "http://" + e.Service.Address + ":" + strconv.Itoa(e.Service.Port)})
		if err != nil {
			return err
		}
		conf, _, err := c.Operator().RaftConfiguration(nil)
		if err != nil {
			return err
		}
		leaders := 0
		for _, sv := range conf.Servers {
			if sv.Leader {
				leaders++
			}
		}
		if len(conf.Servers) != 3 || leaders != 1 {
			return fmt.Errorf("%d Raft servers, %d leaders", len(conf.Servers), leaders)
		}
		return nil
	})
	allocs, _, err := nc.Client.Jobs().Allocations(*job.ID, false, nil)
	must.NoError(t, err)
	hosts := map[string]bool{}
	for _, a := range allocs {
		if a.ClientStatus == nomadapi.AllocClientStatusRunning {
			hosts[a.NodeID] = true
		}
	}
	must.MapLen(t, 3, hosts, must.Sprint("one server per client"))

	waitNodes(t, c, 3, 4)
	_, _, err = c.Jobs().Register(trainerJob("a", trainer), nil)
	must.NoError(t, err)
	agent.WaitFor(t, 4*time.Minute, "job a complete", jobIs(c, "a", api.JobStatusComplete))
}
