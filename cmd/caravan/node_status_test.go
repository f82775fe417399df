package main

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestNodeIDs: lists print a node's ID as its first 8 characters, as
// Nomad's CLI does, and whole with -verbose.
func TestNodeIDs(t *testing.T) {
	const id = "9d3c4a1e-5b2f-4c8e-a0f1-2b3c4d5e6f70"
	nodes := []*api.Node{{ID: id, Name: "gpu-1", Status: "ready", Eligible: true}}
	must.RegexMatch(t, regexp.MustCompile(`(?m)^9d3c4a1e\s+gpu-1\s`), formatNodes(nodes, false))
	must.StrNotContains(t, formatNodes(nodes, false), id)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^`+id+`\s+gpu-1\s`), formatNodes(nodes, true))

	p := &api.Placement{JobID: "j", NumPS: 1, NumWorkers: 2, Nodes: []*api.NodeTasks{{NodeID: id, PS: 1, Workers: 2}}}
	must.RegexMatch(t, regexp.MustCompile(`(?m)^9d3c4a1e\s+worker\s+2$`), formatPlacement(p, false))
	must.StrNotContains(t, formatPlacement(p, false), id)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^`+id+`\s+worker\s+2$`), formatPlacement(p, true))

	hist := []*api.JobPlacement{{PlanIndex: 3, Algorithm: "optimus", Placement: p}}
	must.RegexMatch(t, regexp.MustCompile(`(?m)^\S+\s+3\s+optimus\s+1\s+2\s+9d3c4a1e\s`), formatHistory("j", hist, false))
	must.StrContains(t, formatHistory("j", hist, true), id)
}

// TestNodeStatus_DriverDown: while the agent's driver cannot read the
// cluster, node status fails with the reason and since when, rather than
// listing the nodes the agent kept (or "No nodes"); once the driver reads
// the cluster again, it lists them.
func TestNodeStatus_DriverDown(t *testing.T) {
	cluster := sim.DefaultConfig()
	cluster.Nodes, cluster.GPUsPerNode = 2, 1
	sd := sim.NewDriver(sim.DriverConfig{Cluster: cluster, Speed: 200})
	sd.Start()
	t.Cleanup(sd.Stop)
	d := &server.TestOutageDriver{Driver: sd}
	d.Down.Store(true)
	srv := server.TestServer(t, server.TestConfig(t, d))
	addr := "http://" + srv.HTTPAddr()

	driverEvents := func() string {
		code, out, errOut := runCLI(t, "events", "-address", addr)
		if code != 0 {
			return errOut
		}
		return out
	}
	agent.WaitFor(t, 10*time.Second, "a DriverError event", func() error {
		if !strings.Contains(driverEvents(), structs.EventDriverError) {
			return errors.New("no DriverError event yet")
		}
		return nil
	})
	for _, args := range [][]string{{}, {"-json"}, {"node-01"}} {
		code, out, errOut := runCLI(t, append([]string{"node", "status", "-address", addr}, args...)...)
		must.Eq(t, 1, code, must.Sprint(out))
		must.Eq(t, "", out)
		must.RegexMatch(t, regexp.MustCompile(`^Error listing nodes: the agent's driver cannot read the cluster since \d{4}-\S+: cluster unavailable, state kept, retrying: read nodes: dial tcp 127.0.0.1:4646: connection refused\n`), errOut)
	}

	d.Down.Store(false)
	agent.WaitFor(t, 10*time.Second, "a DriverRecovered event", func() error {
		if !strings.Contains(driverEvents(), structs.EventDriverRecovered) {
			return errors.New("no DriverRecovered event yet")
		}
		return nil
	})
	code, out, errOut := runCLI(t, "node", "status", "-address", addr)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.SliceLen(t, 3, strings.Split(strings.TrimSpace(out), "\n"), must.Sprint("a header and 2 nodes"))
	code, out, errOut = runCLI(t, "node", "status", "-address", addr, "node-01")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^ID\s+= node-01$`), out)
}

// TestFormatNodes_GPUType: node status lists each node's GPU type, the model
// of its first GPU group with a healthy instance ("-" without one), beside
// its GPUs, and shows it for one node.
func TestFormatNodes_GPUType(t *testing.T) {
	group := func(name string, healthy ...bool) *api.NodeDeviceResource {
		d := &api.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: name}
		for _, h := range healthy {
			d.Instances = append(d.Instances, &api.NodeDevice{ID: name, Healthy: h})
		}
		return d
	}
	nodes := []*api.Node{
		{ID: "n1", Name: "t4-1", Status: "ready", Eligible: true, Devices: []*api.NodeDeviceResource{group("Tesla T4", true, true)}},
		{ID: "n2", Name: "a100-1", Status: "ready", Eligible: true, Devices: []*api.NodeDeviceResource{group("Tesla T4", false), group("A100-SXM4-40GB", true, false)}},
		{ID: "n3", Name: "cpu-1", Status: "ready", Eligible: true},
	}
	out := formatNodes(nodes, false)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^ID\s+Name\s+Datacenter\s+Class\s+Status\s+Eligible\s+CPU\s+Memory\s+GPUs\s+GPU Type$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^n1\s+t4-1\s+-\s+-\s+ready\s+true\s+0\s+0\s+2/2\s+Tesla T4$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^n2\s+a100-1\s+-\s+-\s+ready\s+true\s+0\s+0\s+1/3\s+A100-SXM4-40GB$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^n3\s+cpu-1\s+-\s+-\s+ready\s+true\s+0\s+0\s+0/0\s+-$`), out)

	must.RegexMatch(t, regexp.MustCompile(`(?m)^GPU Type\s+= A100-SXM4-40GB$`), formatNode(&api.NodeDetail{Node: nodes[1], GPUsTotal: 3}))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^GPU Type\s+= -$`), formatNode(&api.NodeDetail{Node: nodes[2]}))
}
