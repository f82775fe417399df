package sim

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestParseCluster(t *testing.T) {
	cases := []struct {
		in     string
		groups []NodeGroup
		gpus   int
		str    string
	}{
		{"16x4", []NodeGroup{{Nodes: 16, GPUsPerNode: 4}}, 64, "16x4"},
		{"32x0", []NodeGroup{{Nodes: 32}}, 0, "32x0"},
		{"6xt4,3xrtx,2xa100", []NodeGroup{{6, 4, "t4"}, {3, 8, "rtx"}, {2, 8, "a100"}}, 64, "6xt4,3xrtx,2xa100"},
		{"6xt4:2, 1xQUAD", []NodeGroup{{6, 2, "t4"}, {1, 4, "quad"}}, 16, "6xt4:2,1xquad"},
		{"2xa100:8", []NodeGroup{{2, 8, "a100"}}, 16, "2xa100"},
		{"1xt4,2x8", []NodeGroup{{1, 4, "t4"}, {2, 8, ""}}, 20, "1xt4,2x8"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			spec, err := ParseCluster(tc.in)
			must.NoError(t, err)
			must.Eq(t, tc.groups, spec.Groups)
			must.Eq(t, tc.gpus, spec.TotalGPUs())
			must.Eq(t, tc.str, spec.String())
		})
	}
}

func TestParseCluster_Bad(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "cluster is empty"},
		{"16", `group "16" is not NODESxGPUS`},
		{"0x4", `node count "0" is not a positive number`},
		{"ax4", `node count "a" is not a positive number`},
		{"4x-1", "GPUs per node -1 is negative"},
		{"4xv100", `"v100" is neither a GPU count nor a GPU type; the types are a100, quad, rtx, t4`},
		{"4xt4:0", `GPUs per node "0" is not a positive number`},
		{"4xt4:x", `GPUs per node "x" is not a positive number`},
		{"6xt4,", `group "" is not NODESxGPUS`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseCluster(tc.in)
			must.ErrorContains(t, err, tc.want)
		})
	}
}

// TestClusterSpec_Apply checks that a mixed spec gives each node its
// type's GPUs and device, which Node.GPUType reads.
func TestClusterSpec_Apply(t *testing.T) {
	spec, err := ParseCluster("2xt4,1xrtx")
	must.NoError(t, err)
	cfg := DefaultConfig()
	spec.Apply(&cfg)
	s := New(cfg)
	var got []string
	var gpus []int
	for i, n := range s.Nodes() {
		got = append(got, n.GPUType()+" "+n.Devices[0].Attributes["memory"].GoString())
		gpus = append(gpus, s.cfg.GPUs(i))
	}
	must.Eq(t, []string{"Tesla T4 16 GiB", "Tesla T4 16 GiB", "GeForce RTX 2080 Ti 11 GiB"}, got)
	must.Eq(t, []int{4, 4, 8}, gpus)
	must.Eq(t, 16, s.TotalGPUs())

	plain, err := ParseCluster("3x2")
	must.NoError(t, err)
	plain.Apply(&cfg)
	must.Eq(t, 3, cfg.NodeCount())
	must.Nil(t, cfg.NodeModels)
	must.Eq(t, DefaultGPUModel, cfg.GPUModel(0))
}
