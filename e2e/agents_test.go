//go:build e2e

package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// TestTools_Versions checks that `make tools` produced the pinned binaries.
func TestTools_Versions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ bin, want string }{
		{"nomad", "Nomad v1.11.0"},
		{"consul", "Consul v1.21.0"},
	} {
		out, err := exec.Command(tc.bin, "version").CombinedOutput()
		must.NoError(t, err, must.Sprint(string(out)))
		must.StrContains(t, string(out), tc.want)
	}
}

// TestAgents_RunJob starts real Consul and Nomad agents on loopback, checks
// that Nomad registered itself in Consul, and runs a raw_exec batch job to
// completion: the ground every later e2e test stands on.
func TestAgents_RunJob(t *testing.T) {
	t.Parallel()
	consul := agent.StartConsul(t)
	nomad := agent.StartNomad(t, agent.NomadOptions{Consul: consul})

	node, _, err := nomad.Client.Nodes().Info(nomad.NodeID, nil)
	must.NoError(t, err)
	must.True(t, node.Drivers["raw_exec"] != nil && node.Drivers["raw_exec"].Healthy,
		must.Sprint("raw_exec driver is not healthy on the dev client"))

	agent.WaitFor(t, 30*time.Second, "nomad services in the consul catalog", func() error {
		services, _, err := consul.Client.Catalog().Services(nil)
		if err != nil {
			return err
		}
		if _, ok := services["nomad-client"]; !ok {
			return fmt.Errorf("services so far: %v", services)
		}
		return nil
	})

	job := nomadapi.NewBatchJob("e2e-smoke", "e2e-smoke", "global", 50)
	job.Datacenters = []string{"*"}
	task := nomadapi.NewTask("hello", "raw_exec").
		SetConfig("command", "/bin/sh").
		SetConfig("args", []string{"-c", "echo caravan-e2e-ok"}).
		Require(&nomadapi.Resources{CPU: new(50), MemoryMB: new(32)})
	job.AddTaskGroup(nomadapi.NewTaskGroup("g", 1).AddTask(task))
	_, _, err = nomad.Client.Jobs().Register(job, nil)
	must.NoError(t, err)

	alloc := completedAlloc(t, nomad.Client, "e2e-smoke")
	out, err := catFile(nomad.Client, alloc, "alloc/logs/hello.stdout.0")
	must.NoError(t, err)
	must.Eq(t, "caravan-e2e-ok", strings.TrimSpace(out))
}
