//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// runningWorkers returns the nodes of a Nomad job's running worker
// allocations, by allocation ID.
func runningWorkers(t *testing.T, nc *agent.NomadCluster, jobID string) map[string]string {
	t.Helper()
	allocs, _, err := nc.Client.Jobs().Allocations(jobID, false, nil)
	must.NoError(t, err)
	out := map[string]string{}
	for _, a := range allocs {
		if strings.HasPrefix(a.TaskGroup, "worker-") && a.ClientStatus == nomadapi.AllocClientStatusRunning {
			out[a.ID] = a.NodeID
		}
	}
	return out
}

// TestCaravanNomad_StragglerMoved runs a two-worker trainer job under fifo
// with straggler handling on, on three Nomad clients with one fake GPU
// each, so that the workers run on two nodes and the third is free. Once
// the job runs, the test marks one worker's node slow (the trainer's
// -slow-nodes file): the worker there computes 4 times as long. Every
// worker reports its own time per step with its allocation ID; Caravan
// matches them to the usage it reads from Nomad, the straggler pass finds
// the slow worker after its window (5 s) and moves it, through the
// checkpointed restart, to the free node: a StragglerReplaced event says
// why, and the new generation runs no worker on the slow node.
func TestCaravanNomad_StragglerMoved(t *testing.T) {
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{GPUClients: []int{1, 1, 1}})
	dumpOnFailure(t, nc)
	trainer := buildTrainer(t)
	bin := agent.BuildCaravan(t)
	cl := startCaravans(t, bin, 1, nomadAgentBodyWith(nc, t.TempDir(), "fifo", `usage_interval = "500ms"`, `
  straggler {
    enabled = true
    window  = "5s"
  }`))
	leader := cl.waitLeader(t, "")
	c := cl.clients[leader]
	waitNodes(t, c, 3, 3)

	slowNodes := filepath.Join(t.TempDir(), "slow-nodes")
	args := []string{"-features", "100", "-examples", "20000", "-sample-cost", "500us", "-report-every", "5",
		"-slow-nodes", slowNodes, "-node", "$${node.unique.id}", "-slow-factor", "4"}
	job := trainerJobSpec{ID: "strag", Trainer: trainer, MaxWorkers: 2, WorkerArgs: args, PSArgs: args[:4],
		Threshold: 0.0001, Patience: 50, MaxEpochs: 200}
	_, _, err := c.Jobs().Register(job.request(), (&api.WriteOptions{}).WithContext(t.Context()))
	must.NoError(t, err)
	waitEvent(t, c, "strag", api.EventTasksRunning, 1, 2*time.Minute)
	var first map[string]string
	agent.WaitFor(t, time.Minute, "two running workers", func() error {
		if first = runningWorkers(t, nc, "caravan-strag"); len(first) != 2 {
			return fmt.Errorf("running workers: %v", first)
		}
		return nil
	})
	nodes := slices.Sorted(func(yield func(string) bool) {
		for _, n := range first {
			if !yield(n) {
				return
			}
		}
	})
	must.NotEq(t, nodes[0], nodes[1], must.Sprint("one GPU per node"))
	slow := nodes[1]
	must.NoError(t, os.WriteFile(slowNodes, []byte(slow+"\n"), 0o644))
	t.Logf("marked node %s slow", slow)

	// Caravan sees every worker's own step time, the slow one's longer.
	agent.WaitFor(t, time.Minute, "the slow worker's step time in the committed usage", func() error {
		sum, _, err := c.Jobs().Summary("strag", nil)
		if err != nil {
			return err
		}
		var times []string
		var onSlow, other float64
		for _, u := range usageTasks(sum) {
			if u.Role != api.RoleWorker {
				continue
			}
			times = append(times, fmt.Sprintf("%d@%s:%.3gs", u.Rank, u.NodeID, u.TaskStepTimeS))
			if u.NodeID == slow {
				onSlow = u.TaskStepTimeS
			} else {
				other = u.TaskStepTimeS
			}
		}
		if other <= 0 || onSlow < 2.5*other {
			return fmt.Errorf("workers' step times: %v", times)
		}
		t.Logf("workers' step times: %v", times)
		return nil
	})

	out, err := exec.Command(bin, "job", "status", "-verbose", "-address", "http://"+leader, "strag").CombinedOutput()
	must.NoError(t, err, must.Sprint(string(out)))
	t.Logf("caravan job status -verbose:\n%s", out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^worker\s+\d\s+`+slow+`\s+.*\s[\d.]+ms\s+0\s+0\s+nomad\s`), string(out))

	ev := waitEvent(t, c, "strag", api.EventStragglerReplaced, 1, 2*time.Minute)
	t.Logf("Caravan's event: %s", ev.Message)
	must.Eq(t, slow, ev.Details["From"])
	must.NotEq(t, nodes[0], ev.Details["To"])
	must.NotEq(t, slow, ev.Details["To"])
	must.Eq(t, api.RoleWorker, ev.Details["Role"])
	must.StrContains(t, ev.Message, "Optimus §5.2")

	waitEvent(t, c, "strag", api.EventTasksRunning, 2, 2*time.Minute)
	agent.WaitFor(t, time.Minute, "two workers running off the slow node", func() error {
		now := runningWorkers(t, nc, "caravan-strag")
		var on []string
		for id, n := range now {
			if first[id] != "" {
				return fmt.Errorf("allocation %s of the first generation still runs", id)
			}
			on = append(on, n)
		}
		slices.Sort(on)
		if len(on) != 2 || slices.Contains(on, slow) {
			return fmt.Errorf("workers run on %v", on)
		}
		return nil
	})
	must.SliceLen(t, 1, events(t, c, "strag", api.EventStragglerReplaced))
}
