//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/drivers/nomad"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/structs"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// recordingHost is the driver's host in driver-level tests: the test plays
// the trainers' part by setting the last sample, and reads the events.
type recordingHost struct {
	mu     sync.Mutex
	sample structs.Sample
	events []*structs.Event
}

func (h *recordingHost) LastSample(structs.JobKey) (structs.Sample, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sample, h.sample.Step > 0
}

func (h *recordingHost) Event(_ context.Context, ev *structs.Event) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
	return nil
}

// JobReportToken is empty: the test's trainers report to no server that
// checks tokens.
func (h *recordingHost) JobReportToken(structs.JobKey) string { return "" }

func (h *recordingHost) report(s structs.Sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sample = s
}

func (h *recordingHost) eventTypes() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, ev := range h.events {
		out = append(out, ev.Type)
	}
	return out
}

// shellJob is a job whose tasks print their contract environment, write a
// marker file into dir when they get the checkpoint signal, and sleep.
func shellJob(t *testing.T, dir string) *structs.Job {
	script := fmt.Sprintf("echo role=$CARAVAN_ROLE rank=$CARAVAN_RANK workers=$CARAVAN_NUM_WORKERS resume=$CARAVAN_RESUME; trap 'touch %s/signalled-$CARAVAN_ROLE-$CARAVAN_RANK-$CARAVAN_GENERATION' USR1; while true; do sleep 0.1; done", dir)
	return scriptJob(t, script)
}

// scriptJob is a job whose tasks run a shell script.
func scriptJob(t *testing.T, script string) *structs.Job {
	src := fmt.Sprintf(`
job "sh" {
  training {
    global_batch_size = 64
    steps_per_epoch   = 10
  }
  elastic {
    workers {
      min = 1
      max = 4
    }
    parameter_servers {
      min = 1
      max = 2
    }
    checkpoint {
      timeout = "3s"
    }
  }
  worker {
    driver = "raw_exec"
    config {
      command = "/bin/sh"
      args = ["-c", %q]
    }
    resources {
      cpu    = 50
      memory = 32
    }
  }
}
`, script)
	job, diags := jobspec.Parse(&jobspec.Config{Filename: "sh.hcl", Src: []byte(src)})
	must.False(t, diags.HasErrors(), must.Sprint(diags))
	job.Canonicalize()
	must.NoError(t, job.Validate())
	return job
}

func plan(index uint64, node string, ps, workers int) *structs.Plan {
	return &structs.Plan{Index: index, Placements: []*structs.Placement{{
		Namespace: "default", JobID: "sh", NumPS: ps, NumWorkers: workers,
		Nodes: []*structs.NodeTasks{{NodeID: node, PS: ps, Workers: workers}},
	}}}
}

func newDriver(t *testing.T, n *agent.Nomad, host structs.DriverHost) *nomad.Driver {
	return newDriverWith(t, n, host, nomad.Config{})
}

// newDriverWith returns a driver of cfg on the agent, with fast polling.
func newDriverWith(t *testing.T, n *agent.Nomad, host structs.DriverHost, cfg nomad.Config) *nomad.Driver {
	cfg.Address, cfg.CheckpointDir, cfg.Host = n.Address, t.TempDir(), host
	d, err := nomad.New(cfg)
	must.NoError(t, err)
	t.Cleanup(d.Stop)
	return d
}

// enact enacts a plan and returns the report of job "sh".
func enact(t *testing.T, d *nomad.Driver, p *structs.Plan, job *structs.Job) *structs.JobReport {
	t.Helper()
	reports, err := d.Enact(context.Background(), p, []*structs.Job{job})
	must.NoError(t, err)
	must.SliceLen(t, 1, reports)
	return reports[0]
}

// settle advances the driver, as the leader's loop does, until the change
// of job "sh" is no longer in flight, and returns the last report.
func settle(t *testing.T, d *nomad.Driver) *structs.JobReport {
	t.Helper()
	return settleJob(t, d, "sh")
}

// settleJob is settle for the job of ID id.
func settleJob(t *testing.T, d *nomad.Driver, id string) *structs.JobReport {
	t.Helper()
	var got *structs.JobReport
	agent.WaitFor(t, time.Minute, "the change to end", func() error {
		reports, err := d.Status(context.Background())
		if err != nil {
			return err
		}
		for _, r := range reports {
			if r.JobID == id && r.Change != nil && !r.Change.InFlight() {
				got = r
				return nil
			}
		}
		return fmt.Errorf("reports: %v", reports)
	})
	return got
}

// runningTasks waits until the Nomad job's current version runs want
// allocations and returns the lines they printed.
func runningTasks(t *testing.T, n *agent.Nomad, want int) []string {
	t.Helper()
	var lines []string
	agent.WaitFor(t, time.Minute, fmt.Sprintf("%d running tasks", want), func() error {
		job, _, err := n.Client.Jobs().Info("caravan-sh", nil)
		if err != nil {
			return err
		}
		allocs, _, err := n.Client.Jobs().Allocations("caravan-sh", false, nil)
		if err != nil {
			return err
		}
		lines = nil
		for _, a := range allocs {
			if a.JobVersion != *job.Version || a.ClientStatus != nomadapi.AllocClientStatusRunning {
				continue
			}
			alloc, _, err := n.Client.Allocations().Info(a.ID, nil)
			if err != nil {
				return err
			}
			task := alloc.Job.LookupTaskGroup(a.TaskGroup).Tasks[0].Name
			out, err := catFile(n.Client, alloc, "alloc/logs/"+task+".stdout.0")
			if err != nil || out == "" {
				return fmt.Errorf("no output of %s yet (%v)", a.Name, err)
			}
			lines = append(lines, strings.TrimSpace(out))
		}
		if len(lines) != want {
			return fmt.Errorf("%d of %d tasks run", len(lines), want)
		}
		return nil
	})
	slices.Sort(lines)
	return lines
}

// TestNomadDriver_EnactRescaleAdopt drives the nomad driver against a real
// Nomad agent: the first plan starts the tasks with the contract's
// environment; enacting it again, or from a second driver as a new leader
// would, changes nothing; a rescale signals the tasks and waits for the
// confirmed checkpoint before it submits the next generation; a rescale
// whose checkpoint is never confirmed is not applied; a plan without the
// job stops it.
func TestNomadDriver_EnactRescaleAdopt(t *testing.T) {
	t.Parallel()
	n := agent.StartNomad(t, agent.NomadOptions{})
	host := &recordingHost{}
	d := newDriver(t, n, host)
	ctx := context.Background()
	dir := t.TempDir()
	job := shellJob(t, dir)

	nodes, err := d.Nodes(ctx)
	must.NoError(t, err)
	must.SliceLen(t, 1, nodes)
	must.Eq(t, n.NodeID, nodes[0].ID)
	must.Positive(t, nodes[0].CPU)
	must.Positive(t, nodes[0].MemoryMB)
	must.True(t, nodes[0].Schedulable())

	started := enact(t, d, plan(10, n.NodeID, 1, 2), job)
	must.Eq(t, structs.ChangeStarting, started.Change.Phase, must.Sprint("nothing runs: submitted at once"))
	must.Eq(t, structs.ChangeDone, settle(t, d).Change.Phase)
	must.Eq(t, []string{
		"role=ps rank=0 workers=2 resume=0",
		"role=worker rank=0 workers=2 resume=0",
		"role=worker rank=1 workers=2 resume=0",
	}, runningTasks(t, n, 3))
	info, _, err := n.Client.Jobs().Info("caravan-sh", nil)
	must.NoError(t, err)
	version := *info.Version

	// The same plan, from this driver and from a new one: no new version.
	enact(t, d, plan(11, n.NodeID, 1, 2), job)
	adopter := newDriver(t, n, host)
	must.Nil(t, enact(t, adopter, plan(11, n.NodeID, 1, 2), job).Change, must.Sprint("the adopter changes nothing"))
	info, _, err = n.Client.Jobs().Info("caravan-sh", nil)
	must.NoError(t, err)
	must.Eq(t, version, *info.Version, must.Sprint("enacting the running plan again changed the Nomad job"))
	reports, err := adopter.Status(ctx)
	must.NoError(t, err)
	must.SliceLen(t, 1, reports)
	must.Eq(t, structs.JobStatusRunning, reports[0].Status)
	must.Eq(t, 3, reports[0].Placement.NumPS+reports[0].Placement.NumWorkers, must.Sprint("what runs, from the allocations"))

	// A rescale waits for the checkpoint: confirm it once the tasks got
	// the signal.
	host.report(structs.Sample{JobID: "sh", Step: 40, CheckpointStep: 20})
	confirmed := make(chan error, 1)
	go func() {
		err := agent.Poll(30*time.Second, "checkpoint signal delivered", func() error {
			_, err := os.Stat(filepath.Join(dir, "signalled-worker-0-1"))
			return err
		})
		if err == nil {
			host.report(structs.Sample{JobID: "sh", Step: 41, CheckpointStep: 41})
		}
		confirmed <- err
	}()
	// Enact does not wait for the checkpoint, and a second plan while the
	// change is in flight does not start another.
	r := enact(t, d, plan(12, n.NodeID, 1, 3), job)
	must.Eq(t, structs.ChangeCheckpointing, r.Change.Phase)
	must.Eq(t, 2, r.Placement.NumWorkers, must.Sprint("the old placement runs while the checkpoint is awaited"))
	r = enact(t, d, plan(13, n.NodeID, 1, 1), job)
	must.Eq(t, uint64(12), r.Change.PlanIndex, must.Sprint("no second change while one is in flight"))
	must.NoError(t, <-confirmed)
	done := settle(t, d)
	must.Eq(t, structs.ChangeDone, done.Change.Phase)
	must.Eq(t, 3, done.Placement.NumWorkers)
	must.Eq(t, []string{
		"role=ps rank=0 workers=3 resume=1",
		"role=worker rank=0 workers=3 resume=1",
		"role=worker rank=1 workers=3 resume=1",
		"role=worker rank=2 workers=3 resume=1",
	}, runningTasks(t, n, 4))
	must.SliceContainsSubset(t, host.eventTypes(), []string{structs.EventCheckpointRequested, structs.EventCheckpointConfirmed})

	// Nobody confirms this one: the job keeps running as it was.
	info, _, err = n.Client.Jobs().Info("caravan-sh", nil)
	must.NoError(t, err)
	version = *info.Version
	must.Eq(t, structs.ChangeCheckpointing, enact(t, d, plan(13, n.NodeID, 1, 1), job).Change.Phase)
	aborted := settle(t, d)
	must.Eq(t, structs.ChangeAborted, aborted.Change.Phase)
	must.StrContains(t, aborted.Change.Message, "no checkpoint newer than step 41")
	must.Eq(t, 3, aborted.Placement.NumWorkers, must.Sprint("the job runs as it was"))
	info, _, err = n.Client.Jobs().Info("caravan-sh", nil)
	must.NoError(t, err)
	must.Eq(t, version, *info.Version, must.Sprint("a rescale without a confirmed checkpoint was applied"))
	must.SliceContains(t, host.eventTypes(), structs.EventRescaleAborted)

	// A plan without the job stops it, through the job's worker.
	_, err = d.Enact(ctx, &structs.Plan{Index: 14}, nil)
	must.NoError(t, err)
	agent.WaitFor(t, 30*time.Second, "the Nomad job stopped", func() error {
		info, _, err := n.Client.Jobs().Info("caravan-sh", nil)
		if err != nil {
			return err
		}
		if !*info.Stop {
			return fmt.Errorf("the Nomad job runs")
		}
		return nil
	})
}

// TestNomadDriver_FailedTasks runs tasks that fail: the driver reports the
// job for replanning, not as failed, and starts it again from its
// checkpoint when the plan is enacted; once it failed MaxRestarts times
// more, it reports the job failed with the task's error.
func TestNomadDriver_FailedTasks(t *testing.T) {
	t.Parallel()
	n := agent.StartNomad(t, agent.NomadOptions{})
	host := &recordingHost{}
	d := newDriverWith(t, n, host, nomad.Config{MaxRestarts: 1})
	ctx := context.Background()
	job := scriptJob(t, "echo starting; exit 3")

	report := func(want func(*structs.JobReport) bool, what string) *structs.JobReport {
		var got *structs.JobReport
		agent.WaitFor(t, 2*time.Minute, what, func() error {
			reports, err := d.Status(ctx)
			if err != nil {
				return err
			}
			for _, r := range reports {
				if r.JobID == "sh" && want(r) {
					got = r
					return nil
				}
			}
			return fmt.Errorf("reports: %v", reports)
		})
		return got
	}
	enact(t, d, plan(1, n.NodeID, 1, 1), job)
	lost := report(func(r *structs.JobReport) bool { return r.Replan }, "a report asking to replan")
	must.Eq(t, structs.JobStatusRunning, lost.Status, must.Sprint("failed tasks do not fail the job at once"))
	t.Logf("replan: %s", lost.Message)

	enact(t, d, plan(2, n.NodeID, 1, 1), job)
	must.SliceContains(t, host.eventTypes(), structs.EventJobRestarted)
	failed := report(func(r *structs.JobReport) bool { return r.Status == structs.JobStatusFailed }, "the job failed")
	must.StrContains(t, failed.Message, "after 1 restarts")
	must.StrContains(t, failed.Message, "Exit Code: 3")
	t.Logf("failed: %s", failed.Message)
	info, _, err := n.Client.Jobs().Info("caravan-sh", nil)
	must.NoError(t, err)
	must.Eq(t, "2", info.Meta["caravan_generation"])
}

// TestNomadDriver_StopsEveryGroup stops a job of two task groups (its ps
// and its workers) on Nomad v1.11.0, whose evaluation of a stopped job
// stops one group's allocations only (hashicorp/nomad#27175): through the
// driver, every allocation stops; stopped behind the driver's back (a
// plain `nomad job stop`), one group runs on until Status stops the job
// again, through a version at count 0, lingerGrace later.
func TestNomadDriver_StopsEveryGroup(t *testing.T) {
	t.Parallel()
	n := agent.StartNomad(t, agent.NomadOptions{})
	d := newDriver(t, n, &recordingHost{})
	ctx := context.Background()
	job := shellJob(t, t.TempDir())
	live := func() int {
		running, _, leftOver := readHistory(t, n.Client, "default", "caravan-sh").live()
		return running + leftOver
	}
	stopped := func(what string, timeout time.Duration) {
		t.Helper()
		start := time.Now()
		agent.WaitFor(t, timeout, what, func() error {
			if _, err := d.Status(ctx); err != nil {
				return err
			}
			if l := live(); l > 0 {
				return fmt.Errorf("%d allocations live", l)
			}
			if info, _, err := n.Client.Jobs().Info("caravan-sh", nil); err != nil || !*info.Stop {
				return fmt.Errorf("the Nomad job not stopped (%v)", err)
			}
			return nil
		})
		t.Logf("%s in %s", what, time.Since(start).Round(10*time.Millisecond))
	}

	for i := range 3 {
		enact(t, d, plan(uint64(10+2*i), n.NodeID, 1, 2), job)
		must.Eq(t, structs.ChangeDone, settle(t, d).Change.Phase)
		_, err := d.Enact(ctx, &structs.Plan{Index: uint64(11 + 2*i)}, nil)
		must.NoError(t, err)
		stopped(fmt.Sprintf("stop %d through the driver: every allocation stopped", i+1), 10*time.Second)
	}

	enact(t, d, plan(20, n.NodeID, 1, 2), job)
	must.Eq(t, structs.ChangeDone, settle(t, d).Change.Phase)
	_, _, err := n.Client.Jobs().Deregister("caravan-sh", false, nil)
	must.NoError(t, err)
	var left int
	err = agent.Poll(10*time.Second, "Nomad leaving a group running after a plain stop", func() error {
		if left = live(); left != 1 && left != 2 {
			return fmt.Errorf("%d allocations live", left)
		}
		return nil
	})
	must.NoError(t, err, must.Sprint("Nomad stopped every group itself: this test no longer tries the driver's second stop"))
	t.Logf("a plain stop left %d of the 3 allocations running", left)
	_, err = d.Enact(ctx, &structs.Plan{Index: 21}, nil) // not planned: not submitted again
	must.NoError(t, err)
	stopped("a plain stop, then the driver's second stop: every allocation stopped", 40*time.Second)
}
