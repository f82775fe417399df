package nomad

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-msgpack/v2/codec"
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
	must.Eq(t, []string{"docker", "exec", "raw_exec"}, n.Drivers, must.Sprint("detected drivers, healthy or not"))
	must.True(t, n.HasDriver("exec"))
	must.True(t, n.HasDriver("docker"), must.Sprint("a driver unhealthy for now is not one the node lacks"))
	must.False(t, n.HasDriver("java"))
	must.False(t, n.HasDriver("made-up"))

	// A node that reports drivers but has none detected keeps an empty
	// list through the state's encoding, not nil (any driver).
	none := convertNode(&api.NodeListStub{ID: "n0", Drivers: map[string]*api.DriverInfo{"java": {}}}, nil)
	must.NotNil(t, none.Drivers)
	var buf []byte
	must.NoError(t, codec.NewEncoderBytes(&buf, structs.MsgpackHandle).Encode(none))
	var back structs.Node
	must.NoError(t, codec.NewDecoderBytes(buf, structs.MsgpackHandle).Decode(&back))
	must.NotNil(t, back.Drivers)
	must.False(t, back.HasDriver("raw_exec"))

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

func TestGPUDevice(t *testing.T) {
	gpus := func(vendor, name string, healthy ...bool) *structs.NodeDeviceResource {
		d := &structs.NodeDeviceResource{Vendor: vendor, Type: "gpu", Name: name}
		for i, h := range healthy {
			d.Instances = append(d.Instances, &structs.NodeDevice{ID: name + "-" + string(rune('0'+i)), Healthy: h})
		}
		return d
	}
	for _, tc := range []struct {
		name    string
		devices []*structs.NodeDeviceResource
		want    structs.DeviceID
		ok      bool
	}{
		{"none", nil, structs.DeviceID{}, false},
		{"one model", []*structs.NodeDeviceResource{gpus("nvidia", "Tesla T4", true, true)},
			structs.DeviceID{Vendor: "nvidia", Type: "gpu", Name: "Tesla T4"}, true},
		{"the first healthy group", []*structs.NodeDeviceResource{
			{Vendor: "xilinx", Type: "fpga", Name: "U250", Instances: []*structs.NodeDevice{{ID: "f0", Healthy: true}}},
			gpus("nvidia", "Tesla T4", false), gpus("amd", "MI100", false, true)},
			structs.DeviceID{Vendor: "amd", Type: "gpu", Name: "MI100"}, true},
		{"no healthy GPU", []*structs.NodeDeviceResource{gpus("nvidia", "Tesla T4", false)}, structs.DeviceID{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &structs.Node{ID: "n1", Devices: tc.devices}
			id, ok := gpuDevice(n)
			must.Eq(t, tc.ok, ok)
			must.Eq(t, tc.want, id)
			must.Eq(t, tc.want.Name, n.GPUType(), must.Sprint("the group GPUType names"))
		})
	}
}
