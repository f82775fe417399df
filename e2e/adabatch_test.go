//go:build e2e

package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/shoenig/test/must"
)

// TestCaravanNomad_AdaptiveBatch runs a trainer job whose jobspec lets its
// batch vary (240 to 3840 examples, at most 480 a pass) under pollux, on
// a Nomad cluster with 4 fake GPUs. It starts at its jobspec's batch on
// one worker; once its throughput model is fitted from its samples,
// pollux grows it and chooses the batch of best goodput, and the job is
// rescaled through a confirmed checkpoint (rounds every 5 s). The test waits for a rescale
// across which the batch changed: the new generation's tasks were given
// the new batch (CARAVAN_GLOBAL_BATCH_SIZE, caravan_batch in the Nomad
// job's meta), the trainer's samples report it with its split and
// gradient noise statistics, and training resumed at the checkpoint's
// step.
func TestCaravanNomad_AdaptiveBatch(t *testing.T) {
	// Rounds every 5 s, so that pollux plans once the job's models are
	// fitted, not only when jobs come and go.
	nc, trainer, c := trainingOnNomadWith(t, func(nc *agent.NomadCluster, checkpoints string) string {
		return nomadAgentBodyEvery(nc, checkpoints, "pollux", 5*time.Second, "", "")
	})

	args := []string{"-features", "100", "-examples", "20000", "-sample-cost", "200us", "-report-every", "5"}
	job := trainerJobSpec{ID: "ada", Trainer: trainer, MaxWorkers: 4, WorkerArgs: args, PSArgs: args[:4],
		Threshold: 0.0001, Patience: 50, MaxEpochs: 400,
		Training: "batch_size {\n      min       = 240\n      max       = 3840\n      max_local = 480\n    }"}
	_, _, err := c.Jobs().Register(job.request(), (&api.WriteOptions{}).WithContext(t.Context()))
	must.NoError(t, err)
	waitEvent(t, c, "ada", api.EventTasksRunning, 1, 2*time.Minute)
	waitStep(t, c, "ada", 5)
	smps, _, err := c.Jobs().Samples("ada", nil)
	must.NoError(t, err)
	first := smps.Samples[0]
	must.Eq(t, 240, first.BatchSize, must.Sprint("the first generation trains at the jobspec's batch"))

	var k int64
	var resumed, before api.Sample
	for n := 1; ; n++ {
		must.LessEq(t, 4, n, must.Sprint("no rescale changed the batch"))
		k = confirmedStep(t, waitEvent(t, c, "ada", api.EventCheckpointConfirmed, n, 3*time.Minute))
		resumed, before = resumedSample(t, c, "ada", k)
		t.Logf("rescale %d at step %d: %d workers at batch %d (%d × %d passes) → %d workers at batch %d (%d × %d passes)", n, k,
			before.NumWorkers, before.BatchSize, before.LocalBatchSize, before.AccumSteps+1,
			resumed.NumWorkers, resumed.BatchSize, resumed.LocalBatchSize, resumed.AccumSteps+1)
		if resumed.BatchSize != before.BatchSize {
			break
		}
	}
	must.Eq(t, k, resumed.Step, must.Sprint("the new generation resumed at the checkpoint: no progress lost"))
	must.Eq(t, k, resumed.CheckpointStep)
	must.Eq(t, resumed.BatchSize, resumed.LocalBatchSize*int64(resumed.NumWorkers)*(resumed.AccumSteps+1))
	must.Between(t, 240, resumed.BatchSize, 3840)
	must.LessEq(t, 480, resumed.LocalBatchSize)

	// What Nomad runs is what the samples say.
	nj, _, err := nc.Client.Jobs().Info("caravan-ada", nil)
	must.NoError(t, err)
	must.StrHasPrefix(t, strconv.FormatInt(resumed.BatchSize, 10)+"/", nj.Meta["caravan_batch"])
	for _, tg := range nj.TaskGroups {
		if strings.HasPrefix(*tg.Name, "worker-") {
			env := tg.Tasks[0].Env
			must.Eq(t, strconv.FormatInt(resumed.BatchSize, 10), env["CARAVAN_GLOBAL_BATCH_SIZE"])
			must.Eq(t, strconv.FormatInt(resumed.LocalBatchSize, 10), env["CARAVAN_LOCAL_BATCH_SIZE"])
			must.Eq(t, strconv.FormatInt(resumed.AccumSteps, 10), env["CARAVAN_ACCUM_STEPS"])
			must.Eq(t, "240", env["CARAVAN_REFERENCE_BATCH_SIZE"])
		}
	}

	// The new generation measures its gradient noise at its batch.
	agent.WaitFor(t, time.Minute, "noise statistics at the new batch", func() error {
		smps, _, err := c.Jobs().Samples("ada", nil)
		if err != nil {
			return err
		}
		last := smps.Samples[len(smps.Samples)-1]
		if last.Step <= k || last.GradSqr <= 0 || last.GradVar <= 0 {
			return fmt.Errorf("last sample: step %d, batch %d, grad_sqr %g, grad_var %g", last.Step, last.BatchSize, last.GradSqr, last.GradVar)
		}
		if last.BatchSize != resumed.BatchSize && last.Step > k {
			t.Logf("the batch changed again by step %d: %d", last.Step, last.BatchSize)
		}
		t.Logf("at step %d, batch %d: grad_sqr %.3g, grad_var %.3g, noise scale %.0f examples", last.Step, last.BatchSize,
			last.GradSqr, last.GradVar, last.GradVar*float64(last.BatchSize)/last.GradSqr)
		return nil
	})
}
