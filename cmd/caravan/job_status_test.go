package main

import (
	"regexp"
	"testing"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestFormatJobSummary_PlacementFailure: a pending job whose placement is
// paused gets a Placement Failure section, the metric's lines when the
// placement carries one and its reason otherwise; a running job does not.
func TestFormatJobSummary_PlacementFailure(t *testing.T) {
	metric := &structs.PlacementMetric{
		Minimum: structs.Shape{PS: 1, Workers: 1}, Role: structs.RolePS, NodesEvaluated: 4,
		ConstraintFiltered: map[string]int{"device nvidia/gpu: ${device.attr.memory} >= 32 GiB": 3},
		DimensionExhausted: map[string]int{"gpu": 1},
	}
	summary := func(status string, p *structs.Placement) *api.JobSummary {
		j := structs.MockJob()
		j.Status = status
		return &api.JobSummary{Job: j, Placement: &structs.JobPlacement{PlanIndex: 7, Algorithm: "optimus", Placement: p}}
	}
	paused := &structs.Placement{JobID: "resnet50", Reason: metric.String(), Metric: metric}

	out := formatJobSummary(summary(structs.JobStatusPending, paused), nil, false)
	must.StrContains(t, out, "\n\nPlacement Failure\n"+
		"the minimum of 1 ps × 1 workers does not fit: no node has room for a ps\n"+
		"* 4 nodes evaluated\n"+
		"* device nvidia/gpu: ${device.attr.memory} >= 32 GiB filtered 3 of 4 nodes\n"+
		"* gpu exhausted on 1 node\n\nModel\n")
	must.StrNotContains(t, out, "Reason", must.Sprint("the section replaces the one-line reason"))

	out = formatJobSummary(summary(structs.JobStatusPending, &structs.Placement{JobID: "resnet50", Reason: "fifo: waiting for room"}), nil, false)
	must.StrContains(t, out, "\n\nPlacement Failure\nfifo: waiting for room\n\nModel\n")

	running := &structs.Placement{JobID: "resnet50", NumPS: 1, NumWorkers: 1, Reason: "grew",
		Nodes: []*structs.NodeTasks{{NodeID: "n1", PS: 1, Workers: 1}}}
	out = formatJobSummary(summary(structs.JobStatusRunning, running), nil, false)
	must.StrNotContains(t, out, "Placement Failure")
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Reason\s+= grew$`), out)
}
