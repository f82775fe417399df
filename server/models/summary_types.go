package models

import (
	"maps"
	"slices"

	"github.com/caravan-sched/caravan/structs"
)

// typeSummaries is what the throughput model of each GPU type says
// (GoodputModel.ByType): for each type with a fit, sorted by type, its
// parameters and errors and each configuration measured on it, with the
// measured step time and the fit's there. It keeps the first
// structs.MaxModelGPUTypes types and the first structs.MaxModelTypePoints
// configurations of each, so that the model committed with a plan stays
// bounded; nil when no type has a fit. It is deterministic.
func (g *goodputEstimator) typeSummaries() []structs.GPUTypeModel {
	var out []structs.GPUTypeModel
	for _, typ := range slices.Sorted(maps.Keys(g.byType)) {
		if len(out) == structs.MaxModelGPUTypes {
			break
		}
		if s, ok := g.byType[typ].summary(typ); ok {
			out = append(out, s)
		}
	}
	return out
}

// summary is the table's fit against its measurements, as a GPU type's
// entry of GoodputModel.ByType; false without a fit.
func (t *perfTable) summary(typ string) (structs.GPUTypeModel, bool) {
	f := t.fit
	if f == nil {
		return structs.GPUTypeModel{}, false
	}
	pts := t.points()
	s := structs.GPUTypeModel{
		Type: typ, Perf: f.Params.Slice(), FitError: f.Error, MaxFitError: f.MaxError, Configs: len(pts),
		Points: make([]structs.PerfPoint, 0, min(len(pts), structs.MaxModelTypePoints)),
	}
	for _, p := range pts[:min(len(pts), structs.MaxModelTypePoints)] {
		s.Points = append(s.Points, structs.PerfPoint{
			Nodes: p.Nodes, Replicas: p.Replicas, LocalBatch: int(p.Local),
			StepTimeS: p.StepTime, ModelStepTimeS: f.Params.StepTime(p.Nodes, p.Replicas, p.Local, 0),
		})
	}
	return s, true
}
