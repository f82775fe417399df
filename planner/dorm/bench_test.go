package dorm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// dormApp is a row of Dorm's Table II (drivers/sim.DormApps, which the
// planner may not import): a container's cores, GPUs and GB, the weight,
// the bounds and how many of 50 applications train it.
type dormApp struct {
	name               string
	cores, gpus, ramGB int
	weight             float64
	max, num           int
}

var tableII = []dormApp{
	{"lr", 2, 0, 8, 1, 32, 20}, {"mf", 2, 0, 6, 2, 32, 20}, {"caffenet", 4, 0, 6, 4, 8, 6},
	{"vgg16", 4, 1, 32, 1, 5, 1}, {"googlenet", 6, 1, 16, 1, 5, 1}, {"alexnet", 6, 1, 16, 2, 5, 1}, {"resnet50", 4, 1, 32, 4, 5, 1},
}

// dormRequest is Dorm's testbed scaled to servers (12 cores and 128 GB
// each, one GPU on every fourth, 5 on 20) with apps applications of Table
// II's mix, all running as a previous plan placed them but the last,
// which has just arrived: the request of a round at an arrival.
func dormRequest(tb testing.TB, servers, apps int, options map[string]string) *planner.Request {
	h := planner.NewHarness(tb)
	for i := range servers {
		gpus := 0
		if i%4 == 0 {
			gpus = 1
		}
		h.AddNodes(fmt.Sprintf("s%03d", i), 1, 12000, 128*1024, gpus)
	}
	var mix []dormApp
	for len(mix) < apps {
		for _, a := range tableII {
			for range a.num {
				mix = append(mix, a)
			}
		}
	}
	mix = mix[:apps]
	rng := rand.New(rand.NewPCG(18, uint64(apps)))
	rng.Shuffle(len(mix), func(i, j int) { mix[i], mix[j] = mix[j], mix[i] })
	for i, a := range mix {
		j := planner.MockJob(fmt.Sprintf("%s-%03d", a.name, i), structs.Bounds{}, structs.Bounds{Min: 1, Max: a.max})
		j.Training.Architecture, j.Training.Mode, j.Elastic.ParameterServers = structs.ArchitectureAllReduce, structs.ModeSync, nil
		j.Training.GlobalBatchSize = 32 * a.max
		j.Weight = a.weight
		j.Worker.Resources.CPU, j.Worker.Resources.MemoryMB = a.cores*1000, a.ramGB*1024
		if a.gpus > 0 {
			j.Worker.Resources.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: a.gpus}}
		}
		h.AddJob(j, nil)
	}
	req := h.Request()
	// The previous round: every application but the last.
	prev := &planner.Request{Nodes: req.Nodes, Jobs: req.Jobs[:apps-1]}
	d := configured(tb, options)
	dec, err := d.Plan(prev)
	if err != nil {
		tb.Fatal(err)
	}
	for _, p := range dec.Placements {
		for _, v := range req.Jobs {
			if v.Job.ID == p.JobID && !p.Paused() {
				v.Current = p
			}
		}
	}
	return req
}

// BenchmarkPlan_DormSize times one round at an arrival on Dorm's testbed
// (50 applications on 20 servers) and at 200 applications on 100
// servers, with dorm's default 10 s time limit: the median and longest
// solve (glpsol's process, reading the model included), the share of
// solves glpsol proved optimal (within MIPGap) and the share without an
// answer (no integer solution by the limit: the round keeps the existing
// allocation); the rest are the best incumbent at the limit.
//
//	go test -run '^$' -bench BenchmarkPlan_DormSize -benchtime 5x ./planner/dorm
func BenchmarkPlan_DormSize(b *testing.B) {
	for _, size := range []struct{ servers, apps int }{{20, 50}, {100, 200}} {
		for _, preset := range []string{"dorm-1", "dorm-3"} {
			b.Run(fmt.Sprintf("%d_apps_%d_servers_%s", size.apps, size.servers, preset), func(b *testing.B) {
				options := map[string]string{"preset": preset}
				req := dormRequest(b, size.servers, size.apps, options)
				d := configured(b, options)
				var times []time.Duration
				optimal, fellBack := 0, 0
				for b.Loop() {
					if _, err := d.Plan(req); err != nil {
						b.Fatal(err)
					}
					s := d.LastSolve()
					times = append(times, s.Duration)
					if s.Status == StatusOptimal {
						optimal++
					}
					if s.Fallback != "" {
						fellBack++
					}
				}
				slices.Sort(times)
				b.ReportMetric(times[(len(times)-1)/2].Seconds(), "p50-s")
				b.ReportMetric(times[len(times)-1].Seconds(), "max-s")
				b.ReportMetric(float64(optimal)/float64(len(times)), "optimal")
				b.ReportMetric(float64(fellBack)/float64(len(times)), "fallback")
				b.ReportMetric(float64(d.LastSolve().Columns), "columns")
			})
		}
	}
}
