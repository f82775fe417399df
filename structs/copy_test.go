package structs

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestJob_Copy(t *testing.T) {
	mock := func() *Job {
		j := MockJob()
		j.Worker.Config = map[string]any{"args": []any{"a", map[string]any{"k": "v"}}}
		j.Worker.Resources.Devices[0].Constraints = []*Constraint{{LTarget: "${device.attr.memory}", RTarget: "16 GiB", Operand: OpGreaterEqual}}
		return j
	}
	j := mock()
	c := j.Copy()
	must.Eq(t, j, c)

	// Every reference field of the copy is its own.
	c.Datacenters[0] = "changed"
	c.Meta["team"] = "changed"
	c.Training.Convergence.Patience++
	c.Elastic.ParameterServers.Max++
	c.Elastic.Checkpoint.Signal = "changed"
	c.Worker.Config["args"].([]any)[1].(map[string]any)["k"] = "changed"
	c.Worker.Env["NCCL_DEBUG"] = "changed"
	c.Worker.Resources.Devices[0].Count++
	c.Worker.Resources.Devices[0].Constraints[0].RTarget = "changed"
	must.Eq(t, mock(), j)
	must.NotEq(t, j, c)
	must.Nil(t, (*Job)(nil).Copy())
}

func TestNode_Copy(t *testing.T) {
	mem := int64(16)
	n := &Node{
		ID: "n1", Attributes: map[string]string{"a": "b"},
		Devices: []*NodeDeviceResource{{
			Vendor: "nvidia", Type: "gpu", Name: "T4",
			Instances:  []*NodeDevice{{ID: "g0", Healthy: true}},
			Attributes: map[string]*Attribute{"memory": {Int: &mem, Unit: "GiB"}},
		}},
	}
	c := n.Copy()
	must.Eq(t, n, c)
	c.Attributes["a"] = "changed"
	c.Devices[0].Instances[0].Healthy = false
	*c.Devices[0].Attributes["memory"].Int = 32
	must.Eq(t, "b", n.Attributes["a"])
	must.True(t, n.Devices[0].Instances[0].Healthy)
	must.Eq(t, 16, *n.Devices[0].Attributes["memory"].Int)

	p := &Placement{JobID: "j", Nodes: []*NodeTasks{{NodeID: "n1", Workers: 2}}}
	pc := p.Copy()
	pc.Nodes[0].Workers = 3
	must.Eq(t, 2, p.Nodes[0].Workers)
}
