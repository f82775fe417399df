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
