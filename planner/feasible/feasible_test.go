package feasible

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

func TestChecker_Node(t *testing.T) {
	n := &structs.Node{
		ID: "n1", Name: "gpu-1", Datacenter: "dc1", NodeClass: "gpu",
		Attributes: map[string]string{"kernel.name": "linux", "cpu.numcores": "16", "driver.docker.version": "27.1.0"},
		Meta:       map[string]string{"rack": "r2", "pools": "ml,gpu"},
	}
	cases := []struct {
		c    structs.Constraint
		want bool
	}{
		{structs.Constraint{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}, true},
		{structs.Constraint{LTarget: "${attr.kernel.name}", Operand: "!=", RTarget: "linux"}, false},
		{structs.Constraint{LTarget: "${attr.cpu.numcores}", Operand: ">=", RTarget: "8"}, true},
		{structs.Constraint{LTarget: "${attr.cpu.numcores}", Operand: "<", RTarget: "8"}, false},
		{structs.Constraint{LTarget: "${meta.rack}", Operand: "regexp", RTarget: "^r[0-3]$"}, true},
		{structs.Constraint{LTarget: "${meta.pools}", Operand: "set_contains", RTarget: "ml,gpu"}, true},
		{structs.Constraint{LTarget: "${meta.pools}", Operand: "set_contains_any", RTarget: "cpu,gpu"}, true},
		{structs.Constraint{LTarget: "${meta.pools}", Operand: "set_contains_all", RTarget: "cpu,gpu"}, false},
		{structs.Constraint{LTarget: "${meta.zone}", Operand: "is_set"}, false},
		{structs.Constraint{LTarget: "${meta.zone}", Operand: "is_not_set"}, true},
		{structs.Constraint{LTarget: "${meta.zone}", Operand: "=", RTarget: "a"}, false},
		{structs.Constraint{LTarget: "${node.class}", Operand: "=", RTarget: "gpu"}, true},
		{structs.Constraint{LTarget: "${node.unique.id}", Operand: "=", RTarget: "n1"}, true},
		{structs.Constraint{LTarget: "${node.datacenter}", Operand: "=", RTarget: "dc2"}, false},
		{structs.Constraint{LTarget: "${attr.driver.docker.version}", Operand: "version", RTarget: ">= 25.0, < 28"}, true},
		{structs.Constraint{LTarget: "${attr.driver.docker.version}", Operand: "semver", RTarget: ">= 28"}, false},
		{structs.Constraint{Operand: "distinct_hosts"}, true},
	}
	c := New()
	for _, tc := range cases {
		t.Run(tc.c.String(), func(t *testing.T) {
			must.Eq(t, tc.want, c.Node(n, []*structs.Constraint{&tc.c}))
		})
	}
	must.True(t, UsesNodeIdentity(&structs.Constraint{LTarget: "${node.unique.name}"}))
	must.False(t, UsesNodeIdentity(&structs.Constraint{LTarget: "${node.class}"}))
}

func TestChecker_DeviceGroup(t *testing.T) {
	v100 := &structs.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "Tesla V100-SXM2-16GB",
		Attributes: map[string]*structs.Attribute{"memory": structs.ParseAttribute("16 GiB"), "cuda_cores": structs.ParseAttribute("5120")}}
	a100 := &structs.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "A100-SXM4-40GB",
		Attributes: map[string]*structs.Attribute{"memory": structs.ParseAttribute("40960 MiB")}}
	mem := func(op, v string) *structs.RequestedDevice {
		return &structs.RequestedDevice{Name: "nvidia/gpu", Count: 1, Constraints: []*structs.Constraint{{LTarget: "${device.attr.memory}", Operand: op, RTarget: v}}}
	}
	c := New()
	must.True(t, c.DeviceGroup(v100, mem(">=", "16 GiB")))
	must.False(t, c.DeviceGroup(v100, mem(">=", "32 GiB")))
	must.True(t, c.DeviceGroup(a100, mem(">=", "32 GiB")), must.Sprint("40960 MiB is 40 GiB"))
	must.True(t, c.DeviceGroup(v100, mem("=", "16384 MiB")))
	must.False(t, c.DeviceGroup(v100, mem(">", "16 GHz")), must.Sprint("units of different kinds never compare"))
	must.True(t, c.DeviceGroup(a100, &structs.RequestedDevice{Name: "gpu"}))
	must.False(t, c.DeviceGroup(a100, &structs.RequestedDevice{Name: "amd/gpu"}))
	must.True(t, c.DeviceGroup(a100, &structs.RequestedDevice{Name: "nvidia/gpu", Constraints: []*structs.Constraint{
		{LTarget: "${device.model}", Operand: "regexp", RTarget: "A100"}}}))
	must.False(t, c.DeviceGroup(v100, &structs.RequestedDevice{Name: "nvidia/gpu", Constraints: []*structs.Constraint{
		{LTarget: "${device.attr.nvlink}", Operand: "is_set"}}}))
}

func TestChecker_Failed(t *testing.T) {
	n := &structs.Node{ID: "n1", Attributes: map[string]string{"kernel.name": "linux"}}
	linux := &structs.Constraint{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}
	windows := &structs.Constraint{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "windows"}
	rack := &structs.Constraint{LTarget: "${meta.rack}", Operand: "is_set"}
	c := New()
	must.Nil(t, c.FailedConstraint(n, []*structs.Constraint{linux, {Operand: "distinct_hosts"}}))
	must.Eq(t, windows, c.FailedConstraint(n, []*structs.Constraint{linux, windows, rack}), must.Sprint("the first that fails"))

	v100 := &structs.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "V100",
		Attributes: map[string]*structs.Attribute{"memory": structs.ParseAttribute("16 GiB")}}
	big := &structs.Constraint{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "32 GiB"}
	small := &structs.Constraint{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "8 GiB"}
	matches, failed := c.FailedDeviceConstraint(v100, &structs.RequestedDevice{Name: "nvidia/gpu", Constraints: []*structs.Constraint{small, big}})
	must.True(t, matches)
	must.Eq(t, big, failed)
	matches, failed = c.FailedDeviceConstraint(v100, &structs.RequestedDevice{Name: "nvidia/gpu", Constraints: []*structs.Constraint{small}})
	must.True(t, matches)
	must.Nil(t, failed)
	matches, _ = c.FailedDeviceConstraint(v100, &structs.RequestedDevice{Name: "amd/gpu"})
	must.False(t, matches)
}
