//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// The tests of this file submit trainer jobs as Nomad users do (issue 15):
// Nomad job files whose groups carry a caravan scaling policy, run with
// the real `nomad` CLI. Caravan's leader finds them in Nomad, sizes and
// places them as its own, and follows what the user does to them with
// Nomad's CLI.

// trainerFile is a Nomad job file of examples/trainer: a worker group of
// 1 to maxWorkers tasks and a ps group of one task.
type trainerFile struct {
	id, trainer string
	// namespace is the job's Nomad namespace; empty means Nomad's default.
	namespace  string
	maxWorkers int
	// long makes the job train far longer than a test, until stopped.
	long bool
	// cpu is each task's CPU in MHz (100 when 0); noGPU leaves out the
	// GPU each worker asks for otherwise.
	cpu   int
	noGPU bool
}

func (f trainerFile) String() string {
	threshold, patience, epochs := "0.02", 2, 8
	if f.long {
		threshold, patience, epochs = "0.000001", 1000, 100000
	}
	namespace, gpu := "", "\n        device \"nvidia/gpu\" {\n          count = 1\n        }"
	if f.namespace != "" {
		namespace = fmt.Sprintf("namespace = %q", f.namespace)
	}
	if f.noGPU {
		gpu = ""
	}
	return fmt.Sprintf(`
job %[1]q {
  type = "batch"
  %[7]s

  group "worker" {
    scaling {
      min = 1
      max = %[3]d

      policy {
        caravan {
          role = "worker"

          training {
            architecture      = "ps"
            mode              = "sync"
            global_batch_size = 240
            steps_per_epoch   = 40

            convergence {
              threshold  = %[4]s
              patience   = %[5]d
              max_epochs = %[6]d
            }
          }

          checkpoint {
            timeout = "30s"
          }
        }
      }
    }

    task "train" {
      driver = "raw_exec"

      config {
        command = %[2]q
        args    = ["-features", "100", "-examples", "20000", "-sample-cost", "1ms"]
      }

      resources {
        cpu    = %[8]d
        memory = 128%[9]s
      }
    }
  }

  group "ps" {
    scaling {
      min = 1
      max = 1

      policy {
        caravan {
          role = "ps"
        }
      }
    }

    task "ps" {
      driver = "raw_exec"

      config {
        command = %[2]q
        args    = ["-features", "100", "-examples", "20000"]
      }

      resources {
        cpu    = %[8]d
        memory = 128
      }
    }
  }
}
`, f.id, f.trainer, f.maxWorkers, threshold, patience, epochs, namespace, cmp.Or(f.cpu, 100), gpu)
}

// plainFile is the same job without Caravan: one group that sleeps.
func plainFile(id string) string {
	return fmt.Sprintf(`
job %q {
  type = "batch"

  group "worker" {
    task "train" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "sleep 3600"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`, id)
}

// nomadCLI runs Nomad's CLI as a user does, against the agent at addr
// with an ACL token (none when empty).
type nomadCLI struct{ addr, token string }

// run runs the CLI and returns its output; the test fails when it exits
// non-zero.
func (n nomadCLI) run(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agent.NomadBinary(t), args...)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+n.addr, "NOMAD_TOKEN="+n.token)
	out, err := cmd.CombinedOutput()
	must.NoError(t, err, must.Sprintf("nomad %s:\n%s", strings.Join(args, " "), out))
	return string(out)
}

// jobRun writes src to a file and runs it with `nomad job run -detach`.
func (n nomadCLI) jobRun(t *testing.T, name, src string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	n.run(t, "job", "run", "-detach", path)
}

// nomadJob returns a Nomad job as it is now.
func nomadJob(t *testing.T, nc *agent.NomadCluster, id string) *nomadapi.Job {
	t.Helper()
	job, _, err := nc.Client.Jobs().Info(id, nil)
	must.NoError(t, err)
	return job
}

// caravanGroups returns the groups of a Nomad job Caravan wrote, which
// it names <role>-<node ID>; none for a version of the user's.
func caravanGroups(job *nomadapi.Job) []string {
	var out []string
	for _, tg := range job.TaskGroups {
		if strings.HasPrefix(*tg.Name, api.RoleWorker+"-") || strings.HasPrefix(*tg.Name, api.RolePS+"-") {
			out = append(out, *tg.Name)
		}
	}
	return out
}

// TestNomadJobRun_TrainAndRescale runs two trainer jobs with `nomad job
// run` on a Nomad cluster with 4 fake GPUs, after one Caravan refuses for
// asking more workers than its maximum. Caravan finds the first,
// places it on the GPU clients as per-node groups of the same Nomad job,
// and rescales it through a confirmed checkpoint when the second arrives;
// both complete. `nomad job status` and `nomad alloc logs` work on them
// throughout, and the Nomad job says what Caravan runs.
func TestNomadJobRun_TrainAndRescale(t *testing.T) {
	nc, trainer, c := trainingOnNomad(t)
	cli := nomadCLI{addr: nc.Address}

	// A job beyond Caravan's maxima (issue 26) is refused at once, naming
	// the field and the maximum, and stopped in Nomad as its user wrote it
	// (see TestNomadJobRun_Reject).
	cli.jobRun(t, "huge", trainerFile{id: "huge", trainer: trainer, maxWorkers: 100_000, noGPU: true}.String())
	rejected := waitEvent(t, c, "huge", api.EventJobRejected, 1, time.Minute)
	must.StrContains(t, rejected.Message, "100000 is more than the maximum of 16384")
	must.SliceEmpty(t, caravanGroups(nomadJob(t, nc, "huge")), must.Sprint("the refused job is not taken over"))
	cli.run(t, "job", "stop", "-purge", "huge")

	ran := time.Now()
	cli.jobRun(t, "a", trainerFile{id: "a", trainer: trainer, maxWorkers: 4}.String())
	first := waitEvent(t, c, "a", api.EventTasksRunning, 1, 2*time.Minute)
	t.Logf("NOMAD JOB RUN → CARAVAN'S FIRST PLACEMENT RUNNING: %.2fs (registered in Caravan, decided, submitted as Caravan's version, every task running)",
		float64(first.Time-ran.UnixNano())/1e9)

	sum := summary(t, c, "a")
	must.NotNil(t, sum.Job.Nomad, must.Sprint("the Caravan job was declared in Nomad"))
	must.Eq(t, map[string]string{api.RoleWorker: "worker", api.RolePS: "ps"}, sum.Job.Nomad.Groups)
	job := nomadJob(t, nc, "a")
	must.SliceNotEmpty(t, caravanGroups(job), must.Sprint("Caravan's per-node groups run in the user's Nomad job"))
	must.Eq(t, "a", job.Meta["caravan_job_id"])
	must.StrContains(t, job.Meta["caravan_shape"], "workers on")
	must.NotNil(t, job.UI)
	must.StrContains(t, job.UI.Description, "Caravan")
	for _, tg := range job.TaskGroups {
		must.Nil(t, tg.Scaling, must.Sprintf("group %s: Caravan owns the counts", *tg.Name))
		must.Eq(t, "a", tg.Tasks[0].Env["CARAVAN_JOB_ID"])
	}
	status := cli.run(t, "job", "status", "a")
	must.StrContains(t, status, "worker-")
	allocs, _, err := nc.Client.Jobs().Allocations("a", false, nil)
	must.NoError(t, err)
	var worker string
	for _, a := range allocs {
		if a.ClientStatus == nomadapi.AllocClientStatusRunning && strings.HasPrefix(a.TaskGroup, "worker-") {
			worker = a.ID
		}
	}
	must.NotEq(t, "", worker, must.Sprint("a running worker allocation"))
	agent.WaitFor(t, 30*time.Second, "the worker's log", func() error {
		if logs := cli.run(t, "alloc", "logs", "-stderr", worker, "train"); !strings.Contains(logs, "job_id=a") {
			return fmt.Errorf("log so far: %q", logs)
		}
		return nil
	})

	waitWorkers(t, c, "a", 4)
	waitStep(t, c, "a", 20)
	cli.jobRun(t, "b", trainerFile{id: "b", trainer: trainer, maxWorkers: 2}.String())
	confirmed := waitEvent(t, c, "a", api.EventCheckpointConfirmed, 1, time.Minute)
	k := confirmedStep(t, confirmed)
	resumed, at := resumedSample(t, c, "a", k)
	t.Logf("job a checkpointed at step %d on %d workers; resumed at step %d on %d workers", k, at.NumWorkers, resumed.Step, resumed.NumWorkers)
	must.Less(t, 4, resumed.NumWorkers, must.Sprint("job a gives up GPUs to job b"))
	must.Eq(t, k, resumed.CheckpointStep, must.Sprint("the resumed tasks loaded the confirmed checkpoint"))
	must.StrContains(t, cli.run(t, "job", "status", "a"), "worker-")

	for _, id := range []string{"a", "b"} {
		agent.WaitFor(t, 6*time.Minute, "job "+id+" complete", jobIs(c, id, api.JobStatusComplete))
		must.SliceEmpty(t, events(t, c, id, api.EventRescaleAborted))
	}
	must.StrContains(t, cli.run(t, "job", "status", "a"), "dead")
}

// TestNomadJobRun_UpdateStopHandBack follows a job a user changes with
// Nomad's CLI, on three Caravan servers whose leader is killed right
// after the change: a new max through `nomad job run` reaches the new
// leader once, as one new version, and takes effect; `nomad job stop`
// stops the Caravan job; run again, it is a new run; a version without
// the caravan block is handed back to Nomad, which runs it as written
// while Caravan leaves it alone.
func TestNomadJobRun_UpdateStopHandBack(t *testing.T) {
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{})
	dumpOnFailure(t, nc)
	trainer := buildTrainer(t)
	cl := startCaravans(t, agent.BuildCaravan(t), 3, nomadAgentBody(nc, t.TempDir(), "drf"))
	leader := cl.waitLeader(t, "")
	c := cl.clients[leader]
	waitNodes(t, c, 3, 4)
	cli := nomadCLI{addr: nc.Address}

	cli.jobRun(t, "u", trainerFile{id: "u", trainer: trainer, maxWorkers: 4, long: true}.String())
	waitEvent(t, c, "u", api.EventTasksRunning, 1, 2*time.Minute)
	waitWorkers(t, c, "u", 4)
	waitStep(t, c, "u", 20)

	// A new max, and the leader killed as it lands.
	cli.jobRun(t, "u", trainerFile{id: "u", trainer: trainer, maxWorkers: 2, long: true}.String())
	cl.procs[leader].Kill()
	leader = cl.waitLeader(t, leader)
	c = cl.clients[leader]
	agent.WaitFor(t, 2*time.Minute, "job u running on 2 workers at most", func() error {
		sum := summary(t, c, "u")
		switch o := sum.Observed; {
		case sum.Job.Version != 1:
			return fmt.Errorf("job u at version %d", sum.Job.Version)
		case o == nil || o.Placement == nil || o.Change == nil:
			return fmt.Errorf("observed: %+v", o)
		case o.Change.Phase != api.ChangeDone || o.Placement.NumWorkers > 2:
			return fmt.Errorf("%d workers run; change %s: %s", o.Placement.NumWorkers, o.Change.Phase, o.Change.Message)
		}
		return nil
	})
	sum := summary(t, c, "u")
	must.Eq(t, 2, sum.Job.Elastic.Workers.Max)
	versions, _, err := c.Jobs().Versions("u", nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, versions, must.Sprint("one Caravan version per version the user ran, none twice"))
	// Nomad replaced Caravan's groups with the user's at once: the job
	// started again, at the next generation, from its last checkpoint.
	must.Eq(t, "2", nomadJob(t, nc, "u").Meta["caravan_generation"])
	jobs, _, err := c.Jobs().List(nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, jobs, must.Sprint("one Caravan job"))

	cli.run(t, "job", "stop", "-detach", "u")
	agent.WaitFor(t, time.Minute, "job u stopped", jobIs(c, "u", api.JobStatusStopped))
	must.StrContains(t, summary(t, c, "u").Job.StatusDescription, "stopped in the cluster")

	cli.jobRun(t, "u", trainerFile{id: "u", trainer: trainer, maxWorkers: 2, long: true}.String())
	agent.WaitFor(t, 2*time.Minute, "job u running again", jobIs(c, "u", api.JobStatusRunning))
	waitEvent(t, c, "u", api.EventTasksRunning, 3, 2*time.Minute) // start, rescale, start again

	cli.jobRun(t, "u", plainFile("u"))
	agent.WaitFor(t, time.Minute, "job u handed back", jobIs(c, "u", api.JobStatusStopped))
	must.StrContains(t, summary(t, c, "u").Job.StatusDescription, "handed back")
	agent.WaitFor(t, time.Minute, "Nomad running the user's group", func() error {
		allocs, _, err := nc.Client.Jobs().Allocations("u", false, nil)
		if err != nil {
			return err
		}
		for _, a := range allocs {
			if a.TaskGroup == "worker" && a.ClientStatus == nomadapi.AllocClientStatusRunning {
				return nil
			}
		}
		return fmt.Errorf("no allocation of group worker runs among %d", len(allocs))
	})
	// Caravan's next steps leave the user's version alone.
	handed := nomadJob(t, nc, "u")
	_, _, err = c.Jobs().Register(cpuJob("other"), nil)
	must.NoError(t, err)
	waitEvent(t, c, "other", api.EventTasksRunning, 1, time.Minute)
	now := nomadJob(t, nc, "u")
	must.Eq(t, *handed.Version, *now.Version, must.Sprint("Caravan wrote no version after the hand-back"))
	must.SliceEmpty(t, caravanGroups(now))
	must.Eq(t, "", now.Meta["caravan_job_id"])
}
