//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// TestNomadCluster_FakeGPUs starts a Nomad server and three clients, two of
// them with two fake GPUs each, and checks that Nomad's own device
// scheduling works on them: the GPUs are fingerprinted, a task asking for
// one is placed on a GPU node and sees the instance it was given, and a task
// asking for three, more than any node has, is not placed.
func TestNomadCluster_FakeGPUs(t *testing.T) {
	t.Parallel()
	c := agent.StartNomadCluster(t, agent.ClusterOptions{})

	stubs, _, err := c.Client.Nodes().List(nil)
	must.NoError(t, err)
	must.SliceLen(t, 3, stubs)
	for _, s := range stubs {
		must.Eq(t, nomadapi.NodeStatusReady, s.Status, must.Sprintf("node %s", s.Name))
	}

	gpuNodes := map[string]agent.ClusterNode{}
	for _, n := range c.Nodes {
		info, _, err := c.Client.Nodes().Info(n.ID, nil)
		must.NoError(t, err)
		devices := info.NodeResources.Devices
		if n.GPUs == 0 {
			must.SliceEmpty(t, devices, must.Sprintf("node %s should have no devices", n.Name))
			continue
		}
		gpuNodes[n.ID] = n
		must.SliceLen(t, 1, devices, must.Sprintf("node %s", n.Name))
		g := devices[0]
		must.Eq(t, agent.FakeGPUDevice, g.ID())
		must.Eq(t, "nvidia", g.Vendor)
		must.Eq(t, "gpu", g.Type)
		var ids []string
		for _, d := range g.Instances {
			must.True(t, d.Healthy, must.Sprintf("instance %s", d.ID))
			ids = append(ids, d.ID)
		}
		slices.Sort(ids)
		must.Eq(t, n.GPUIDs, ids)
		mem := g.Attributes["memory"]
		must.NotNil(t, mem)
		must.NotNil(t, mem.IntVal)
		must.Eq(t, int64(agent.FakeGPUMemoryMiB), *mem.IntVal)
		must.Eq(t, "MiB", mem.Unit)
	}
	must.MapLen(t, 2, gpuNodes)

	// Both jobs at once: one fits, the other asks for more GPUs than a node has.
	fits := gpuJob("gpu-one", 1)
	_, _, err = c.Client.Jobs().Register(fits, nil)
	must.NoError(t, err)
	tooMany := gpuJob("gpu-three", 3)
	resp, _, err := c.Client.Jobs().Register(tooMany, nil)
	must.NoError(t, err)

	alloc := completedAlloc(t, c.Client, "gpu-one")
	node, ok := gpuNodes[alloc.NodeID]
	must.True(t, ok, must.Sprintf("placed on %s, not a GPU node", alloc.NodeName))
	devices := alloc.AllocatedResources.Tasks["visible"].Devices
	must.SliceLen(t, 1, devices)
	must.Eq(t, "nvidia", devices[0].Vendor)
	must.Eq(t, agent.FakeGPUModel, devices[0].Name)
	must.SliceLen(t, 1, devices[0].DeviceIDs)
	gpu := devices[0].DeviceIDs[0]
	must.SliceContains(t, node.GPUIDs, gpu)

	out, err := catFile(c.Client, alloc, "alloc/logs/visible.stdout.0")
	must.NoError(t, err)
	must.Eq(t, "visible="+gpu, strings.TrimSpace(out))

	var eval *nomadapi.Evaluation
	agent.WaitFor(t, 30*time.Second, "the three-GPU job's evaluation", func() error {
		eval, _, err = c.Client.Evaluations().Info(resp.EvalID, nil)
		if err != nil {
			return err
		}
		if eval.Status != nomadapi.EvalStatusComplete {
			return fmt.Errorf("evaluation is %s", eval.Status)
		}
		return nil
	})
	must.MapContainsKey(t, eval.FailedTGAllocs, "g", must.Sprint("the three-GPU group should fail to place"))
	metric := eval.FailedTGAllocs["g"]
	must.Eq(t, 3, metric.NodesEvaluated)
	must.Eq(t, map[string]int{"missing devices": 3}, metric.ConstraintFiltered)
	must.NotEq(t, "", eval.BlockedEval, must.Sprint("the failed placement should leave a blocked evaluation"))
	allocs, _, err := c.Client.Jobs().Allocations("gpu-three", true, nil)
	must.NoError(t, err)
	must.SliceEmpty(t, allocs)
}

// gpuJob is a batch job whose one task asks for gpus of "nvidia/gpu" and
// prints the NVIDIA_VISIBLE_DEVICES it was given.
func gpuJob(id string, gpus uint64) *nomadapi.Job {
	job := nomadapi.NewBatchJob(id, id, "global", 50)
	job.Datacenters = []string{"*"}
	task := shellTask("visible", `echo "visible=$NVIDIA_VISIBLE_DEVICES"`)
	task.Resources.Devices = []*nomadapi.RequestedDevice{{Name: "nvidia/gpu", Count: new(gpus)}}
	job.AddTaskGroup(nomadapi.NewTaskGroup("g", 1).AddTask(task))
	return job
}

// TestNomadCluster_Restart checks the harness's restarts: a restarted server
// keeps its state and its clients reconnect and run new work, and a
// restarted cluster's clients take their running tasks back.
func TestNomadCluster_Restart(t *testing.T) {
	c := agent.StartNomadCluster(t, agent.ClusterOptions{Clients: 2, GPUClients: []int{}})
	for _, n := range c.Nodes {
		must.Eq(t, 0, n.GPUs)
	}

	sleeper := nomadapi.NewServiceJob("sleeper", "sleeper", "global", 50)
	sleeper.Datacenters = []string{"*"}
	sleeper.AddTaskGroup(nomadapi.NewTaskGroup("g", 2).AddTask(shellTask("sleep", "exec sleep 600")))
	_, _, err := c.Client.Jobs().Register(sleeper, nil)
	must.NoError(t, err)
	running := waitRunning(t, c, "sleeper", 2)

	c.StopServer()
	_, err = c.Client.Status().Leader()
	must.Error(t, err, must.Sprint("the server should be unreachable while stopped"))
	c.StartServer()
	must.Eq(t, running, waitRunning(t, c, "sleeper", 2))
	hello := nomadapi.NewBatchJob("hello", "hello", "global", 50)
	hello.Datacenters = []string{"*"}
	hello.AddTaskGroup(nomadapi.NewTaskGroup("g", 1).AddTask(shellTask("hello", "echo hello")))
	_, _, err = c.Client.Jobs().Register(hello, nil)
	must.NoError(t, err)
	agent.WaitFor(t, time.Minute, "the job submitted after the restart to complete", func() error {
		summary, _, err := c.Client.Jobs().Summary("hello", nil)
		if err != nil {
			return err
		}
		if s := summary.Summary["g"]; s.Complete != 1 {
			return fmt.Errorf("summary %+v", s)
		}
		return nil
	})

	c.Stop()
	c.Start()
	must.Eq(t, running, waitRunning(t, c, "sleeper", 2))
	for _, id := range running {
		alloc, _, err := c.Client.Allocations().Info(id, nil)
		must.NoError(t, err)
		must.Eq(t, 0, alloc.TaskStates["sleep"].Restarts, must.Sprintf("allocation %s", id))
	}
}

// shellTask is a small raw_exec task running script with /bin/sh.
func shellTask(name, script string) *nomadapi.Task {
	return nomadapi.NewTask(name, "raw_exec").
		SetConfig("command", "/bin/sh").
		SetConfig("args", []string{"-c", script}).
		Require(&nomadapi.Resources{CPU: new(50), MemoryMB: new(32)})
}

// waitRunning waits until job has n running allocations and no others, and
// returns their IDs, sorted.
func waitRunning(t *testing.T, c *agent.NomadCluster, job string, n int) []string {
	t.Helper()
	var ids []string
	agent.WaitFor(t, time.Minute, fmt.Sprintf("%d running allocations of %s", n, job), func() error {
		allocs, _, err := c.Client.Jobs().Allocations(job, true, nil)
		if err != nil {
			return err
		}
		ids = ids[:0]
		for _, a := range allocs {
			if a.ClientStatus != nomadapi.AllocClientStatusRunning {
				return fmt.Errorf("allocation %s is %s", a.ID, a.ClientStatus)
			}
			ids = append(ids, a.ID)
		}
		if len(ids) != n {
			return fmt.Errorf("%d allocations", len(ids))
		}
		return nil
	})
	slices.Sort(ids)
	return ids
}

// The two models of the mixed-fleet tests: client 0 has T4s, client 1
// A100s.
var (
	t4   = agent.GPUModel{Name: "Tesla T4", MemoryMiB: 16384, Speed: 1}
	a100 = agent.GPUModel{Name: "A100-SXM4-40GB", MemoryMiB: 40960, Speed: 1}
)

// TestNomadCluster_GPUModels starts two clients whose fake GPUs are of
// different models, two T4s (16 GiB) and two A100s (40 GiB), and checks that
// Nomad fingerprints each client's own model and memory, and that a task
// asking for one model by its device name is placed on the client of that
// model and given one of its GPUs.
func TestNomadCluster_GPUModels(t *testing.T) {
	t.Parallel()
	c := agent.StartNomadCluster(t, agent.ClusterOptions{
		Clients: 2, GPUClients: []int{2, 2}, GPUModels: []agent.GPUModel{t4, a100},
	})

	for i, want := range []agent.GPUModel{t4, a100} {
		n := c.Nodes[i]
		must.Eq(t, want, n.GPUModel)
		info, _, err := c.Client.Nodes().Info(n.ID, nil)
		must.NoError(t, err)
		devices := info.NodeResources.Devices
		must.SliceLen(t, 1, devices, must.Sprintf("node %s", n.Name))
		g := devices[0]
		must.Eq(t, want.Device(), g.ID())
		must.Eq(t, want.Name, *g.Attributes["model"].StringVal)
		must.Eq(t, want.MemoryMiB, *g.Attributes["memory"].IntVal)
		must.Eq(t, "MiB", g.Attributes["memory"].Unit)
	}

	job := gpuJob("a100-one", 1)
	job.TaskGroups[0].Tasks[0].Resources.Devices[0].Name = a100.Device()
	_, _, err := c.Client.Jobs().Register(job, nil)
	must.NoError(t, err)
	alloc := completedAlloc(t, c.Client, "a100-one")
	must.Eq(t, c.Nodes[1].ID, alloc.NodeID, must.Sprintf("placed on %s", alloc.NodeName))
	devices := alloc.AllocatedResources.Tasks["visible"].Devices
	must.SliceLen(t, 1, devices)
	must.Eq(t, a100.Name, devices[0].Name)
	must.SliceLen(t, 1, devices[0].DeviceIDs)
	must.SliceContains(t, c.Nodes[1].GPUIDs, devices[0].DeviceIDs[0])
}
