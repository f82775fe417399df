package fairshare

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestDRF checks the theoretical DRF allocation on cases computed by
// hand; the first is the DRF paper's example (§4.1: 9 CPUs and 18 GB,
// tasks of <1 CPU, 4 GB> and <3 CPUs, 1 GB>: three tasks and two, each
// at a dominant share of 2/3).
func TestDRF(t *testing.T) {
	upTo := func(n int) structs.Bounds { return structs.Bounds{Min: 1, Max: n} }
	cases := []struct {
		name     string
		capacity []float64
		demands  []Demand
		want     []Allocation
	}{
		{"DRF paper", []float64{9, 18},
			[]Demand{{Worker: []float64{1, 4}, Workers: upTo(100)}, {Worker: []float64{3, 1}, Workers: upTo(100)}},
			[]Allocation{{Workers: 3, Share: 2.0 / 3}, {Workers: 2, Share: 2.0 / 3}}},
		{"capped at its maximum", []float64{9, 18},
			[]Demand{{Worker: []float64{1, 4}, Workers: upTo(1)}, {Worker: []float64{3, 1}, Workers: upTo(100)}},
			[]Allocation{{Workers: 1, Share: 4.0 / 18}, {Workers: 2, Share: 2.0 / 3}}},
		// CPU 10, 4 GPUs: the PS job's workers take 1 CPU and 1 GPU, its
		// servers 1 CPU; the all-reduce job's workers 2 CPUs and 1 GPU.
		{"PS job grows a server per worker", []float64{10, 4},
			[]Demand{{Worker: []float64{1, 1}, Server: []float64{1, 0}, Workers: upTo(8), Servers: upTo(8)}},
			[]Allocation{{Workers: 4, Servers: 4, Share: 1}}},
		{"PS and all-reduce", []float64{10, 4},
			[]Demand{
				{Worker: []float64{1, 1}, Server: []float64{1, 0}, Workers: upTo(8), Servers: upTo(8)},
				{Worker: []float64{2, 1}, Workers: upTo(4)},
			},
			[]Allocation{{Workers: 2, Servers: 2, Share: 0.5}, {Workers: 2, Share: 0.5}}},
		{"servers stop at their maximum", []float64{10, 4},
			[]Demand{{Worker: []float64{1, 1}, Server: []float64{1, 0}, Workers: upTo(8), Servers: upTo(1)}},
			[]Allocation{{Workers: 4, Servers: 1, Share: 1}}},
		{"weighted 1:3", []float64{4},
			[]Demand{{Worker: []float64{1}, Workers: upTo(4)}, {Worker: []float64{1}, Workers: upTo(4), Weight: 3}},
			[]Allocation{{Workers: 1, Share: 0.25}, {Workers: 3, Share: 0.75}}},
		{"a minimum that does not fit gets nothing", []float64{4},
			[]Demand{{Worker: []float64{1}, Workers: structs.Bounds{Min: 3, Max: 4}}, {Worker: []float64{1}, Workers: structs.Bounds{Min: 2, Max: 2}}},
			[]Allocation{{Workers: 4, Share: 1}, {}}},
		{"a resource the cluster lacks", []float64{10, 0},
			[]Demand{{Worker: []float64{1, 1}, Workers: upTo(4)}, {Worker: []float64{2, 0}, Workers: upTo(8)}},
			[]Allocation{{}, {Workers: 5, Share: 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := DRF(tc.capacity, tc.demands)
			must.SliceLen(t, len(tc.want), got)
			for i := range got {
				must.Eq(t, tc.want[i].Workers, got[i].Workers, must.Sprintf("job %d workers", i))
				must.Eq(t, tc.want[i].Servers, got[i].Servers, must.Sprintf("job %d servers", i))
				must.InDelta(t, tc.want[i].Share, got[i].Share, 1e-12, must.Sprintf("job %d share", i))
			}
		})
	}
}
