//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// speconTrainerJob is a job of examples/trainer with one worker (a GPU)
// and one parameter server, whose loss falls at the pace lr and features
// give it, reporting every step. Its convergence block keeps it running
// through the test: the epoch criterion is loose enough never to end it
// first.
func speconTrainerJob(id, trainer string, lr float64, features int) *api.JobRegisterRequest {
	args := []string{"-features", strconv.Itoa(features), "-examples", "20000", "-sample-cost", "1ms", "-lr", strconv.FormatFloat(lr, 'g', -1, 64)}
	return trainerJobSpec{
		ID: id, Trainer: trainer, MaxWorkers: 1, WorkerArgs: args, PSArgs: args,
		Threshold: 0.0001, Patience: 50, MaxEpochs: 200,
	}.request()
}

// placedOn returns the node a job's newest placement puts all its tasks
// on, or an error when it has none or spans nodes.
func placedOn(c *api.Client, id string) (*api.JobPlacement, error) {
	hist, _, err := c.Jobs().History(id, nil)
	switch {
	case err != nil:
		return nil, err
	case len(hist) == 0 || hist[0].Placement.Paused():
		return nil, fmt.Errorf("job %s is not placed", id)
	case len(hist[0].Placement.Nodes) != 1:
		return nil, fmt.Errorf("job %s spans %d nodes", id, len(hist[0].Placement.Nodes))
	}
	return hist[0], nil
}

// runningAllocNodes returns the nodes of a Nomad job's running
// allocations, and of those that ran before and stopped.
func runningAllocNodes(t *testing.T, nc *agent.NomadCluster, jobID string) (running, stopped []string) {
	t.Helper()
	allocs, _, err := nc.Client.Jobs().Allocations(jobID, true, nil)
	must.NoError(t, err)
	for _, a := range allocs {
		switch a.ClientStatus {
		case nomadapi.AllocClientStatusRunning:
			running = append(running, a.NodeID)
		case nomadapi.AllocClientStatusComplete, nomadapi.AllocClientStatusFailed:
			stopped = append(stopped, a.NodeID)
		}
	}
	return running, stopped
}

// TestCaravanNomad_SpeConMigration runs Caravan with algorithm specon over
// fifo on a Nomad cluster of two clients, one with 5 fake GPUs and one
// with 1. Three one-worker trainer jobs arrive; fifo puts each on the most
// available node, which is the 5-GPU one every time. Job a (learning rate
// 0.3, 20 features) flattens out within about 30 s, while b and c (0.05,
// 100 features) still progress: Algorithm 1 (α = 1.5% relative gain per 2 s)
// takes a through WC to CC and has it request reallocation, since two jobs
// on its node are in PC or WC, and Algorithm 2 moves it to the 1-GPU node,
// whose score is 0 against the host's 5. The move is an ordinary change:
// a's checkpoint is requested and confirmed at step k, its Nomad
// allocations end on the other node, and it resumes there from step k
// (no progress lost) and trains on. b and c are never moved.
func TestCaravanNomad_SpeConMigration(t *testing.T) {
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{Clients: 2, GPUClients: []int{5, 1}})
	dumpOnFailure(t, nc)
	trainer := buildTrainer(t)
	body := fmt.Sprintf(`
driver = "nomad"
nomad {
  address        = %q
  checkpoint_dir = %q
}
scheduler {
  algorithm = "specon"
  interval  = "2s"
  options = {
    base     = "fifo"
    alpha    = "0.015"
    interval = "2s"
  }
}
`, nc.Address, t.TempDir())
	cl := startCaravans(t, agent.BuildCaravan(t), 1, body)
	c := cl.clients[cl.waitLeader(t, "")]
	waitNodes(t, c, 2, 6)
	big, small := nc.Nodes[0].ID, nc.Nodes[1].ID

	ctx := context.Background()
	_, _, err := c.Jobs().Register(speconTrainerJob("a", trainer, 0.3, 20), (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	waitEvent(t, c, "a", api.EventTasksRunning, 1, 2*time.Minute)
	waitStep(t, c, "a", 40)
	for _, id := range []string{"b", "c"} {
		_, _, err := c.Jobs().Register(speconTrainerJob(id, trainer, 0.05, 100), (&api.WriteOptions{}).WithContext(ctx))
		must.NoError(t, err)
		waitEvent(t, c, id, api.EventTasksRunning, 1, 2*time.Minute)
	}
	// What fifo placed: every job on the 5-GPU node.
	for _, id := range []string{"a", "b", "c"} {
		p, err := placedOn(c, id)
		must.NoError(t, err)
		must.Eq(t, big, p.Placement.Nodes[0].NodeID, must.Sprintf("fifo placed job %s on the most available node", id))
	}

	// SpeCon moves a through a confirmed checkpoint.
	requested := waitEvent(t, c, "a", api.EventCheckpointRequested, 1, 3*time.Minute)
	confirmed := waitEvent(t, c, "a", api.EventCheckpointConfirmed, 1, time.Minute)
	k := confirmedStep(t, confirmed)
	moved := waitEvent(t, c, "a", api.EventTasksRunning, 2, 2*time.Minute)
	must.Eq(t, "true", moved.Details["Rescale"])
	t.Logf("job a: checkpoint requested at %s, confirmed at step %d, running on the other node %.1fs after the request",
		time.Unix(0, requested.Time).Format(time.TimeOnly), k, float64(moved.Time-requested.Time)/1e9)

	p, err := placedOn(c, "a")
	must.NoError(t, err)
	must.Eq(t, "specon", p.Algorithm)
	must.Eq(t, small, p.Placement.Nodes[0].NodeID, must.Sprint("SpeCon moved job a to the least-scored node"))
	must.StrHasPrefix(t, "specon: converged at ", p.Placement.Reason)
	must.StrContains(t, p.Placement.Reason, fmt.Sprintf("migrated from %s to %s", big, small))
	must.Eq(t, api.Shape{PS: 1, Workers: 1}, api.Shape{PS: p.Placement.NumPS, Workers: p.Placement.NumWorkers},
		must.Sprint("a move keeps the job's shape"))
	t.Logf("job a: %s", p.Placement.Reason)

	// On Nomad: a's allocations now run on the 1-GPU node only, and the
	// ones before ran on the 5-GPU node.
	agent.WaitFor(t, time.Minute, "job a's Nomad allocations on the other node", func() error {
		running, stopped := runningAllocNodes(t, nc, "caravan-a")
		if len(running) != 2 || slices.ContainsFunc(running, func(n string) bool { return n != small }) {
			return fmt.Errorf("running allocations on %v", running)
		}
		if len(stopped) < 2 || slices.ContainsFunc(stopped, func(n string) bool { return n != big }) {
			return fmt.Errorf("stopped allocations on %v", stopped)
		}
		return nil
	})
	sum := summary(t, c, "a")
	must.NotNil(t, sum.Observed)
	must.NotNil(t, sum.Observed.Placement)
	must.Eq(t, small, sum.Observed.Placement.Nodes[0].NodeID, must.Sprint("the driver reports job a running on the other node"))

	// No progress lost: the new generation loaded the checkpoint at step
	// k and starts there, and every sample since is at k or beyond.
	resumed, before := resumedSample(t, c, "a", k)
	t.Logf("job a: checkpoint at step %d (sample step %d); first sample on the other node: step %d, checkpoint_step %d",
		k, before.Step, resumed.Step, resumed.CheckpointStep)
	must.Eq(t, k, resumed.CheckpointStep, must.Sprint("the resumed tasks loaded the confirmed checkpoint"))
	must.Between(t, k, resumed.Step, k+3)
	waitStep(t, c, "a", k+40)
	smps, _, err := c.Jobs().Samples("a", nil)
	must.NoError(t, err)
	for _, s := range smps.Samples {
		if s.Time > moved.Time {
			must.GreaterEq(t, k, s.Step, must.Sprintf("sample at %d after the move", s.Time))
		}
	}

	// a moved once; b and c never did, and still run where fifo put them.
	must.SliceLen(t, 1, events(t, c, "a", api.EventCheckpointRequested))
	for _, id := range []string{"b", "c"} {
		must.SliceEmpty(t, events(t, c, id, api.EventCheckpointRequested), must.Sprintf("job %s was not moved", id))
		p, err := placedOn(c, id)
		must.NoError(t, err)
		must.Eq(t, big, p.Placement.Nodes[0].NodeID)
		must.False(t, strings.Contains(p.Placement.Reason, "migrated"), must.Sprint(p.Placement.Reason))
	}
}
