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
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// TestNomadJobRun_ACL runs Caravan on a Nomad agent with ACLs, with a
// token of the policy deploy/nomad/caravan-acl.policy.hcl narrowed to the
// namespace "ml". Two trainer jobs run there with `nomad job run`: the
// token suffices to find them, place them, and rescale the first through
// a checkpoint (signalling its allocations) when the second arrives. A
// job of the same kind in the namespace "other" is not Caravan's: Caravan
// neither sees nor changes it.
func TestNomadJobRun_ACL(t *testing.T) {
	n := agent.StartNomad(t, agent.NomadOptions{ACL: true})
	for _, ns := range []string{"ml", "other"} {
		_, err := n.Client.Namespaces().Register(&nomadapi.Namespace{Name: ns}, nil)
		must.NoError(t, err)
	}
	src, err := os.ReadFile("../deploy/nomad/caravan-acl.policy.hcl")
	must.NoError(t, err)
	rules := strings.ReplaceAll(string(src), `namespace "*"`, `namespace "ml"`)
	must.StrContains(t, rules, `namespace "ml"`, must.Sprint("the policy names its namespaces as deploy/README.md says to narrow them"))
	_, err = n.Client.ACLPolicies().Upsert(&nomadapi.ACLPolicy{Name: "caravan", Rules: rules}, nil)
	must.NoError(t, err)
	token, _, err := n.Client.ACLTokens().Create(&nomadapi.ACLToken{Name: "caravan", Type: "client", Policies: []string{"caravan"}}, nil)
	must.NoError(t, err)

	// Tasks of a sixth of the node's CPU: the first job alone runs 1 ps
	// and 4 workers; with the second, it must give up workers.
	node, _, err := n.Client.Nodes().Info(n.NodeID, nil)
	must.NoError(t, err)
	free := int(node.NodeResources.Cpu.CpuShares)
	if r := node.ReservedResources; r != nil {
		free -= int(r.Cpu.CpuShares)
	}
	cpu := free/6 - 1

	trainer := buildTrainer(t)
	body := fmt.Sprintf(`
driver = "nomad"
nomad {
  address        = %q
  token          = %q
  checkpoint_dir = %q
}
scheduler {
  algorithm = "drf"
  interval  = "10m"
}
`, n.Address, token.SecretID, t.TempDir())
	cl := startCaravans(t, agent.BuildCaravan(t), 1, body)
	c := cl.clients[cl.waitLeader(t, "")]
	waitNodes(t, c, 1, 0)

	cli := nomadCLI{addr: n.Address, token: n.Token}
	cli.jobRun(t, "hidden", trainerFile{id: "hidden", namespace: "other", trainer: trainer, maxWorkers: 1, long: true, cpu: cpu, noGPU: true}.String())
	cli.jobRun(t, "a", trainerFile{id: "a", namespace: "ml", trainer: trainer, maxWorkers: 4, long: true, cpu: cpu, noGPU: true}.String())
	waitEvent(t, c, "a", api.EventTasksRunning, 1, 2*time.Minute)
	ml := &api.QueryOptions{Namespace: "ml"}
	agent.WaitFor(t, time.Minute, "job a on 4 workers", func() error {
		sum, _, err := c.Jobs().Summary("a", ml)
		if err != nil {
			return err
		}
		if o := sum.Observed; o == nil || o.Placement == nil || o.Placement.NumWorkers != 4 || sum.LastSample == nil || sum.LastSample.Step < 10 {
			return fmt.Errorf("observed %+v, last sample %+v", o, sum.LastSample)
		}
		return nil
	})

	cli.jobRun(t, "b", trainerFile{id: "b", namespace: "ml", trainer: trainer, maxWorkers: 4, long: true, cpu: cpu, noGPU: true}.String())
	confirmed := waitEvent(t, c, "a", api.EventCheckpointConfirmed, 1, time.Minute)
	t.Logf("job a: %s", confirmed.Message)
	waitEvent(t, c, "b", api.EventTasksRunning, 1, time.Minute)

	_, _, err = c.Jobs().Summary("hidden", &api.QueryOptions{Namespace: "other"})
	must.ErrorContains(t, err, "404", must.Sprint("Caravan does not hold the job its token cannot see"))
	hidden, _, err := n.Client.Jobs().Info("hidden", &nomadapi.QueryOptions{Namespace: "other"})
	must.NoError(t, err)
	must.Eq(t, "", hidden.Meta["caravan_job_id"], must.Sprint("Caravan wrote no version of it"))
	must.SliceEmpty(t, caravanGroups(hidden))
	must.SliceEmpty(t, events(t, c, "", api.EventDriverError), must.Sprint("the token allows all Caravan does"))
	must.SliceEmpty(t, events(t, c, "a", api.EventRescaleAborted))
}
