package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/drf"
	"github.com/caravan-sched/caravan/planner/fifo"
	"github.com/caravan-sched/caravan/planner/model"
	"github.com/caravan-sched/caravan/planner/optimus"
	"github.com/caravan-sched/caravan/structs"
)

// cluster builds nodes of 6,000 MHz and 24 GiB, which hold six tasks of the
// jobs below each: 16,000 nodes hold 96,000 tasks, the paper's scale.
func cluster(nodes int) []*structs.Node {
	out := make([]*structs.Node, nodes)
	for i := range out {
		out[i] = &structs.Node{
			ID: fmt.Sprintf("node-%05d", i), Datacenter: "dc1", Status: structs.NodeStatusReady, Eligible: true,
			CPU: 6000, MemoryMB: 24576, Attributes: map[string]string{"kernel.name": "linux"},
		}
	}
	return out
}

// workload builds jobs of 1,000 MHz and 2 GiB tasks with up to 10 parameter
// servers and 40 workers, each with its own fitted speed and loss model and
// progress, so that marginal gains differ from job to job.
func workload(jobs int) []*planner.Job {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]*planner.Job, jobs)
	for i := range out {
		j := planner.MockJob(fmt.Sprintf("job-%05d", i), structs.Bounds{Min: 1, Max: 10}, structs.Bounds{Min: 1, Max: 40})
		j.Worker.Resources.MemoryMB = 2048
		j.Training.Convergence.MaxEpochs = 0
		out[i] = &planner.Job{
			Job: j,
			Speed: &model.Speed{Kind: model.SpeedAsync, Theta: [5]float64{
				0.5 + rng.Float64(), 0.05 + rng.Float64()*0.3, rng.Float64() * 0.02, rng.Float64() * 0.05}},
			Loss:  &model.Loss{B0: 0.001 + rng.Float64()*0.01, B1: 1, B2: rng.Float64() * 0.1, Scale: 1},
			Step:  float64(rng.IntN(5000)),
			Young: rng.IntN(4) == 0,
		}
	}
	return out
}

func bench(b *testing.B, alg planner.Algorithm, jobs, nodes int) {
	req := &planner.Request{Nodes: cluster(nodes), Jobs: workload(jobs)}
	b.ReportAllocs()
	var tasks int
	for b.Loop() {
		dec, err := alg.Plan(req)
		if err != nil {
			b.Fatal(err)
		}
		tasks = 0
		for _, p := range dec.Placements {
			tasks += p.NumPS + p.NumWorkers
		}
	}
	b.ReportMetric(float64(tasks), "tasks")
}

// BenchmarkOptimus compares the heap allocation with the straightforward
// scan on the same requests. Run it on one core:
//
//	go test ./planner/benchmarks -run '^$' -bench Optimus -cpu 1
func BenchmarkOptimus(b *testing.B) {
	for _, size := range []struct{ jobs, nodes int }{{1000, 4000}, {4000, 16000}, {10000, 20000}} {
		name := fmt.Sprintf("jobs=%d/nodes=%d", size.jobs, size.nodes)
		b.Run(name+"/heap", func(b *testing.B) { bench(b, optimus.New(), size.jobs, size.nodes) })
		if size.jobs <= 4000 {
			b.Run(name+"/scan", func(b *testing.B) {
				bench(b, optimus.NewWithOptions(optimus.Options{Scan: true}), size.jobs, size.nodes)
			})
		}
	}
}

// BenchmarkBaselines measures the baselines on the paper's scale, for
// comparison with Optimus.
func BenchmarkBaselines(b *testing.B) {
	b.Run("drf/jobs=4000/nodes=16000", func(b *testing.B) { bench(b, drf.New(), 4000, 16000) })
	b.Run("fifo/jobs=4000/nodes=16000", func(b *testing.B) { bench(b, fifo.New(), 4000, 16000) })
}
