package structs

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestParseDeviceID(t *testing.T) {
	cases := []struct {
		in   string
		want DeviceID
		err  string
	}{
		{in: "gpu", want: DeviceID{Type: "gpu"}},
		{in: "nvidia/gpu", want: DeviceID{Vendor: "nvidia", Type: "gpu"}},
		{in: "nvidia/gpu/Tesla V100-SXM2-16GB", want: DeviceID{Vendor: "nvidia", Type: "gpu", Name: "Tesla V100-SXM2-16GB"}},
		{in: "", err: "has an empty part"},
		{in: "nvidia/", err: "has an empty part"},
		{in: "a/b/c/d", err: "more than three parts"},
		{in: "nvidia gpu", err: `invalid part "nvidia gpu"`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDeviceID(tc.in)
			if tc.err != "" {
				must.ErrorContains(t, err, tc.err)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
			must.Eq(t, tc.in, got.String())
		})
	}
}

func TestDeviceID_Matches(t *testing.T) {
	v100 := DeviceID{Vendor: "nvidia", Type: "gpu", Name: "V100"}
	must.True(t, DeviceID{Type: "gpu"}.Matches(v100))
	must.True(t, DeviceID{Vendor: "nvidia", Type: "gpu"}.Matches(v100))
	must.True(t, v100.Matches(v100))
	must.False(t, DeviceID{Vendor: "amd", Type: "gpu"}.Matches(v100))
	must.False(t, DeviceID{Type: "fpga"}.Matches(v100))
	must.False(t, DeviceID{Vendor: "nvidia", Type: "gpu", Name: "A100"}.Matches(v100))
}

func TestAttribute_ParseCompare(t *testing.T) {
	cases := []struct {
		a, b string
		cmp  int
		ok   bool
	}{
		{"16 GiB", "16 GiB", 0, true},
		{"16 GiB", "16384 MiB", 0, true},
		{"32GiB", "16 GiB", 1, true},
		{"11 GB", "16 GiB", -1, true},
		{"1.5 GHz", "1500 MHz", 0, true},
		{"7", "7.5", -1, true},
		{"16 GiB", "16 GHz", 0, false},
		{"V100", "A100", 1, true},
		{"true", "true", 0, true},
		{"true", "16", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.a+" vs "+tc.b, func(t *testing.T) {
			cmp, ok := ParseAttribute(tc.a).Compare(ParseAttribute(tc.b))
			must.Eq(t, tc.ok, ok)
			if ok {
				must.Eq(t, tc.cmp, cmp)
			}
		})
	}
	must.Eq(t, "16 GiB", ParseAttribute("16GiB").GoString())
	must.Eq(t, "Tesla T4", ParseAttribute("Tesla T4").GoString())
}

func TestNodeDeviceResource(t *testing.T) {
	d := &NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "T4", Instances: []*NodeDevice{
		{ID: "a", Healthy: true}, {ID: "b"}, {ID: "c", Healthy: true},
	}}
	must.Eq(t, 2, d.HealthyCount())
	must.Eq(t, "nvidia/gpu/T4", d.ID().String())
	must.True(t, (&Node{Status: NodeStatusReady, Eligible: true}).Schedulable())
	must.False(t, (&Node{Status: NodeStatusReady}).Schedulable())
}

func TestResources_Ranges(t *testing.T) {
	cases := []struct {
		name      string
		in        Resources
		cpu, mem  int
		cpuR      *ResourceRange
		memR      *ResourceRange
		err, path string
	}{
		{name: "fixed", in: Resources{CPU: 500, MemoryMB: 256}, cpu: 500, mem: 256},
		{name: "cpu range starts at max", in: Resources{CPURange: &ResourceRange{Min: 1000, Max: 8000}, MemoryMB: 256},
			cpu: 8000, mem: 256, cpuR: &ResourceRange{Min: 1000, Max: 8000, Initial: 8000}},
		{name: "memory range starts at min", in: Resources{CPU: 500, MemoryRange: &ResourceRange{Min: 128, Max: 512}},
			cpu: 500, mem: 128, memR: &ResourceRange{Min: 128, Max: 512, Initial: 128}},
		{name: "initial", in: Resources{CPURange: &ResourceRange{Min: 1000, Max: 8000, Initial: 2000}},
			cpu: 2000, mem: DefaultMemoryMB, cpuR: &ResourceRange{Min: 1000, Max: 8000, Initial: 2000}},
		{name: "auto", in: Resources{CPURange: &ResourceRange{Auto: true}, MemoryRange: &ResourceRange{Auto: true}},
			cpu: DefaultCPU, mem: DefaultMemoryMB,
			cpuR: &ResourceRange{Min: MinCPU, Initial: DefaultCPU, Auto: true},
			memR: &ResourceRange{Min: MinMemoryMB, Initial: DefaultMemoryMB, Auto: true}},
		{name: "max below min", in: Resources{CPURange: &ResourceRange{Min: 8000, Max: 1000, Initial: 8000}},
			cpu: 8000, mem: DefaultMemoryMB, cpuR: &ResourceRange{Min: 8000, Max: 1000, Initial: 8000},
			err: "1000 MHz is below min (8000 MHz)", path: "cpu.max"},
		{name: "initial outside", in: Resources{MemoryRange: &ResourceRange{Min: 128, Max: 512, Initial: 1024}},
			cpu: DefaultCPU, mem: 1024, memR: &ResourceRange{Min: 128, Max: 512, Initial: 1024},
			err: "1024 MB is outside 128..512", path: "memory.initial"},
		{name: "memory min", in: Resources{MemoryRange: &ResourceRange{Min: 5, Max: 512}},
			cpu: DefaultCPU, mem: 5, memR: &ResourceRange{Min: 5, Max: 512, Initial: 5},
			err: "5 MB is below Nomad's minimum of 10 MB", path: "memory.min"},
		{name: "fixed size disagrees", in: Resources{CPU: 500, CPURange: &ResourceRange{Min: 1000, Max: 8000}},
			cpu: 500, mem: DefaultMemoryMB, cpuR: &ResourceRange{Min: 1000, Max: 8000, Initial: 500},
			err: "500 MHz is outside 1000..8000", path: "cpu.initial"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.in.Copy()
			r.Canonicalize()
			r.Canonicalize() // idempotent
			must.Eq(t, tc.cpu, r.CPU)
			must.Eq(t, tc.mem, r.MemoryMB)
			must.Eq(t, tc.cpuR, r.CPURange)
			must.Eq(t, tc.memR, r.MemoryRange)
			v := newValidator()
			r.validate(v)
			if tc.err == "" {
				must.NoError(t, v.err())
				return
			}
			var found *FieldError
			for _, e := range FieldErrors(v.err()) {
				if e.Path == tc.path {
					found = e
				}
			}
			must.NotNil(t, found, must.Sprintf("no error at %s in %v", tc.path, v.err()))
			must.ErrorContains(t, found, tc.err)
		})
	}

	r := &Resources{CPU: 2000, MemoryMB: 256, CPURange: &ResourceRange{Min: 1000, Max: 8000, Initial: 2000}}
	cpu, mem := r.Sized(TaskSize{})
	must.Eq(t, 2000, cpu)
	must.Eq(t, 256, mem)
	cpu, mem = r.Sized(TaskSize{CPU: 4000})
	must.Eq(t, 4000, cpu)
	must.Eq(t, 256, mem)
	must.True(t, r.CPURange.Contains(8000))
	must.False(t, r.CPURange.Contains(8001))
	must.False(t, r.MemoryRange.Contains(256))
	must.True(t, (&ResourceRange{Min: 10}).Contains(1<<20))
	must.Eq(t, "1000..8000", r.CPURange.String())
	must.Eq(t, "10..node", (&ResourceRange{Min: 10}).String())
}

func TestPlacementGPUTypes(t *testing.T) {
	gpus := func(name string, healthy bool) []*NodeDeviceResource {
		return []*NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: name, Instances: []*NodeDevice{{ID: "g0", Healthy: healthy}}}}
	}
	nodes := []*Node{
		{ID: "a", Devices: gpus("Tesla T4", true)},
		{ID: "b", Devices: gpus("A100-SXM4-40GB", true)},
		{ID: "c"},
		{ID: "d", Devices: gpus("Tesla T4", false)},
	}
	desired := &Placement{Nodes: []*NodeTasks{{NodeID: "a", Workers: 1}, {NodeID: "c", PS: 1}, {NodeID: "d", Workers: 1}, {NodeID: "gone", Workers: 1}}}
	observed := &Placement{Nodes: []*NodeTasks{{NodeID: "b", Workers: 2}}}
	must.Eq(t, map[string]string{"a": "Tesla T4", "b": "A100-SXM4-40GB"}, PlacementGPUTypes(nodes, desired, nil, observed))
	must.Nil(t, PlacementGPUTypes(nodes, &Placement{Nodes: []*NodeTasks{{NodeID: "c", PS: 1}}}), must.Sprint("nil when no node has a type"))
	must.Nil(t, PlacementGPUTypes(nodes))
}
