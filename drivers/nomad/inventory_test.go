package nomad

import (
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

func TestConvertNode_Drivers(t *testing.T) {
	stub := &api.NodeListStub{ID: "n1", Status: "ready", SchedulingEligibility: api.NodeSchedulingEligible,
		Drivers: map[string]*api.DriverInfo{
			"raw_exec": {Detected: true, Healthy: true},
			"exec":     {Detected: true, Healthy: true},
			"docker":   {Detected: true, Healthy: false, HealthDescription: "docker daemon unreachable"},
			"java":     {Detected: false},
			"qemu":     nil,
		}}
	n := convertNode(stub, nil)
	must.Eq(t, []string{"exec", "raw_exec"}, n.Drivers)
	must.True(t, n.HasDriver("exec"))
	must.False(t, n.HasDriver("docker"))
	must.False(t, n.HasDriver("made-up"))

	// Without driver info in the list, the full node's is read; without
	// either, any driver but one whose attribute says false.
	full := &api.Node{Drivers: map[string]*api.DriverInfo{"exec": {Detected: true, Healthy: true}}}
	must.Eq(t, []string{"exec"}, convertNode(&api.NodeListStub{ID: "n2"}, full).Drivers)
	old := convertNode(&api.NodeListStub{ID: "n3"}, &api.Node{Attributes: map[string]string{"driver.raw_exec": "1", "driver.exec": "0"}})
	must.Nil(t, old.Drivers)
	must.True(t, old.HasDriver("raw_exec"))
	must.False(t, old.HasDriver("exec"))
	must.True(t, old.HasDriver("docker"))
}
