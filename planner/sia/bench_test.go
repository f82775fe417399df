package sia

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
)

// heterogeneous builds the paper's Heterogeneous setting scaled by k (6
// nodes of 4 T4s, 3 of 8 RTX 2080 Tis and 2 of 8 A100s: 64 GPUs at k = 1)
// with 50k jobs, each measured on some types at some scale, a third of
// them running.
func heterogeneous(b *testing.B, k int) *planner.Request {
	h := planner.NewHarness(b)
	for _, g := range []struct {
		name       string
		nodes, per int
	}{{"Tesla T4", 6, 4}, {"GeForce RTX 2080 Ti", 3, 8}, {"A100-SXM4-40GB", 2, 8}} {
		for _, n := range h.AddNodes(fmt.Sprintf("%s-", g.name[:4]), g.nodes*k, 64000, 262144, g.per) {
			n.Devices[0].Name = g.name
		}
	}
	rng := rand.New(rand.NewPCG(uint64(k), 9))
	slow := map[string]float64{"Tesla T4": 4, "GeForce RTX 2080 Ti": 2, "A100-SXM4-40GB": 1}
	for i := range 50 * k {
		v := adaptiveJob(h, fmt.Sprintf("job-%05d", i), 64)
		v.PerfByType = map[string]*goodput.Fit{}
		for _, name := range slices.Sorted(maps.Keys(slow)) {
			if rng.IntN(3) > 0 {
				v.PerfByType[name] = perf(slow[name]*(0.5+rng.Float64()), 1<<rng.IntN(5))
			}
		}
		v.Restarts = rng.IntN(3)
	}
	req := h.Request()
	dec, err := New().Plan(req)
	if err != nil {
		b.Fatal(err)
	}
	for i, p := range dec.Placements {
		if i%3 == 0 && !p.Paused() {
			req.Jobs[i].Current = p
		}
	}
	req.Now = 3600e9
	return req
}

// BenchmarkPlan is one round of Sia on the Heterogeneous setting (64
// GPUs, 50 jobs) and on a cluster 32 times as large (2,048 GPUs, 1,600
// jobs): the targets are 50 ms and 0.5 s (the paper's Sia: 96 ms
// median and about 1 s, §5.6 and Fig. 9).
func BenchmarkPlan(b *testing.B) {
	for _, k := range []int{1, 32} {
		b.Run(fmt.Sprintf("gpus=%d", 64*k), func(b *testing.B) {
			req := heterogeneous(b, k)
			alg := NewWithOptions(Options{})
			b.ResetTimer()
			for range b.N {
				if _, err := alg.Plan(req); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(alg.Nodes), "nodes")
			if !alg.Optimal {
				b.Logf("the solve reached its node limit (%d nodes)", alg.Nodes)
			}
		})
	}
}
