package models

import (
	"fmt"
	"math"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/pollux"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestSet_SummaryByType works through the summary of a job measured on
// two GPU types at known step times: each type lists its configurations,
// sorted, with the mean step time measured there and the step time its
// own fit predicts, which for these linear step times is the measured one
// within 2%.
func TestSet_SummaryByType(t *testing.T) {
	s := New(pollux.New(), Options{ProfileConfigs: -1})
	j := planner.MockAllReduceJob("a", structs.Bounds{Min: 1, Max: 8}, &structs.BatchSize{Min: 32, Max: 4096, MinLocal: 16, MaxLocal: 256})
	must.NoError(t, s.Register(j))
	key := j.Key()
	sample := func(typ string, workers, local int, step float64) structs.Sample {
		return structs.Sample{
			JobID: "a", Namespace: "default", Role: structs.RoleWorker, NumWorkers: workers, GPUType: typ,
			StepTimeS: step, LocalBatchSize: int64(local),
		}
	}
	// A100: 0.05 s + 1.5625 ms a sample; the 64-sample configuration
	// measured twice, 0.14 s and 0.16 s.
	s.Ingest([]structs.Sample{
		sample("A100", 1, 128, 0.25),
		sample("A100", 1, 32, 0.1),
		sample("A100", 1, 64, 0.14),
		sample("A100", 1, 64, 0.16),
	})
	// Tesla T4: 0.2 s + 6.25 ms a sample, then 2 replicas on its node.
	s.Ingest([]structs.Sample{sample("Tesla T4", 1, 64, 0.6), sample("Tesla T4", 1, 32, 0.4)})
	s.Observe(key, &structs.Placement{Namespace: "default", JobID: "a", NumWorkers: 2, Nodes: []*structs.NodeTasks{{NodeID: "n", Workers: 2}}}, nil)
	s.Ingest([]structs.Sample{sample("Tesla T4", 2, 32, 0.45)})

	fits := s.Snapshot(nil, 0).jobs[0].job.PerfByType
	must.MapLen(t, 2, fits)
	sum := s.Summaries()[0].Goodput
	must.NotNil(t, sum)
	must.Eq(t, sum, s.Summaries()[0].Goodput, must.Sprint("the same models say the same"))
	must.SliceLen(t, 2, sum.ByType)

	want := []struct {
		typ    string
		points []structs.PerfPoint
	}{
		{"A100", []structs.PerfPoint{
			{Nodes: 1, Replicas: 1, LocalBatch: 32, StepTimeS: 0.1},
			{Nodes: 1, Replicas: 1, LocalBatch: 64, StepTimeS: 0.15},
			{Nodes: 1, Replicas: 1, LocalBatch: 128, StepTimeS: 0.25},
		}},
		{"Tesla T4", []structs.PerfPoint{
			{Nodes: 1, Replicas: 1, LocalBatch: 32, StepTimeS: 0.4},
			{Nodes: 1, Replicas: 1, LocalBatch: 64, StepTimeS: 0.6},
			{Nodes: 1, Replicas: 2, LocalBatch: 32, StepTimeS: 0.45},
		}},
	}
	for i, w := range want {
		got := sum.ByType[i]
		must.EqOp(t, w.typ, got.Type)
		fit := fits[w.typ]
		must.Eq(t, fit.Params.Slice(), got.Perf)
		must.EqOp(t, fit.Error, got.FitError)
		must.EqOp(t, fit.MaxError, got.MaxFitError)
		must.EqOp(t, 3, got.Configs)
		must.SliceLen(t, len(w.points), got.Points)
		for k, p := range w.points {
			g := got.Points[k]
			at := must.Sprintf("%s point %d: %+v", w.typ, k, g)
			must.EqOp(t, p.Nodes, g.Nodes, at)
			must.EqOp(t, p.Replicas, g.Replicas, at)
			must.EqOp(t, p.LocalBatch, g.LocalBatch, at)
			must.InDelta(t, p.StepTimeS, g.StepTimeS, 1e-12, at)
			must.EqOp(t, fit.Params.StepTime(g.Nodes, g.Replicas, float64(g.LocalBatch), 0), g.ModelStepTimeS, at)
			must.Less(t, 0.02, math.Abs(g.ModelStepTimeS/g.StepTimeS-1), at)
		}
	}
}

// TestSet_SummaryByTypeBounded checks that a type's points are capped at
// structs.MaxModelTypePoints, the first in order, while Configs counts
// every configuration, and that the types are capped at
// structs.MaxModelGPUTypes, the first by name.
func TestSet_SummaryByTypeBounded(t *testing.T) {
	s := New(pollux.New(), Options{ProfileConfigs: -1})
	j := planner.MockAllReduceJob("a", structs.Bounds{Min: 1, Max: 8}, nil)
	must.NoError(t, s.Register(j))
	var smps []structs.Sample
	configs := structs.MaxModelTypePoints + 8
	for local := 1; local <= configs; local++ {
		smps = append(smps, structs.Sample{
			JobID: "a", Namespace: "default", Role: structs.RoleWorker, NumWorkers: 1, GPUType: "A100",
			StepTimeS: 0.1 + 0.001*float64(local), LocalBatchSize: int64(local),
		})
	}
	for i := range structs.MaxModelGPUTypes + 2 {
		smps = append(smps, structs.Sample{
			JobID: "a", Namespace: "default", Role: structs.RoleWorker, NumWorkers: 1, GPUType: fmt.Sprintf("T%02d", i),
			StepTimeS: 0.5, LocalBatchSize: 32,
		})
	}
	s.Ingest(smps)
	s.Snapshot(nil, 0)

	types := s.Summaries()[0].Goodput.ByType
	must.SliceLen(t, structs.MaxModelGPUTypes, types)
	must.EqOp(t, "A100", types[0].Type)
	must.EqOp(t, fmt.Sprintf("T%02d", structs.MaxModelGPUTypes-2), types[len(types)-1].Type)
	a100 := types[0]
	must.EqOp(t, configs, a100.Configs)
	must.SliceLen(t, structs.MaxModelTypePoints, a100.Points)
	for i, p := range a100.Points {
		must.EqOp(t, i+1, p.LocalBatch, must.Sprint("sorted by local batch, the first kept"))
	}
}
