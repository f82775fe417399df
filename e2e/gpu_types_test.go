//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// TestCaravanNomad_GPUTypes runs Caravan under fifo on a mixed fleet of two
// Nomad clients, two T4s and two A100s (issue 30). Two jobs, each of one
// worker asking for `device "nvidia/gpu"` with count 2, fill a client each.
// For each job, the Nomad job Caravan submits asks for the model of the
// node Caravan placed its worker on (`nvidia/gpu/<model>`), and Nomad's
// allocation runs on that client with two of its GPUs of that model; the
// two jobs run on both models. `caravan job status` shows the type a job
// runs on, and `caravan node status` each node's.
func TestCaravanNomad_GPUTypes(t *testing.T) {
	t.Parallel()
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{
		Clients: 2, GPUClients: []int{2, 2}, GPUModels: []agent.GPUModel{t4, a100},
	})
	dumpOnFailure(t, nc)
	bin := agent.BuildCaravan(t)
	cl := startCaravans(t, bin, 1, nomadAgentBody(nc, t.TempDir(), "fifo"))
	leader := cl.waitLeader(t, "")
	c := cl.clients[leader]
	waitNodes(t, c, 2, 4)

	byID := map[string]agent.ClusterNode{}
	for _, n := range nc.Nodes {
		byID[n.ID] = n
	}
	ids := []string{"first", "second"}
	for _, id := range ids {
		_, _, err := c.Jobs().Register(&api.JobRegisterRequest{JobHCL: shellGPUJob(id, 1, 2), Filename: id + ".hcl"}, nil)
		must.NoError(t, err)
	}

	var models []string
	for _, id := range ids {
		// The node Caravan placed the worker on.
		var node agent.ClusterNode
		agent.WaitFor(t, time.Minute, "a placement of "+id, func() error {
			sum, _, err := c.Jobs().Summary(id, nil)
			if err != nil {
				return err
			}
			if sum.Placement == nil || sum.Placement.Placement == nil {
				return fmt.Errorf("no placement of %s yet", id)
			}
			for _, e := range sum.Placement.Placement.Nodes {
				if e.Workers > 0 {
					node = byID[e.NodeID]
					return nil
				}
			}
			return fmt.Errorf("placement of %s has no worker: %+v", id, sum.Placement.Placement)
		})
		must.Positive(t, node.GPUs, must.Sprintf("job %s's worker placed on a node without GPUs", id))
		model := node.GPUModel

		// The Nomad job asks for that model, in the worker group pinned
		// to that node.
		nomadID := "caravan-" + id
		var nj *nomadapi.Job
		agent.WaitFor(t, time.Minute, "the Nomad job "+nomadID, func() error {
			var err error
			nj, _, err = nc.Client.Jobs().Info(nomadID, nil)
			return err
		})
		group := nj.LookupTaskGroup("worker-" + node.ID)
		must.NotNil(t, group, must.Sprintf("Nomad job %s has no group worker-%s", nomadID, node.ID))
		must.Eq(t, []*nomadapi.RequestedDevice{{Name: model.Device(), Count: new(uint64(2))}},
			group.Tasks[0].Resources.Devices)

		// Nomad's allocation runs there, with two GPUs of that model.
		var alloc *nomadapi.Allocation
		agent.WaitFor(t, 2*time.Minute, "the worker of "+id+" running", func() error {
			stubs, _, err := nc.Client.Jobs().Allocations(nomadID, false, nil)
			if err != nil {
				return err
			}
			for _, s := range stubs {
				if s.TaskGroup == *group.Name && s.ClientStatus == nomadapi.AllocClientStatusRunning {
					alloc, _, err = nc.Client.Allocations().Info(s.ID, nil)
					return err
				}
			}
			return fmt.Errorf("no running allocation of %s among %d", *group.Name, len(stubs))
		})
		must.Eq(t, node.ID, alloc.NodeID)
		devices := alloc.AllocatedResources.Tasks["worker"].Devices
		must.SliceLen(t, 1, devices)
		must.Eq(t, "nvidia", devices[0].Vendor)
		must.Eq(t, "gpu", devices[0].Type)
		must.Eq(t, model.Name, devices[0].Name)
		got := slices.Sorted(slices.Values(devices[0].DeviceIDs))
		must.Eq(t, node.GPUIDs, got, must.Sprint("both GPUs of the node"))
		t.Logf("job %s: worker on %s (%s), GPUs %v", id, node.Name, model.Name, got)

		code, out := caravanCLI(t, bin, leader, "job", "status", id)
		must.Eq(t, 0, code, must.Sprint(out))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^GPU Type\s+= `+regexp.QuoteMeta(model.Name)+`$`), out)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^`+node.ID[:8]+`\s+worker\s+1\s+`+regexp.QuoteMeta(model.Name)+`$`), out)
		models = append(models, model.Name)
	}
	slices.Sort(models)
	must.Eq(t, []string{a100.Name, t4.Name}, models, must.Sprint("one job on each model"))

	code, out := caravanCLI(t, bin, leader, "node", "status")
	must.Eq(t, 0, code, must.Sprint(out))
	for _, n := range nc.Nodes {
		must.RegexMatch(t, regexp.MustCompile(`(?m)^`+n.ID[:8]+`\s+`+n.Name+`\s.*\s2/2\s+`+regexp.QuoteMeta(n.GPUModel.Name)+`$`), out)
	}
}
