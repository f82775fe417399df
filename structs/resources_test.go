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
