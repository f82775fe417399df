//go:build e2e

package e2e

import (
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
	"github.com/shoenig/test/must"
)

// The tests of this file check that the leader loop closes on what runs
// (issue 14): a rescale is a change the driver advances at each poll and
// reports, confirmed by samples that reach the leader only through
// collector sidecars, aborted when its checkpoint never comes, and
// started by a new version of a job.

// elasticTrainerJob is a parameter-server job of examples/trainer: up to
// maxWorkers workers with a GPU each and one parameter server, converging
// in a few hundred steps.
func elasticTrainerJob(id, trainer string, maxWorkers int) *api.JobRegisterRequest {
	return trainerJobSpec{
		ID: id, Trainer: trainer, MaxWorkers: maxWorkers,
		WorkerArgs: []string{"-features", "100", "-examples", "20000", "-sample-cost", "1ms"},
		PSArgs:     []string{"-features", "100", "-examples", "20000"},
		Threshold:  0.02, Patience: 2, MaxEpochs: 8,
	}.request()
}

// trainerJobSpec is a sync parameter-server job of examples/trainer: a
// global batch of 240, 40 steps an epoch, MinWorkers (1 when 0) to
// MaxWorkers workers with a GPU each and one parameter server, each
// running Trainer with its args, and the convergence block's Threshold,
// Patience and MaxEpochs.
type trainerJobSpec struct {
	ID, Trainer string
	// Namespace is the job's, and its Nomad job's; "" for "default".
	Namespace              string
	MinWorkers, MaxWorkers int
	WorkerArgs, PSArgs     []string
	Threshold              float64
	Patience, MaxEpochs    int
	// Training holds more lines of the training block, such as a
	// batch_size block.
	Training string
}

// trainerCheckpointTimeout is a trainerJobSpec job's checkpoint timeout:
// how long a rescale waits for its checkpoint before it is aborted.
const trainerCheckpointTimeout = 30 * time.Second

// request renders the job as a register request.
func (s trainerJobSpec) request() *api.JobRegisterRequest {
	namespace := ""
	if s.Namespace != "" {
		namespace = fmt.Sprintf("namespace = %q", s.Namespace)
	}
	hcl := fmt.Sprintf(`
job %[1]q {
  %[10]s
  training {
    architecture      = "ps"
    mode              = "sync"
    global_batch_size = 240
    steps_per_epoch   = 40
    convergence {
      threshold  = %[5]g
      patience   = %[6]d
      max_epochs = %[7]d
    }
    %[9]s
  }
  elastic {
    workers {
      min = %[11]d
      max = %[8]d
    }
    parameter_servers {
      min = 1
      max = 1
    }
    checkpoint {
      timeout = %[12]q
    }
  }
  worker {
    driver = "raw_exec"
    config {
      command = %[2]q
      args    = %[3]s
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
      args    = %[4]s
    }
    resources {
      cpu    = 100
      memory = 128
    }
  }
}
`, s.ID, s.Trainer, hclList(s.WorkerArgs), hclList(s.PSArgs), s.Threshold, s.Patience, s.MaxEpochs, s.MaxWorkers, s.Training,
		namespace, max(s.MinWorkers, 1), trainerCheckpointTimeout)
	return &api.JobRegisterRequest{JobHCL: hcl, Filename: s.ID + ".hcl"}
}

// hclList renders strings as an HCL list.
func hclList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// stubbornJob is a job of up to 4 workers with a GPU each and one
// parameter server whose tasks ignore the checkpoint signal (SIGUSR1),
// never checkpoint and never report: a rescale of it cannot be confirmed
// within its checkpoint timeout of 3 seconds.
func stubbornJob(id string) *api.JobRegisterRequest {
	hcl := fmt.Sprintf(`
job %q {
  training {
    global_batch_size = 60
    steps_per_epoch   = 10
  }
  elastic {
    workers {
      min = 1
      max = 4
    }
    parameter_servers {
      min = 1
      max = 1
    }
    checkpoint {
      signal  = "SIGUSR1"
      timeout = "3s"
    }
  }
  worker {
    driver = "raw_exec"
    config {
      command = "/bin/sh"
      args    = ["-c", "trap '' USR1; while true; do sleep 1; done"]
    }
    resources {
      cpu    = 50
      memory = 32
      device "nvidia/gpu" {
        count = 1
      }
    }
  }
  parameter_server {
    driver = "raw_exec"
    config {
      command = "/bin/sh"
      args    = ["-c", "trap '' USR1; while true; do sleep 1; done"]
    }
    resources {
      cpu    = 50
      memory = 32
    }
  }
}
`, id)
	return &api.JobRegisterRequest{JobHCL: hcl, Filename: id + ".hcl"}
}

// cpuJob is a job of one worker and one parameter server without GPUs
// that sleep.
func cpuJob(id string) *api.JobRegisterRequest {
	hcl := fmt.Sprintf(`
job %q {
  training {
    global_batch_size = 60
    steps_per_epoch   = 10
  }
  elastic {
    workers {
      min = 1
      max = 1
    }
    parameter_servers {
      min = 1
      max = 1
    }
  }
  worker {
    driver = "raw_exec"
    config {
      command = "/bin/sh"
      args    = ["-c", "while true; do sleep 1; done"]
    }
    resources {
      cpu    = 50
      memory = 32
    }
  }
}
`, id)
	return &api.JobRegisterRequest{JobHCL: hcl, Filename: id + ".hcl"}
}

// summary returns a job's summary, failing the test on an error.
func summary(t *testing.T, c *api.Client, id string) *api.JobSummary {
	t.Helper()
	sum, _, err := c.Jobs().Summary(id, nil)
	must.NoError(t, err)
	return sum
}

// history returns a job's placement history, newest first.
func history(t *testing.T, c *api.Client, id string) []*api.JobPlacement {
	t.Helper()
	hist, _, err := c.Jobs().History(id, nil)
	must.NoError(t, err)
	return hist
}

// confirmedStep returns the checkpoint step a CheckpointConfirmed event
// names.
func confirmedStep(t *testing.T, ev *api.Event) int64 {
	t.Helper()
	k, err := strconv.ParseInt(ev.Details["Step"], 10, 64)
	must.NoError(t, err)
	return k
}

// resumedSample waits for the first sample of the generation that
// followed the checkpoint at step k: after the first sample reporting
// checkpoint step k, the first one at another configuration or whose step
// is not past its predecessor's (the tasks started again). It returns that
// sample and the configuration checkpointed.
func resumedSample(t *testing.T, c *api.Client, id string, k int64) (resumed, before api.Sample) {
	t.Helper()
	return resumedSampleIn(t, c, "", id, k)
}

// resumedSampleIn is resumedSample of a job of namespace ns ("" for
// "default").
func resumedSampleIn(t *testing.T, c *api.Client, ns, id string, k int64) (resumed, before api.Sample) {
	t.Helper()
	agent.WaitFor(t, time.Minute, fmt.Sprintf("job %s resumed after its checkpoint at step %d", id, k), func() error {
		smps, _, err := c.Jobs().Samples(id, &api.QueryOptions{Namespace: ns})
		if err != nil {
			return err
		}
		all := smps.Samples
		from := slices.IndexFunc(all, func(s api.Sample) bool { return s.CheckpointStep == k })
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
		for _, ev := range events(t, c, id, api.EventTasksRunning) {
			if ev.Details["Rescale"] != "true" {
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
	_, _, err := c.Jobs().Register(elasticTrainerJob("a", trainer, 4), nil)
	must.NoError(t, err)
	waitEvent(t, c, "a", api.EventTasksRunning, 1, 2*time.Minute)
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

	before := len(events(t, c, "a", api.EventCheckpointConfirmed))
	_, _, err = c.Jobs().Register(elasticTrainerJob("b", trainer, 2), nil)
	must.NoError(t, err)
	confirmed := waitEvent(t, c, "a", api.EventCheckpointConfirmed, before+1, time.Minute)
	k := confirmedStep(t, confirmed)
	resumed, at := resumedSample(t, c, "a", k)
	t.Logf("job a checkpointed at step %d on %d workers; first sample after: step %d on %d workers (checkpoint_step %d)",
		k, at.NumWorkers, resumed.Step, resumed.NumWorkers, resumed.CheckpointStep)
	must.Eq(t, 4, at.NumWorkers)
	must.Less(t, 4, resumed.NumWorkers, must.Sprint("the first job gives up GPUs to the second"))
	must.Eq(t, k, resumed.CheckpointStep, must.Sprint("the resumed tasks loaded the confirmed checkpoint"))
	must.Between(t, k, resumed.Step, k+3)

	for _, id := range []string{"a", "b"} {
		agent.WaitFor(t, 6*time.Minute, "job "+id+" complete", jobIs(c, id, api.JobStatusComplete))
	}
	makespan := time.Since(start)
	for _, id := range []string{"a", "b"} {
		must.SliceEmpty(t, events(t, c, id, api.EventRescaleAborted), must.Sprintf("job %s: every rescale confirmed", id))
		// Every rescale of the job resumed from its confirmed checkpoint.
		for _, ev := range events(t, c, id, api.EventCheckpointConfirmed) {
			k := confirmedStep(t, ev)
			resumed, _ := resumedSample(t, c, id, k)
			must.Eq(t, k, resumed.CheckpointStep, must.Sprintf("job %s resumed from its checkpoint at step %d", id, k))
			must.Between(t, k, resumed.Step, k+3)
		}
	}
	t.Logf("reports the sink refused: %d", refused.Load())
	rescaleTimes(t, c, makespan, "a", "b")
}

// TestCaravanNomad_CheckpointFails runs a job whose tasks never
// checkpoint on all 4 GPUs; a second job's arrival asks it to shrink. Its
// checkpoint is not confirmed within 3 seconds: the change is aborted,
// and the job keeps running where it ran, on the same Nomad job version.
// The next round knows it: the job is running again, what runs is the old
// placement, and the aborted placement is not tried again at once.
func TestCaravanNomad_CheckpointFails(t *testing.T) {
	t.Parallel()
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{})
	dumpOnFailure(t, nc)
	cl := startCaravans(t, agent.BuildCaravan(t), 1, nomadAgentBody(nc, t.TempDir(), "drf"))
	c := cl.clients[cl.waitLeader(t, "")]
	waitNodes(t, c, 3, 4)

	_, _, err := c.Jobs().Register(stubbornJob("a"), nil)
	must.NoError(t, err)
	waitEvent(t, c, "a", api.EventTasksRunning, 1, 2*time.Minute)
	waitWorkers(t, c, "a", 4)
	ran := history(t, c, "a")
	old := ran[0].Placement
	version := nomadJobVersion(t, nc, "a")

	// A job of exactly 2 workers leaves the first 2 GPUs at most.
	_, _, err = c.Jobs().Register(&api.JobRegisterRequest{JobHCL: shellGPUJob("b", 2, 1), Filename: "b.hcl"}, nil)
	must.NoError(t, err)
	requested := waitEvent(t, c, "a", api.EventCheckpointRequested, 1, time.Minute)
	t.Logf("requested: %s", requested.Message)
	var change *api.Change
	agent.WaitFor(t, 30*time.Second, "job a rescaling", func() error {
		sum := summary(t, c, "a")
		if sum.Observed == nil || sum.Observed.Change == nil {
			return fmt.Errorf("observed: %+v", sum.Observed)
		}
		change = sum.Observed.Change
		if change.Phase == api.ChangeCheckpointing && sum.Job.Status != api.JobStatusRescaling {
			return fmt.Errorf("job is %s while checkpointing", sum.Job.Status)
		}
		if change.Phase != api.ChangeCheckpointing && change.Phase != api.ChangeAborted {
			return fmt.Errorf("change is %s: %s", change.Phase, change.Message)
		}
		return nil
	})
	must.Less(t, 4, change.Target.NumWorkers)

	aborted := waitEvent(t, c, "a", api.EventRescaleAborted, 1, 30*time.Second)
	t.Logf("aborted %.1fs after the request: %s", float64(aborted.Time-requested.Time)/1e9, aborted.Message)
	var obs *api.Observed
	agent.WaitFor(t, 30*time.Second, "job a running as it did", func() error {
		sum := summary(t, c, "a")
		obs = sum.Observed
		switch {
		case obs == nil || obs.Change == nil:
			return fmt.Errorf("observed: %+v", obs)
		case obs.Change.Phase != api.ChangeAborted:
			return fmt.Errorf("change is %s", obs.Change.Phase)
		case sum.Job.Status != api.JobStatusRunning:
			return fmt.Errorf("job is %s", sum.Job.Status)
		}
		return nil
	})
	t.Logf("observed change: %s (%s)", obs.Change.Phase, obs.Change.Message)
	must.True(t, obs.Placement.SameTasks(old), must.Sprintf("what runs %+v, what ran %+v", obs.Placement, old))
	must.Eq(t, version, nomadJobVersion(t, nc, "a"), must.Sprint("the aborted change submitted nothing to Nomad"))

	// The next round: a third job, without GPUs, makes one. It plans
	// from what runs and leaves the aborted placement for its backoff.
	_, _, err = c.Jobs().Register(cpuJob("c"), nil)
	must.NoError(t, err)
	agent.WaitFor(t, time.Minute, "a plan with job c", func() error {
		plan, _, err := c.LatestPlan(nil)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(plan.Placements, func(p *api.Placement) bool { return p.JobID == "c" && !p.Paused() }) {
			return fmt.Errorf("plan %d does not place job c", plan.Index)
		}
		for _, p := range plan.Placements {
			t.Logf("plan %d: job %s %d ps, %d workers; %s", plan.Index, p.JobID, p.NumPS, p.NumWorkers, p.Reason)
		}
		return nil
	})
	waitEvent(t, c, "c", api.EventTasksRunning, 1, time.Minute)
	sum := summary(t, c, "a")
	must.Eq(t, api.JobStatusRunning, sum.Job.Status)
	must.True(t, sum.Observed.Placement.SameTasks(old))
	must.Eq(t, api.ChangeAborted, sum.Observed.Change.Phase, must.Sprint("no second change started within the backoff"))
	must.SliceLen(t, 1, events(t, c, "a", api.EventCheckpointRequested))
	must.SliceLen(t, 1, events(t, c, "a", api.EventRescaleAborted))
	must.Eq(t, version, nomadJobVersion(t, nc, "a"))
	hist := history(t, c, "a")
	must.SliceLen(t, len(ran), hist, must.Sprint("what runs did not change"))
	must.True(t, hist[0].Placement.SameTasks(old))
	dry, _, err := c.Jobs().Plan(stubbornJob("a"), nil)
	must.NoError(t, err)
	must.True(t, dry.Current.SameTasks(old), must.Sprint("the scheduler's view of what runs"))
	bsum := summary(t, c, "b")
	t.Logf("job b is %s; runs %+v; change %+v", bsum.Job.Status, bsum.Observed.Placement, bsum.Observed.Change)
}

// TestCaravanNomad_UpdateLowersMax registers a new version of a running
// trainer job that holds 4 GPUs, with at most 2 workers: the round the
// version triggers gives it 2 at most, and the driver rescales it there
// through a confirmed checkpoint. Registering the same spec again changes
// nothing.
func TestCaravanNomad_UpdateLowersMax(t *testing.T) {
	nc, trainer, c := trainingOnNomad(t)

	reg, _, err := c.Jobs().Register(elasticTrainerJob("a", trainer, 4), nil)
	must.NoError(t, err)
	waitEvent(t, c, "a", api.EventTasksRunning, 1, 2*time.Minute)
	waitWorkers(t, c, "a", 4)
	waitStep(t, c, "a", 20)
	nomadVersion := nomadJobVersion(t, nc, "a")

	updated := time.Now()
	up, _, err := c.Jobs().Update("a", elasticTrainerJob("a", trainer, 2), nil)
	must.NoError(t, err)
	must.False(t, up.Unchanged)
	must.Eq(t, reg.Version+1, up.Version)
	agent.WaitFor(t, time.Minute, "job a desired on 2 workers at most", func() error {
		sum := summary(t, c, "a")
		if sum.Placement == nil || sum.Placement.Placement.NumWorkers > 2 || sum.Placement.Placement.Paused() {
			return fmt.Errorf("desired: %+v", sum.Placement)
		}
		return nil
	})
	decided := time.Since(updated)
	agent.WaitFor(t, 2*time.Minute, "job a running on 2 workers at most", func() error {
		sum := summary(t, c, "a")
		hist := history(t, c, "a")
		switch o := sum.Observed; {
		case o == nil || o.Placement == nil || o.Change == nil:
			return fmt.Errorf("observed: %+v", o)
		case o.Change.Phase != api.ChangeDone || o.Placement.NumWorkers > 2:
			return fmt.Errorf("%d workers run; change %s: %s", o.Placement.NumWorkers, o.Change.Phase, o.Change.Message)
		case hist[0].Placement.NumWorkers > 2:
			return fmt.Errorf("history: %d workers", hist[0].Placement.NumWorkers)
		}
		return nil
	})
	t.Logf("new version → desired on ≤2 workers: %v; → running there: %v", decided.Round(time.Millisecond), time.Since(updated).Round(time.Millisecond))
	must.Greater(t, nomadVersion, nomadJobVersion(t, nc, "a"))
	confirmed := waitEvent(t, c, "a", api.EventCheckpointConfirmed, 1, time.Second)
	k := confirmedStep(t, confirmed)
	resumed, _ := resumedSample(t, c, "a", k)
	must.Eq(t, k, resumed.CheckpointStep)
	must.Between(t, 1, resumed.NumWorkers, 2)
	must.SliceEmpty(t, events(t, c, "a", api.EventRescaleAborted))

	// The same spec again: Unchanged, no new version, nothing enacted.
	versions, _, err := c.Jobs().Versions("a", nil)
	must.NoError(t, err)
	nomadVersion = nomadJobVersion(t, nc, "a")
	again, _, err := c.Jobs().Update("a", elasticTrainerJob("a", trainer, 2), nil)
	must.NoError(t, err)
	must.True(t, again.Unchanged)
	must.Eq(t, up.Version, again.Version)
	after, _, err := c.Jobs().Versions("a", nil)
	must.NoError(t, err)
	must.SliceLen(t, len(versions), after, must.Sprint("an unchanged registration stores no version"))
	must.Eq(t, nomadVersion, nomadJobVersion(t, nc, "a"))
	must.SliceLen(t, 1, events(t, c, "a", api.EventCheckpointRequested))
}
