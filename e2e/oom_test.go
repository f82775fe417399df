//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// oomJob is a sync parameter-server job of examples/trainer with one
// worker and one parameter server, whose worker's memory may range from
// 128 to 512 MB and whose worker grows a 160 MB ballast from step 30 on.
func oomJob(id, trainer string) *api.JobRegisterRequest {
	common := []string{"-features", "100", "-examples", "20000"}
	worker := append([]string{"-sample-cost", "2ms", "-checkpoint-every", "10",
		"-ballast-mb", "160", "-ballast-after-step", "30", "-ballast-rate", "10"}, common...)
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
      max_epochs = 6
    }
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
    checkpoint {
      timeout = "30s"
    }
  }
  worker {
    driver = "raw_exec"
    config {
      command = %[2]q
      args    = %[3]s
    }
    resources {
      cpu = 100
      memory {
        min = 128
        max = 512
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
`, id, trainer, hclList(worker), hclList(common))
	return &api.JobRegisterRequest{JobHCL: hcl, Filename: id + ".hcl"}
}

// memoryLimit reads the memory limit the kernel enforces on an
// allocation's task: its cgroup's memory.limit_in_bytes (cgroups v1) or
// memory.max (v2), in bytes.
func memoryLimit(allocID, task string) (int64, error) {
	for _, p := range []string{
		"/sys/fs/cgroup/memory/nomad/" + allocID + "." + task + "/memory.limit_in_bytes",
		"/sys/fs/cgroup/nomad.slice/share.slice/" + allocID + "." + task + ".scope/memory.max",
	} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	return 0, fmt.Errorf("no memory cgroup of %s.%s: Nomad does not enforce memory limits here", allocID, task)
}

// TestCaravanNomad_OOMDoublesMemory runs a trainer job under dlrover whose
// worker outgrows its 128 MB: Nomad's raw_exec driver enforces the limit
// through the task's cgroup and the kernel kills the worker (signal 9,
// which raw_exec does not report as an OOM kill). Caravan infers the OOM
// kill from the task's events and measured memory, records it, and
// restarts the job from its last checkpoint with the worker's memory
// doubled to 256 MB, where the ballast fits; the job resumes at the
// checkpoint's step and completes. The usage read from Nomad shows in
// `caravan job status -verbose` and in the API.
func TestCaravanNomad_OOMDoublesMemory(t *testing.T) {
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{})
	dumpOnFailure(t, nc)
	trainer := buildTrainer(t)
	bin := agent.BuildCaravan(t)
	cl := startCaravans(t, bin, 1, nomadAgentBodyWith(nc, t.TempDir(), "dlrover", `usage_interval = "500ms"`, ""))
	leader := cl.waitLeader(t, "")
	c := cl.clients[leader]
	waitNodes(t, c, 3, 4)

	_, _, err := c.Jobs().Register(oomJob("oom", trainer), nil)
	must.NoError(t, err)
	waitEvent(t, c, "oom", api.EventTasksRunning, 1, 2*time.Minute)

	// The kernel enforces the worker's 128 MB.
	worker := func() *nomadapi.AllocationListStub {
		allocs, _, err := nc.Client.Jobs().Allocations("caravan-oom", false, nil)
		must.NoError(t, err)
		var last *nomadapi.AllocationListStub
		for _, a := range allocs {
			if strings.HasPrefix(a.TaskGroup, "worker-") && (last == nil || a.CreateIndex > last.CreateIndex) {
				last = a
			}
		}
		must.NotNil(t, last, must.Sprint("no worker allocation"))
		return last
	}
	first := worker()
	limit, err := memoryLimit(first.ID, "worker")
	if err != nil {
		t.Fatalf("the OOM test needs enforced memory limits: %v", err)
	}
	must.Eq(t, int64(128<<20), limit, must.Sprint("the worker's cgroup limit is its 128 MB"))

	// The last checkpoint committed before the kill.
	var ckpt int64
	agent.WaitFor(t, 3*time.Minute, "the worker killed by signal 9 in Nomad's view", func() error {
		if sum, _, err := c.Jobs().Summary("oom", nil); err == nil && sum.LastSample != nil {
			ckpt = max(ckpt, sum.LastSample.CheckpointStep)
		}
		a, _, err := nc.Client.Allocations().Info(first.ID, nil)
		if err != nil {
			return err
		}
		ts := a.TaskStates["worker"]
		if ts == nil {
			return fmt.Errorf("no worker task state yet")
		}
		for _, ev := range ts.Events {
			if ev.Type == nomadapi.TaskTerminated && ev.Details["signal"] == "9" {
				t.Logf("Nomad's Terminated event: %v", ev.Details)
				return nil
			}
		}
		return fmt.Errorf("the worker was not killed yet")
	})
	oom := waitEvent(t, c, "oom", api.EventTaskOOMKilled, 1, time.Minute)
	t.Logf("Caravan's event: %s", oom.Message)
	must.Eq(t, "worker", oom.Details["Role"])
	must.Eq(t, "0", oom.Details["Rank"])
	must.Eq(t, first.ID, oom.Details["AllocID"])
	must.Eq(t, "128", oom.Details["MemoryLimitMB"])
	must.Eq(t, "true", oom.Details["Inferred"])
	// Nomad's stats were read during the killed run: the inference needs
	// at least 80% of the limit, and RSS cannot pass the cgroup's limit.
	peak, err := strconv.Atoi(oom.Details["MaxMemoryMB"])
	must.NoError(t, err, must.Sprint("no memory measured before the kill"))
	must.Between(t, 102, peak, 128)

	// The next generation runs the worker at 256 MB.
	waitEvent(t, c, "oom", api.EventTasksRunning, 2, 2*time.Minute)
	nj, _, err := nc.Client.Jobs().Info("caravan-oom", nil)
	must.NoError(t, err)
	for _, tg := range nj.TaskGroups {
		if strings.HasPrefix(*tg.Name, "worker-") && *tg.Count > 0 {
			must.Eq(t, 256, *tg.Tasks[0].Resources.MemoryMB, must.Sprint("the worker's memory is doubled"))
		}
	}
	sum, _, err := c.Jobs().Summary("oom", nil)
	must.NoError(t, err)
	for _, n := range sum.Placement.Placement.Nodes {
		if n.Workers > 0 {
			must.Eq(t, 256, n.WorkerSize.MemoryMB, must.Sprint("the desired placement doubles the worker's memory"))
		}
	}
	second := worker()
	must.NotEq(t, first.ID, second.ID)
	limit, err = memoryLimit(second.ID, "worker")
	must.NoError(t, err)
	must.Eq(t, int64(256<<20), limit)

	// No progress lost: the new generation resumes from the last
	// checkpoint before the kill.
	var resumed *api.Sample
	agent.WaitFor(t, time.Minute, "a sample of the new generation", func() error {
		smps, _, err := c.Jobs().Samples("oom", nil)
		if err != nil {
			return err
		}
		for i := range smps.Samples {
			s := smps.Samples[i]
			if s.Time > oom.Time && s.CheckpointStep >= ckpt && s.Step >= ckpt {
				resumed = &s
				return nil
			}
		}
		return fmt.Errorf("no sample after the kill yet")
	})
	t.Logf("checkpoint at step %d before the kill; first step after the restart %d (checkpoint_step %d)", ckpt, resumed.Step, resumed.CheckpointStep)
	must.Positive(t, ckpt)
	must.Between(t, ckpt, resumed.Step, ckpt+13)

	// Usage read from Nomad, in the API and the CLI, once the restarted
	// worker holds its ballast. Usage is the current generation's: the
	// restarted tasks count no OOM kill and no restart (the kill stays in
	// the TaskOOMKilled event).
	var wu, pu *api.TaskUsage
	agent.WaitFor(t, time.Minute, "the restarted worker's usage with its ballast", func() error {
		sum, _, err := c.Jobs().Summary("oom", nil)
		if err != nil {
			return err
		}
		var got []string
		wu, pu = nil, nil
		for _, u := range usageTasks(sum) {
			got = append(got, fmt.Sprintf("%+v", *u))
			switch {
			case u.Role == api.RoleWorker && u.AllocID == second.ID:
				wu = u
			case u.Role == api.RolePS:
				pu = u
			}
		}
		if wu == nil || wu.MaxMemoryMB < 160 {
			return fmt.Errorf("no usage of the 256 MB worker holding its 160 MB ballast yet: %v", got)
		}
		return nil
	})
	t.Logf("worker usage: %+v", *wu)
	t.Logf("ps usage: %+v", *pu)
	// The measured fields are checked by range, the others exactly. The
	// worker's own step time comes from its samples (matched by
	// allocation); the parameter server reports none.
	unmeasured := func(u api.TaskUsage) api.TaskUsage {
		u.CPUMHz, u.MemoryMB, u.MaxMemoryMB, u.TaskStepTimeS = 0, 0, 0, 0
		return u
	}
	must.Positive(t, wu.TaskStepTimeS)
	must.Eq(t, 0, pu.TaskStepTimeS)
	must.Eq(t, api.TaskUsage{Role: api.RoleWorker, NodeID: second.NodeID, AllocID: second.ID,
		CPULimitMHz: 100, MemoryLimitMB: 256, Source: api.UsageSourceNomad}, unmeasured(*wu))
	must.Between(t, 1, wu.MemoryMB, 256)
	must.Between(t, 160, wu.MaxMemoryMB, 256)
	must.GreaterEq(t, wu.MemoryMB, wu.MaxMemoryMB)
	must.NotNil(t, pu)
	must.Eq(t, api.TaskUsage{Role: api.RolePS, NodeID: pu.NodeID, AllocID: pu.AllocID,
		CPULimitMHz: 100, MemoryLimitMB: 128, Source: api.UsageSourceNomad}, unmeasured(*pu))
	must.Between(t, 1, pu.MemoryMB, 128)

	out, err := exec.Command(bin, "job", "status", "-verbose", "-address", "http://"+leader, "oom").CombinedOutput()
	must.NoError(t, err, must.Sprint(string(out)))
	t.Logf("caravan job status -verbose:\n%s", out)
	row := regexp.MustCompile(`(?m)^worker\s+0\s+(\S+)\s+\d+/100 \(\d+%\)\s+(\d+)/256 \(\d+%\)\s+(\d+)\s+[\d.]+[mµ]?s\s+0\s+0\s+nomad\s`).FindStringSubmatch(string(out))
	must.SliceLen(t, 4, row, must.Sprint("no usage row of the 256 MB worker with 0 OOM kills and 0 restarts"))
	must.Eq(t, second.NodeID, row[1])
	mem, _ := strconv.Atoi(row[2])
	most, _ := strconv.Atoi(row[3])
	must.Between(t, 1, mem, 256)
	must.Between(t, 160, most, 256)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^ps\s+0\s+\S+\s+\d+/100 \(\d+%\)\s+[1-9]\d*/128 \(\d+%\)\s+\d+\s+-\s+0\s+0\s+nomad\s`), string(out))
	must.StrContains(t, string(out), "TaskOOMKilled")

	agent.WaitFor(t, 5*time.Minute, "job oom complete", jobIs(c, "oom", api.JobStatusComplete))
	restarts := events(t, c, "oom", api.EventJobRestarted)
	must.SliceLen(t, 1, restarts)
	t.Logf("restart: %s", restarts[0].Message)
	must.SliceLen(t, 1, events(t, c, "oom", api.EventTaskOOMKilled), must.Sprint("the 256 MB worker is not killed"))
}

// usageTasks returns a summary's task usage, nil before any.
func usageTasks(sum *api.JobSummary) []*api.TaskUsage {
	if sum.Usage == nil {
		return nil
	}
	return sum.Usage.Tasks
}
