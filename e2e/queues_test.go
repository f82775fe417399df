//go:build e2e

package e2e

import (
	"bufio"
	"cmp"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
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

// queuesRoundInterval is TestCaravanNomad_Queues's scheduler interval:
// the longest a change waits for a round.
const queuesRoundInterval = 10 * time.Second

// TestCaravanNomad_Queues shares a Nomad cluster of 4 fake GPUs between
// two teams (issue 32): the Nomad namespaces team-a and team-b, each the
// namespace of a queue, applied with `caravan queue apply`, of one
// cohort and a nominal quota of 2 GPUs. Under fifo, which alone never
// shrinks a running job for a newcomer, queue a's elastic trainer job
// borrows b's idle GPUs and runs on all 4. When queue b's job (2 workers)
// arrives, a's shrinks to its quota through a confirmed checkpoint
// within one round interval plus its checkpoint timeout, with a
// JobPreempted event naming queue a, and resumes at the checkpoint's
// step; b's starts from nothing on its quota. The rounds that follow
// leave both where they are.
func TestCaravanNomad_Queues(t *testing.T) {
	o := startOnNomad(t, func(nc *agent.NomadCluster, checkpoints string) string {
		return nomadAgentBodyEvery(nc, checkpoints, "fifo", queuesRoundInterval, "", "")
	})
	c := o.c
	const gpus = 4 // startOnNomad's cluster
	for _, ns := range []string{"team-a", "team-b"} {
		_, err := o.nc.Client.Namespaces().Register(&nomadapi.Namespace{Name: ns}, nil)
		must.NoError(t, err)
	}
	queues := filepath.Join(t.TempDir(), "queues.hcl")
	var src string
	for _, q := range []string{"a", "b"} {
		src += fmt.Sprintf(`
queue %q {
  namespaces = ["team-%s"]
  cohort     = "lab"
  quota {
    gpu "*" {
      nominal = %d
    }
  }
}
`, q, q, gpus/2)
	}
	must.NoError(t, os.WriteFile(queues, []byte(src), 0o600))
	out, code := o.cli(t, "queue", "apply", queues)
	must.Zero(t, code, must.Sprintf("caravan queue apply: %s", out))
	list, _, err := c.Queues().List(nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, list)
	for _, q := range list {
		must.Eq(t, "lab", q.Cohort)
		must.Eq(t, gpus/2, q.Quota.GPU[0].Nominal)
	}

	long := func(id, ns string, min, max int) *api.JobRegisterRequest {
		return trainerJobSpec{
			ID: id, Trainer: o.trainer, Namespace: ns, MinWorkers: min, MaxWorkers: max,
			WorkerArgs: []string{"-features", "100", "-examples", "20000", "-sample-cost", "1ms"},
			PSArgs:     []string{"-features", "100", "-examples", "20000"},
			Threshold:  0.0001, Patience: 1000, MaxEpochs: 1000,
		}.request()
	}
	teamA, teamB := &api.QueryOptions{Namespace: "team-a"}, &api.QueryOptions{Namespace: "team-b"}
	_, _, err = c.Jobs().Register(long("big", "team-a", 1, gpus), &api.WriteOptions{Namespace: "team-a"})
	must.NoError(t, err)
	waitWorkersIn(t, c, "team-a", "big", gpus) // borrowing queue b's idle quota
	waitStepIn(t, c, "team-a", "big", 20)

	_, _, err = c.Jobs().Register(long("small", "team-b", gpus/2, gpus/2), &api.WriteOptions{Namespace: "team-b"})
	must.NoError(t, err)
	small, _, err := c.Jobs().Info("small", teamB)
	must.NoError(t, err)
	bound := queuesRoundInterval + trainerCheckpointTimeout
	requested := waitEvent(t, c, "big", api.EventCheckpointRequested, 1, bound)
	confirmed := waitEvent(t, c, "big", api.EventCheckpointConfirmed, 1, bound)
	shrink := time.Duration(confirmed.Time - small.SubmitTime)
	t.Logf("job small submitted → job big's checkpoint requested %.2fs, confirmed %.2fs (bound: interval %s + checkpoint timeout %s = %s)",
		float64(requested.Time-small.SubmitTime)/1e9, shrink.Seconds(), queuesRoundInterval, trainerCheckpointTimeout, bound)
	must.Less(t, bound, shrink, must.Sprint("the shrink took longer than a round and a checkpoint"))

	pre := waitEvent(t, c, "big", api.EventJobPreempted, 1, time.Minute)
	t.Logf("%s: %s (%v)", pre.Type, pre.Message, pre.Details)
	must.Eq(t, "a", pre.Details["Queue"])
	must.StrContains(t, pre.Message, `queue "a"`)
	must.Eq(t, "team-a", pre.Namespace)
	must.Less(t, requested.Seq, pre.Seq, must.Sprint("the preemption is recorded with the decision, before the checkpoint enacting it"))

	waitWorkersIn(t, c, "team-a", "big", gpus/2)
	waitWorkersIn(t, c, "team-b", "small", gpus/2)
	running := waitEvent(t, c, "small", api.EventTasksRunning, 1, time.Minute)
	t.Logf("job small submitted → its tasks running %.2fs", float64(running.Time-small.SubmitTime)/1e9)

	// Nothing starts again from step 0: a resumes at its checkpoint, and
	// b, new, starts with no step done.
	k := confirmedStep(t, confirmed)
	resumed, before := resumedSampleIn(t, c, "team-a", "big", k)
	t.Logf("job big checkpointed at step %d on %d workers; first sample after: step %d on %d workers (checkpoint_step %d)",
		k, before.NumWorkers, resumed.Step, resumed.NumWorkers, resumed.CheckpointStep)
	must.Positive(t, k)
	must.Eq(t, gpus, before.NumWorkers)
	must.Eq(t, gpus/2, resumed.NumWorkers)
	must.Eq(t, k, resumed.CheckpointStep, must.Sprint("the resumed tasks loaded the confirmed checkpoint"))
	must.Between(t, k, resumed.Step, k+3)
	waitStepIn(t, c, "team-b", "small", 1)
	smps, _, err := c.Jobs().Samples("small", teamB)
	must.NoError(t, err)
	first := slices.MinFunc(smps.Samples, func(x, y api.Sample) int { return cmp.Compare(x.Step, y.Step) })
	t.Logf("job small's first sample: step %d on %d workers (checkpoint_step %d)", first.Step, first.NumWorkers, first.CheckpointStep)
	must.Zero(t, first.Step, must.Sprint("a new job starts with no step done"))
	must.Zero(t, first.CheckpointStep)
	must.Eq(t, gpus/2, first.NumWorkers)

	// The periodic rounds that follow keep both where the queues put
	// them, although fifo alone would run big at its request of 4.
	settled := leaderRounds(t, o.addr)
	agent.WaitFor(t, 3*queuesRoundInterval, "two more rounds", func() error {
		if n := leaderRounds(t, o.addr); n < settled+2 {
			return fmt.Errorf("%d rounds since", n-settled)
		}
		return nil
	})
	waitWorkersIn(t, c, "team-a", "big", gpus/2)
	waitWorkersIn(t, c, "team-b", "small", gpus/2)

	// Each job went through one change: a's shrink, b's start.
	for _, typ := range []string{api.EventCheckpointRequested, api.EventJobPreempted} {
		must.SliceLen(t, 1, events(t, c, "big", typ), must.Sprintf("%s events of job big", typ))
	}
	must.SliceEmpty(t, events(t, c, "big", api.EventRescaleAborted))
	must.SliceEmpty(t, events(t, c, "small", api.EventJobPreempted))
	hist, _, err := c.Jobs().History("big", teamA)
	must.NoError(t, err)
	shapes := make([]int, 0, len(hist))
	for _, h := range slices.Backward(hist) {
		shapes = append(shapes, h.Placement.NumWorkers)
	}
	t.Logf("job big ran at %v workers", shapes)
	must.Eq(t, []int{gpus, gpus / 2}, shapes)
}

// leaderRounds returns how many rounds the leader at addr has run, from
// its caravan_leader_round summary.
func leaderRounds(t *testing.T, addr string) int {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/v1/metrics")
	must.NoError(t, err)
	defer resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && strings.HasPrefix(name, "caravan_leader_round_count") {
			v, err := strconv.ParseFloat(value, 64)
			must.NoError(t, err)
			n += int(v)
		}
	}
	must.NoError(t, sc.Err())
	return n
}
