package main

import (
	"regexp"
	"testing"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestFormatJobSummary_PlacementFailure: a pending job whose placement is
// paused gets a Placement Failure section, the metric's lines when the
// placement carries one and its reason otherwise; a running job does not.
func TestFormatJobSummary_PlacementFailure(t *testing.T) {
	metric := &api.PlacementMetric{
		Minimum: api.Shape{PS: 1, Workers: 1}, Role: api.RolePS, NodesEvaluated: 4,
		ConstraintFiltered: map[string]int{"device nvidia/gpu: ${device.attr.memory} >= 32 GiB": 3},
		DimensionExhausted: map[string]int{"gpu": 1},
	}
	summary := func(status string, p *api.Placement) *api.JobSummary {
		j := mockJob(t)
		j.Status = status
		return &api.JobSummary{Job: j, Placement: &api.JobPlacement{PlanIndex: 7, Algorithm: "optimus", Placement: p}}
	}
	paused := &api.Placement{JobID: "resnet50", Reason: "the minimum does not fit", Metric: metric}

	out := formatJobSummary(summary(api.JobStatusPending, paused), nil, false)
	must.StrContains(t, out, "\n\nPlacement Failure\n"+
		"waiting for capacity: the minimum of 1 ps and 1 worker does not fit: no node has room for a ps\n"+
		"* 4 nodes evaluated\n"+
		"* device nvidia/gpu: ${device.attr.memory} >= 32 GiB filtered 3 of 4 nodes\n"+
		"* gpu exhausted on 1 node\n\nModel\n")
	must.StrNotContains(t, out, "Reason", must.Sprint("the section replaces the one-line reason"))

	out = formatJobSummary(summary(api.JobStatusPending, &api.Placement{JobID: "resnet50", Reason: "fifo: waiting for room"}), nil, false)
	must.StrContains(t, out, "\n\nPlacement Failure\nfifo: waiting for room\n\nModel\n")

	running := &api.Placement{JobID: "resnet50", NumPS: 1, NumWorkers: 1, Reason: "grew",
		Nodes: []*api.NodeTasks{{NodeID: "n1", PS: 1, Workers: 1}}}
	out = formatJobSummary(summary(api.JobStatusRunning, running), nil, false)
	must.StrNotContains(t, out, "Placement Failure")
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Reason\s+= grew$`), out)
}

// TestFormatJobSummary_Usage: -verbose shows each task's committed usage
// against its limits, its OOM kills and restarts, and who measured it;
// without -verbose there is no Usage section.
func TestFormatJobSummary_Usage(t *testing.T) {
	sum := &api.JobSummary{Job: mockJob(t), Usage: &api.JobUsage{Tasks: []*api.TaskUsage{
		{Role: api.RolePS, NodeID: "n1", CPUMHz: 25, MemoryMB: 12.4, MaxMemoryMB: 13, CPULimitMHz: 100, MemoryLimitMB: 64, Source: api.UsageSourceNomad},
		{Role: api.RoleWorker, Rank: 1, NodeID: "n2", CPUMHz: 80, MemoryMB: 121, MaxMemoryMB: 127, CPULimitMHz: 100, MemoryLimitMB: 256,
			OOMKills: 1, Restarts: 2, TaskStepTimeS: 0.25312, Source: api.UsageSourceNomad},
	}}}
	out := formatJobSummary(sum, nil, true)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Usage\nRole\s+Rank\s+Node\s+CPU MHz\s+Memory MB\s+Max MB\s+Step Time\s+OOM Kills\s+Restarts\s+Source\s+Updated$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^ps\s+0\s+n1\s+25/100 \(25%\)\s+12/64 \(19%\)\s+13\s+-\s+0\s+0\s+nomad\s+-$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^worker\s+1\s+n2\s+80/100 \(80%\)\s+121/256 \(47%\)\s+127\s+253.1ms\s+1\s+2\s+nomad\s+-$`), out)
	must.StrNotContains(t, formatJobSummary(sum, nil, false), "Usage")

	sum.Usage = nil
	must.StrContains(t, formatJobSummary(sum, nil, true), "\n\nUsage\nNo usage measured yet\n")
}

// TestFormatJobSummary_Goodput: the goodput model's parameters, noise
// scale and batch show in the Model section, its fit error with -verbose.
func TestFormatJobSummary_Goodput(t *testing.T) {
	sum := &api.JobSummary{Job: mockJob(t), Model: &api.JobModel{Goodput: &api.GoodputModel{
		Perf: []float64{0.0173, 0.0007, 0.121, 0.0024, 0.0325, 1e-8, 2}, FitError: 0.078, MaxFitError: 0.443, Configs: 9,
		NoiseScale: 512, RefBatch: 128, Batch: 1024, Efficiency: 0.4, Goodput: 1234.5,
	}}}
	out := formatJobSummary(sum, nil, false)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Goodput\s+= α_c=0.0173 β_c=0.0007 α_n=0.121 β_n=0.0024 α_r=0.0325 β_r=1e-08 γ=2, noise scale 512 at batch 128$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Batch\s+= 1024, efficiency 0.40, goodput 1234.5 samples/s$`), out)
	must.StrNotContains(t, out, "Goodput Fit Error")
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Goodput Fit Error\s+= 7.8% mean, 44.3% max over 9 configurations$`), formatJobSummary(sum, nil, true))
}

// TestFormatJobSummary_ThroughputByType: -verbose shows a section per GPU
// type with its throughput model and fit error, and each configuration
// measured there with the measured and the model's step time and the
// model's relative error; a type whose points were capped says how many
// show. Without -verbose there is no section.
func TestFormatJobSummary_ThroughputByType(t *testing.T) {
	sum := &api.JobSummary{Job: mockJob(t), Model: &api.JobModel{Goodput: &api.GoodputModel{
		Perf: []float64{0.05, 0.0015625, 1e-8, 1e-8, 1e-8, 1e-8, 1}, Configs: 5,
		ByType: []api.GPUTypeModel{
			{Type: "A100", Perf: []float64{0.05, 0.0015625, 1e-8, 1e-8, 1e-8, 1e-8, 1}, FitError: 0.004, MaxFitError: 0.012, Configs: 2,
				Points: []api.PerfPoint{
					{Nodes: 1, Replicas: 1, LocalBatch: 32, StepTimeS: 0.1, ModelStepTimeS: 0.1012},
					{Nodes: 2, Replicas: 8, LocalBatch: 128, StepTimeS: 0.25, ModelStepTimeS: 0.24},
				}},
			{Type: "Tesla T4", Perf: []float64{0.2, 0.00625, 1e-8, 1e-8, 1e-8, 1e-8, 1}, FitError: 0.01, MaxFitError: 0.01, Configs: 40,
				Points: []api.PerfPoint{{Nodes: 1, Replicas: 1, LocalBatch: 32, StepTimeS: 0.4, ModelStepTimeS: 0.4}}},
		},
	}}}
	out := formatJobSummary(sum, nil, true)
	must.StrContains(t, out, "\n\nThroughput by GPU Type\n"+
		"GPU Type \"A100\"\n"+
		"Model     = α_c=0.05 β_c=0.0015625 α_n=1e-08 β_n=1e-08 α_r=1e-08 β_r=1e-08 γ=1\n"+
		"Fit Error = 0.4% mean, 1.2% max over 2 configurations\n"+
		"\n"+
		"Nodes  Replicas  Local Batch  Measured Step  Model Step  Error\n"+
		"1      1         32           100ms          101.2ms     +1.2%\n"+
		"2      8         128          250ms          240ms       -4.0%\n"+
		"\n"+
		"GPU Type \"Tesla T4\"\n"+
		"Model     = α_c=0.2 β_c=0.00625 α_n=1e-08 β_n=1e-08 α_r=1e-08 β_r=1e-08 γ=1\n"+
		"Fit Error = 1.0% mean, 1.0% max over 40 configurations\n"+
		"\n"+
		"Nodes  Replicas  Local Batch  Measured Step  Model Step  Error\n"+
		"1      1         32           400ms          400ms       +0.0%\n"+
		"(1 of 40 configurations shown)\n\nUsage\n")
	must.StrNotContains(t, formatJobSummary(sum, nil, false), "Throughput by GPU Type")

	sum.Model.Goodput.ByType = nil
	must.StrNotContains(t, formatJobSummary(sum, nil, true), "Throughput by GPU Type", must.Sprint("a fleet without types"))
}

// TestFormatJobs_GPUTypes: the job list names the GPU types of what runs
// of each job, "-" for none.
func TestFormatJobs_GPUTypes(t *testing.T) {
	out := formatJobs([]*api.JobListStub{
		{ID: "mixed", Namespace: "default", Status: api.JobStatusRunning, NumWorkers: 3, GPUs: 3, GPUTypes: []string{"A100-SXM4-40GB", "Tesla T4"}},
		{ID: "cpu", Namespace: "default", Status: api.JobStatusRunning, NumWorkers: 1},
	})
	must.RegexMatch(t, regexp.MustCompile(`(?m)^ID\s+Namespace\s+Status\s+Version\s+PS\s+Workers\s+GPUs\s+GPU Type\s+Progress\s+ETA\s+Submit Date$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^mixed\s+default\s+running\s+0\s+0\s+3\s+3\s+A100-SXM4-40GB, Tesla T4\s+-\s+-\s+-$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^cpu\s+default\s+running\s+0\s+0\s+1\s+0\s+-\s+-\s+-\s+-$`), out)
}

// mockJob is structs.MockJob as the API client's Job.
func mockJob(t *testing.T) *api.Job {
	t.Helper()
	job, err := jobspec.APIJob(structs.MockJob())
	must.NoError(t, err)
	return job
}

// TestFormatJobSummary_Rejected: a rejected job declared in Nomad shows
// where it was declared and each error on its own line, and no
// placement or model.
func TestFormatJobSummary_Rejected(t *testing.T) {
	job := &api.Job{ID: "typo", Name: "typo", Namespace: "default", Status: api.JobStatusRejected,
		StatusDescription: "typo (submitted to Nomad, version 0):12:9: Missing required argument\ntypo (submitted to Nomad, version 0):18:13: Unsupported argument",
		Nomad:             &api.NomadSource{JobModifyIndex: 42}}
	out := formatJobSummary(&api.JobSummary{Job: job}, nil, false)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Status\s+= rejected$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Declared In\s+= Nomad job "typo", version at job modify index 42,`), out)
	must.StrHasSuffix(t, "\n\nRejected\n"+
		"typo (submitted to Nomad, version 0):12:9: Missing required argument\n"+
		"typo (submitted to Nomad, version 0):18:13: Unsupported argument", out)
	must.StrNotContains(t, out, "Placement")
	must.StrNotContains(t, out, "Model")
}

// TestFormatJobSummary_GPUTypes: a job placed on a mixed fleet shows the
// GPU types it runs on, sorted and once each, and each node's type in the
// placement table ("-" for a node without GPUs); what runs while it differs
// shows its nodes' types too. Without types there is no column.
func TestFormatJobSummary_GPUTypes(t *testing.T) {
	p := &api.Placement{JobID: "resnet50", NumPS: 1, NumWorkers: 5, Reason: "fifo",
		Nodes: []*api.NodeTasks{{NodeID: "n1", Workers: 2}, {NodeID: "n2", Workers: 2}, {NodeID: "n3", PS: 1}, {NodeID: "n4", Workers: 1}}}
	running := &api.Placement{JobID: "resnet50", NumWorkers: 2, Nodes: []*api.NodeTasks{{NodeID: "n1", Workers: 2}}}
	sum := &api.JobSummary{Job: mockJob(t),
		Placement: &api.JobPlacement{PlanIndex: 7, Algorithm: "fifo", Placement: p},
		Observed:  &api.Observed{Placement: running},
		GPUTypes:  map[string]string{"n1": "Tesla T4", "n2": "A100-SXM4-40GB", "n4": "Tesla T4"},
	}
	out := formatJobSummary(sum, nil, false)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^GPU Type\s+= A100-SXM4-40GB, Tesla T4$`), out)
	must.StrContains(t, out, "\n\n"+
		"Node ID  Role    Count  GPU Type\n"+
		"n1       worker  2      Tesla T4\n"+
		"n2       worker  2      A100-SXM4-40GB\n"+
		"n3       ps      1      -\n"+
		"n4       worker  1      Tesla T4\n")
	must.StrContains(t, out, "\n\nRunning\nTasks = 2 workers on 1 node\n\n"+
		"Node ID  Role    Count  GPU Type\n"+
		"n1       worker  2      Tesla T4\n")

	sum.GPUTypes, sum.Observed = nil, nil
	out = formatJobSummary(sum, nil, false)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^GPU Type\s+= -$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Node ID\s+Role\s+Count$`), out)
}
