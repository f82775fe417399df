//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// The tests of this file check that the leader loop closes on what runs
// (issue 14): a rescale is a change the driver advances at each poll and
// reports, confirmed by samples that reach the leader only through
// collector sidecars, aborted when its checkpoint never comes, and
// started by a new version of a job.

// elasticTrainerJob is trainerJob with up to maxWorkers workers.
func elasticTrainerJob(id, trainer string, maxWorkers int) *api.JobRegisterRequest {
	hcl := fmt.Sprintf(`
job %[1]q {
  training {
    architecture      = "ps"
    mode              = "sync"
    global_batch_size = 240
    steps_per_epoch   = 40
    convergence {
      threshold  = 0.02
      patience   = 2
      max_epochs = 8
    }
  }
  elastic {
    workers {
      min = 1
      max = %[3]d
    }
    parameter_servers {
      min = 1
      max = 1
    }
    checkpoint {
      timeout = "30s"
    }
  }
  worker {
    driver = "raw_exec"
    config {
      command = %[2]q
      args    = ["-features", "100", "-examples", "20000", "-sample-cost", "1ms"]
    }
    resources {
      cpu    = 100
      memory = 128
      device "nvidia/gpu" {
        count = 1
      }
    }
  }
  parameter_server {
    driver = "raw_exec"
    config {
      command = %[2]q
      args    = ["-features", "100", "-examples", "20000"]
    }
    resources {
      cpu    = 100
      memory = 128
    }
  }
}
`, id, trainer, maxWorkers)
	return &api.JobRegisterRequest{JobHCL: hcl, Filename: id + ".hcl"}
}

// summary returns a job's summary, failing the test on an error.
func summary(t *testing.T, c *api.Client, id string) *api.JobSummary {
	t.Helper()
	sum, _, err := c.Jobs().Summary(id, nil)
	must.NoError(t, err)
	return sum
}

// confirmedStep returns the checkpoint step a CheckpointConfirmed event
// names.
func confirmedStep(t *testing.T, ev *structs.Event) int64 {
	t.Helper()
	k, err := strconv.ParseInt(ev.Details["step"], 10, 64)
	must.NoError(t, err)
	return k
}

// resumedSample waits for the first sample of the generation that
// followed the checkpoint at step k: after the first sample reporting
// checkpoint step k, the first one at another configuration or whose step
// is not past its predecessor's (the tasks started again). It returns that
// sample and the configuration checkpointed.
func resumedSample(t *testing.T, c *api.Client, id string, k int64) (resumed, before structs.Sample) {
	t.Helper()
	agent.WaitFor(t, time.Minute, fmt.Sprintf("job %s resumed after its checkpoint at step %d", id, k), func() error {
		smps, _, err := c.Jobs().Samples(id, nil)
		if err != nil {
			return err
		}
		all := smps.Samples
		from := slices.IndexFunc(all, func(s structs.Sample) bool { return s.CheckpointStep == k })
		if from < 0 {
			return fmt.Errorf("no sample reported checkpoint step %d", k)
		}
		before = all[from]
		for i := from + 1; i < len(all); i++ {
			s := all[i]
			if s.NumPS != before.NumPS || s.NumWorkers != before.NumWorkers || s.Step <= all[i-1].Step {
				resumed = s
				return nil
			}
		}
		return fmt.Errorf("no sample of a new generation after step %d's (%d samples)", k, len(all))
	})
	return resumed, before
}

// rescaleTimes logs how long each rescale of the jobs took, from the
// checkpoint request until every task of the new generation ran (the
// TasksRunning events with rescale=true), and their share of makespan,
// in one line.
func rescaleTimes(t *testing.T, c *api.Client, makespan time.Duration, ids ...string) {
	t.Helper()
	var per []string
	var total float64
	n := 0
	for _, id := range ids {
		var secs []string
		for _, ev := range events(t, c, id, structs.EventTasksRunning) {
			if ev.Details["rescale"] != "true" {
				continue
			}
			s := seconds(t, ev)
			secs = append(secs, fmt.Sprintf("%.2fs", s))
			total += s
			n++
		}
		per = append(per, fmt.Sprintf("%s [%s]", id, strings.Join(secs, " ")))
	}
	t.Logf("RESCALES %s: %d rescales (%s) took %.1fs of a %.1fs makespan (%.2f%%)",
		t.Name(), n, strings.Join(per, "; "), total, makespan.Seconds(), 100*total/makespan.Seconds())
}

// TestCaravanNomad_SidecarRescale runs two trainer jobs under optimus,
// profiled in place, on a Nomad cluster with 4 fake GPUs; their trainers
// report only to their `caravan collector` sidecars, which the leader
// finds in Consul and scrapes (the servers' address they fall back to
// answers 503). The second job's arrival rescales the first through a
// checkpoint confirmed by scraped samples, and the first resumes at that
// step; every rescale is confirmed, none aborted, and both jobs complete.
func TestCaravanNomad_SidecarRescale(t *testing.T) {
	consul := agent.StartConsul(t)
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{})
	dumpOnFailure(t, nc)
	trainer := buildTrainer(t)
	bin := agent.BuildCaravan(t)

	// Where trainers report after their sidecar: a sink that refuses
	// every report, so that samples reach the leader through the
	// sidecars or not at all.
	var refused atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refused.Add(1)
		http.Error(w, "this test's trainers report to their sidecars only", http.StatusServiceUnavailable)
	}))
	t.Cleanup(sink.Close)
	nomadExtra := fmt.Sprintf("collector_command = %q\n  report_addrs      = [%q]", bin, sink.URL)
	body := nomadAgentBodyWith(nc, t.TempDir(), "optimus", nomadExtra, "profile_configs = 2\n  profile_steps   = 3") +
		fmt.Sprintf("consul {\n  address = %q\n}\n", consul.HTTPAddr)
	cl := startCaravans(t, bin, 1, body)
	c := cl.clients[cl.waitLeader(t, "")]
	waitNodes(t, c, 3, 4)

	start := time.Now()
	_, err := c.Jobs().Register(context.Background(), elasticTrainerJob("a", trainer, 4))
	must.NoError(t, err)
	waitEvent(t, c, "a", structs.EventTasksRunning, 1, 2*time.Minute)
	info, _, err := nc.Client.Jobs().Info("caravan-a", nil)
	must.NoError(t, err)
	for _, tg := range info.TaskGroups {
		must.SliceLen(t, 2, tg.Tasks, must.Sprintf("group %s has its collector sidecar", *tg.Name))
		must.Eq(t, "http://${NOMAD_ADDR_collector},"+sink.URL, tg.Tasks[0].Env["CARAVAN_COLLECTOR_ADDR"],
			must.Sprint("the trainers report to their sidecar, else to the sink"))
	}

	// Profiled at 1 worker, then at 4 (model.ProfileConfigs for 2), the
	// job alone keeps every GPU.
	agent.WaitFor(t, 2*time.Minute, "job a profiled", func() error {
		sum := summary(t, c, "a")
		if sum.Model == nil || len(sum.Model.Profiling) > 0 || sum.Model.SpeedConfigs < 2 {
			return fmt.Errorf("model: %+v", sum.Model)
		}
		return nil
	})
	waitWorkers(t, c, "a", 4)
	sum := summary(t, c, "a")
	must.NotNil(t, sum.LastSample)
	waitStep(t, c, "a", sum.LastSample.Step+5)

	before := len(events(t, c, "a", structs.EventCheckpointConfirmed))
	_, err = c.Jobs().Register(context.Background(), elasticTrainerJob("b", trainer, 2))
	must.NoError(t, err)
	confirmed := waitEvent(t, c, "a", structs.EventCheckpointConfirmed, before+1, time.Minute)
	k := confirmedStep(t, confirmed)
	resumed, at := resumedSample(t, c, "a", k)
	t.Logf("job a checkpointed at step %d on %d workers; first sample after: step %d on %d workers (checkpoint_step %d)",
		k, at.NumWorkers, resumed.Step, resumed.NumWorkers, resumed.CheckpointStep)
	must.Eq(t, 4, at.NumWorkers)
	must.Less(t, 4, resumed.NumWorkers, must.Sprint("the first job gives up GPUs to the second"))
	must.Eq(t, k, resumed.CheckpointStep, must.Sprint("the resumed tasks loaded the confirmed checkpoint"))
	must.Between(t, k, resumed.Step, k+3)

	for _, id := range []string{"a", "b"} {
		agent.WaitFor(t, 6*time.Minute, "job "+id+" complete", jobIs(c, id, structs.JobStatusComplete))
	}
	makespan := time.Since(start)
	for _, id := range []string{"a", "b"} {
		must.SliceEmpty(t, events(t, c, id, structs.EventRescaleAborted), must.Sprintf("job %s: every rescale confirmed", id))
		// Every rescale of the job resumed from its confirmed checkpoint.
		for _, ev := range events(t, c, id, structs.EventCheckpointConfirmed) {
			k := confirmedStep(t, ev)
			resumed, _ := resumedSample(t, c, id, k)
			must.Eq(t, k, resumed.CheckpointStep, must.Sprintf("job %s resumed from its checkpoint at step %d", id, k))
			must.Between(t, k, resumed.Step, k+3)
		}
	}
	t.Logf("reports the sink refused: %d", refused.Load())
	rescaleTimes(t, c, makespan, "a", "b")
}
