//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/shoenig/test/must"
)

// The tests of this file check that Caravan says why a job does not run
// in Nomad's words (issue 28): a job no node could ever run is refused by
// `caravan job run` with exit status 2, and a job Nomad cannot place for
// a reason Caravan does not model shows Nomad's placement failure in
// `caravan job status` and in an event, kept across a leader change.

// caravanJobRun runs `caravan job run` on the jobspec src against the
// agent at addr and returns its exit status and output.
func caravanJobRun(t *testing.T, bin, addr, name, src string) (int, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".hcl")
	must.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	return caravanCLI(t, bin, addr, "job", "run", "-timeout", "30s", path)
}

// caravanCLI runs `caravan <args>` against the agent at addr and returns
// its exit status and combined output.
func caravanCLI(t *testing.T, bin, addr string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args = append(args[:2:2], append([]string{"-address", "http://" + addr}, args[2:]...)...)
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), string(out)
	}
	must.NoError(t, err)
	return 0, string(out)
}

// TestCaravanNomad_NeverFits submits, to a Nomad cluster whose GPU clients
// have 2 fake GPUs each, a job asking 8 GPUs a worker and a job whose task
// driver no client has: `caravan job run` refuses both with exit status 2
// and Nomad's words for why, and neither is registered.
func TestCaravanNomad_NeverFits(t *testing.T) {
	t.Parallel()
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{})
	bin := agent.BuildCaravan(t)
	cl := startCaravans(t, bin, 1, nomadAgentBody(nc, t.TempDir(), "drf"))
	leader := cl.waitLeader(t, "")
	c := cl.clients[leader]
	waitNodes(t, c, 3, 4)

	code, out := caravanJobRun(t, bin, leader, "gpus", shellGPUJob("gpus", 1, 8))
	t.Logf("8 GPUs a worker: exit %d\n%s", code, out)
	must.Eq(t, 2, code)
	must.StrContains(t, out, `job "gpus": job can never be placed: no node can run a worker even with nothing else on it (3 nodes evaluated; constraint "missing devices" filtered 3 nodes: a task asks for 8 nvidia/gpu)`)

	noDriver := strings.Replace(shellGPUJob("nodriver", 1, 1), `driver = "raw_exec"`, `driver = "caravan-made-up"`, 1)
	code, out = caravanJobRun(t, bin, leader, "nodriver", noDriver)
	t.Logf("a made-up driver: exit %d\n%s", code, out)
	must.Eq(t, 2, code)
	must.StrContains(t, out, `job "nodriver": job can never be placed: no node can run a worker even with nothing else on it (3 nodes evaluated; constraint "missing drivers" filtered 3 nodes: no task driver "caravan-made-up")`)

	for _, id := range []string{"gpus", "nodriver"} {
		_, _, err := c.Jobs().Info(id, nil)
		must.True(t, api.IsNotFound(err), must.Sprintf("job %s must not be registered: %v", id, err))
	}
}

// hostVolumeFile is a Nomad job file with a caravan policy whose worker
// group mounts a host volume no client has: Caravan, which does not model
// host volumes, places it, and Nomad cannot.
func hostVolumeFile(id string) string {
	return fmt.Sprintf(`
job %q {
  type = "batch"

  group "worker" {
    scaling {
      min = 1
      max = 1

      policy {
        caravan {
          role = "worker"

          training {
            architecture      = "allreduce"
            mode              = "sync"
            global_batch_size = 60
            steps_per_epoch   = 10
          }
        }
      }
    }

    volume "data" {
      type   = "host"
      source = "caravan-missing-volume"
    }

    task "train" {
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
}
`, id)
}

// TestCaravanNomad_PlacementFailureKept runs, with `nomad job run`, a job
// whose group needs a host volume no Nomad client has. Caravan places it;
// Nomad cannot, and its placement failure (the evaluation's metrics, as
// `nomad job status` prints them) shows in `caravan job status` and in a
// PlacementFailed event, and both are still there, with no second event,
// after the Caravan leader is killed and another leads.
func TestCaravanNomad_PlacementFailureKept(t *testing.T) {
	t.Parallel()
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{})
	bin := agent.BuildCaravan(t)
	cl := startCaravans(t, bin, 3, nomadAgentBody(nc, t.TempDir(), "drf"))
	leader := cl.waitLeader(t, "")
	c := cl.clients[leader]
	waitNodes(t, c, 3, 4)

	nomadCLI{addr: nc.Address}.jobRun(t, "vol", hostVolumeFile("vol"))
	const want = `Constraint "missing compatible host volumes"`
	var failure *api.Failure
	agent.WaitFor(t, 2*time.Minute, "Nomad's placement failure in the observed state", func() error {
		sum, _, err := c.Jobs().Summary("vol", nil)
		if err != nil {
			return err
		}
		if sum.Observed == nil || len(sum.Observed.Failures) == 0 {
			return fmt.Errorf("no failure observed yet: %+v", sum.Observed)
		}
		failure = sum.Observed.Failures[0]
		return nil
	})
	t.Logf("failure: %s %v", failure.Summary, failure.Details)
	must.Eq(t, api.FailurePlacement, failure.Kind)
	must.StrHasPrefix(t, "worker-", failure.Group)
	must.StrContains(t, strings.Join(failure.Details, "\n"), want)

	status := func(addr string) string {
		code, out := caravanCLI(t, bin, addr, "job", "status", "vol")
		must.Eq(t, 0, code, must.Sprint(out))
		return out
	}
	out := status(leader)
	t.Logf("job status:\n%s", out)
	must.StrContains(t, out, "Cluster Failures\n"+failure.Summary+"\n")
	must.StrContains(t, out, "  * "+want)
	evs := events(t, c, "vol", api.EventPlacementFailed)
	must.SliceLen(t, 1, evs, must.Sprintf("events: %+v", evs))
	must.StrContains(t, evs[0].Message, want)

	cl.procs[leader].Kill()
	leader = cl.waitLeader(t, leader)
	c = cl.clients[leader]
	// The new leader's driver reads the evaluations again after
	// FailureDelay (and logs what it found); meanwhile, and after, the
	// committed failure stays, and it is no new event.
	agent.WaitFor(t, time.Minute, "the new leader's driver reads Nomad's placement failures", func() error {
		log, err := cl.procs[leader].Log()
		if err != nil {
			return err
		}
		if !strings.Contains(log, "read Nomad's placement failures of a job: job_id=vol failures=1") {
			return fmt.Errorf("not in the new leader's log yet")
		}
		return nil
	})
	agent.WaitFor(t, time.Minute, "the new leader's observed state", func() error {
		sum, _, err := c.Jobs().Summary("vol", nil)
		if err != nil {
			return err
		}
		if sum.Observed == nil || len(sum.Observed.Failures) == 0 {
			return fmt.Errorf("no failure: %+v", sum.Observed)
		}
		if got := sum.Observed.Failures[0]; got.Summary != failure.Summary {
			return fmt.Errorf("failure %q, want %q", got.Summary, failure.Summary)
		}
		return nil
	})
	out = status(leader)
	must.StrContains(t, out, "  * "+want)
	evs = events(t, c, "vol", api.EventPlacementFailed)
	must.SliceLen(t, 1, evs, must.Sprint("the same failure is one event, whichever server leads"))
}
