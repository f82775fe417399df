//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// nomadAgentBody configures agents to run jobs on a Nomad cluster with
// algorithm. Rounds run at arrivals and completions only, so that tests
// see the rescales those cause and no other.
func nomadAgentBody(nc *agent.NomadCluster, checkpoints, algorithm string) string {
	return nomadAgentBodyWith(nc, checkpoints, algorithm, "", "")
}

// nomadAgentBodyWith adds lines to the nomad and scheduler blocks.
func nomadAgentBodyWith(nc *agent.NomadCluster, checkpoints, algorithm, nomadExtra, schedulerExtra string) string {
	return nomadAgentBodyEvery(nc, checkpoints, algorithm, 10*time.Minute, nomadExtra, schedulerExtra)
}

// nomadAgentBodyEvery is nomadAgentBodyWith with periodic rounds every
// interval, besides those at arrivals and completions.
func nomadAgentBodyEvery(nc *agent.NomadCluster, checkpoints, algorithm string, interval time.Duration, nomadExtra, schedulerExtra string) string {
	return fmt.Sprintf(`
driver = "nomad"
nomad {
  address        = %q
  checkpoint_dir = %q
  %s
}
scheduler {
  algorithm = %q
  interval  = %q
  %s
}
`, nc.Address, checkpoints, nomadExtra, algorithm, interval, schedulerExtra)
}

// waitNodes waits until Caravan sees the cluster's nodes and GPUs.
func waitNodes(t *testing.T, c *api.Client, nodes, gpus int) {
	t.Helper()
	agent.WaitFor(t, time.Minute, fmt.Sprintf("Caravan sees %d nodes with %d GPUs", nodes, gpus), func() error {
		list, _, err := c.Nodes(nil)
		if err != nil {
			return err
		}
		n := 0
		for _, node := range list {
			for _, d := range node.Devices {
				n += d.HealthyCount()
			}
		}
		if len(list) != nodes || n != gpus {
			return fmt.Errorf("%d nodes, %d GPUs", len(list), n)
		}
		return nil
	})
}

// shellGPUJob is a job of workers that each ask for gpus GPUs and print
// which devices they see, and one parameter server without GPUs.
func shellGPUJob(id string, workers, gpus int) string {
	return fmt.Sprintf(`
job %q {
  training {
    global_batch_size = 60
    steps_per_epoch   = 10
  }
  elastic {
    workers {
      min = %d
      max = %d
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
      args    = ["-c", "echo visible=$NVIDIA_VISIBLE_DEVICES; while true; do sleep 1; done"]
    }
    resources {
      cpu    = 50
      memory = 32
      device "nvidia/gpu" {
        count = %d
      }
    }
  }
  parameter_server {
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
`, id, workers, workers, gpus)
}

// TestCaravanNomad_GPUJobs submits a GPU job through Caravan to a real
// Nomad cluster of three clients, two with fake GPUs: its workers run on
// the GPU clients only and see the devices Nomad reserved for them. A job
// asking for more GPUs than exist waits, with the reason in its events,
// and never reaches Nomad.
func TestCaravanNomad_GPUJobs(t *testing.T) {
	t.Parallel()
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{})
	cl := startCaravans(t, agent.BuildCaravan(t), 1, nomadAgentBody(nc, t.TempDir(), "drf"))
	c := cl.clients[cl.waitLeader(t, "")]
	waitNodes(t, c, 3, 4)

	gpuNodes := map[string][]string{} // node ID → its GPU instance IDs
	for _, n := range nc.Nodes {
		if n.GPUs > 0 {
			gpuNodes[n.ID] = n.GPUIDs
		}
	}
	start := time.Now()
	_, _, err := c.Jobs().Register(&api.JobRegisterRequest{JobHCL: shellGPUJob("gpu", 3, 1), Filename: "gpu.hcl"}, nil)
	must.NoError(t, err)

	// Every worker runs on a GPU node and sees one of that node's GPUs.
	seen := map[string]bool{}
	agent.WaitFor(t, 2*time.Minute, "3 workers running with their GPUs", func() error {
		allocs, _, err := nc.Client.Jobs().Allocations("caravan-gpu", false, nil)
		if err != nil {
			return err
		}
		running := 0
		for _, a := range allocs {
			if a.ClientStatus != nomadapi.AllocClientStatusRunning || !strings.HasPrefix(a.TaskGroup, "worker-") {
				continue
			}
			ids, ok := gpuNodes[a.NodeID]
			if !ok {
				return fmt.Errorf("worker %s runs on node %s, which has no GPU", a.Name, a.NodeID)
			}
			alloc, _, err := nc.Client.Allocations().Info(a.ID, nil)
			if err != nil {
				return err
			}
			out, err := catFile(nc.Client, alloc, "alloc/logs/worker.stdout.0")
			if err != nil {
				return err
			}
			visible := strings.TrimPrefix(strings.TrimSpace(out), "visible=")
			if !strings.Contains(strings.Join(ids, ","), visible) || visible == "" {
				return fmt.Errorf("worker %s on node %s sees %q, not one of %v", a.Name, a.NodeID, visible, ids)
			}
			seen[visible] = true
			running++
		}
		if running != 3 {
			return fmt.Errorf("%d of 3 workers run", running)
		}
		return nil
	})
	t.Logf("job run → all tasks running on Nomad: %v", time.Since(start).Round(time.Millisecond))
	must.MapLen(t, 3, seen, must.Sprint("each worker has its own GPU"))
	agent.WaitFor(t, 30*time.Second, "TasksRunning event", func() error {
		if evs := events(t, c, "gpu", api.EventTasksRunning); len(evs) == 0 {
			return fmt.Errorf("no TasksRunning event yet")
		}
		return nil
	})

	// Five GPU workers are more than the cluster has: the job waits, with why.
	_, _, err = c.Jobs().Register(&api.JobRegisterRequest{JobHCL: shellGPUJob("big", 5, 1), Filename: "big.hcl"}, nil)
	must.NoError(t, err)
	var reason string
	agent.WaitFor(t, 30*time.Second, "a JobWaiting event", func() error {
		evs := events(t, c, "big", api.EventJobWaiting)
		if len(evs) == 0 {
			return fmt.Errorf("no JobWaiting event yet")
		}
		reason = evs[0].Message
		return nil
	})
	t.Logf("waiting job's reason: %s", reason)
	must.StrContains(t, reason, "gpu exhausted on 2 nodes")
	must.StrContains(t, reason, "3 nodes evaluated")
	must.NoError(t, jobIs(c, "big", api.JobStatusPending)())
	_, _, err = nc.Client.Jobs().Info("caravan-big", nil)
	must.ErrorContains(t, err, "404", must.Sprint("a waiting job must not reach Nomad"))
}

// dumpOnFailure logs, when the test fails, every Caravan job's Nomad
// allocations and the last lines their tasks wrote to stderr.
func dumpOnFailure(t *testing.T, nc *agent.NomadCluster) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		jobs, _, err := nc.Client.Jobs().PrefixList("caravan-")
		if err != nil {
			t.Logf("list Nomad jobs: %v", err)
			return
		}
		for _, j := range jobs {
			t.Logf("%s: status %s, stop %t, modify index %d", j.ID, j.Status, j.Stop, j.JobModifyIndex)
			if evals, _, err := nc.Client.Jobs().Evaluations(j.ID, nil); err == nil {
				for _, e := range evals {
					t.Logf("%s: eval %s triggered by %s at job modify index %d: %s %s", j.ID, e.ID[:8], e.TriggeredBy, e.JobModifyIndex, e.Status, e.StatusDescription)
				}
			}
			allocs, _, err := nc.Client.Jobs().Allocations(j.ID, true, nil)
			if err != nil {
				t.Logf("allocations of %s: %v", j.ID, err)
				continue
			}
			for _, a := range allocs {
				t.Logf("%s: alloc %s (version %d, eval %s, modify index %d) %s/%s %s", j.ID, a.Name, a.JobVersion, a.EvalID[:8], a.ModifyIndex, a.DesiredStatus, a.ClientStatus, a.DesiredDescription)
				alloc, _, err := nc.Client.Allocations().Info(a.ID, nil)
				if err != nil {
					continue
				}
				task := alloc.Job.LookupTaskGroup(a.TaskGroup).Tasks[0].Name
				if out, err := catFile(nc.Client, alloc, "alloc/logs/"+task+".stderr.0"); err == nil {
					t.Logf("last lines of its stderr:\n%s", lastLines(out, 15))
				}
			}
		}
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
