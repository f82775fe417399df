package server

import (
	"testing"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestUsageDue: the leader commits a job's usage at a bounded rate: the
// first usage and new tasks at once, a new OOM kill or restart at once
// and urgently, and otherwise only once the interval passed and some
// task moved by more than 5%.
func TestUsageDue(t *testing.T) {
	const interval = 30 * time.Second
	t0 := time.Unix(1000, 0)
	task := func(cpu, mem float64) *structs.TaskUsage {
		return &structs.TaskUsage{Role: structs.RoleWorker, AllocID: "a1", CPUMHz: cpu, MemoryMB: mem, MemoryLimitMB: 128, Source: structs.UsageSourceNomad}
	}
	job := func(ts ...*structs.TaskUsage) *structs.JobUsage { return &structs.JobUsage{JobID: "j", Tasks: ts} }
	prev := job(task(100, 50))
	cases := []struct {
		name        string
		prev        *structs.JobUsage
		after       time.Duration
		u           *structs.JobUsage
		due, urgent bool
	}{
		{"first usage", nil, 0, job(task(100, 50)), true, false},
		{"same usage long after", prev, time.Hour, job(task(100, 50)), false, false},
		{"small move after the interval", prev, interval, job(task(104, 52)), false, false},
		{"big move before the interval", prev, interval - time.Second, job(task(150, 50)), false, false},
		{"big CPU move after the interval", prev, interval, job(task(150, 50)), true, false},
		{"big memory move after the interval", prev, interval, job(task(100, 60)), true, false},
		{"a task more", prev, time.Second, job(task(100, 50), &structs.TaskUsage{Role: structs.RoleWorker, Rank: 1}), true, false},
		{"a new allocation", prev, time.Second, job(&structs.TaskUsage{Role: structs.RoleWorker, AllocID: "a2", CPUMHz: 100, MemoryMB: 50}), true, false},
		{"an OOM kill", prev, time.Second, job(&structs.TaskUsage{Role: structs.RoleWorker, AllocID: "a1", CPUMHz: 100, MemoryMB: 50, OOMKills: 1, LastOOM: 5}), true, true},
		{"a restart", prev, 0, job(&structs.TaskUsage{Role: structs.RoleWorker, AllocID: "a1", CPUMHz: 100, MemoryMB: 50, Restarts: 1}), true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			due, urgent := usageDue(tc.prev, t0, t0.Add(tc.after), interval, tc.u)
			must.Eq(t, tc.due, due)
			must.Eq(t, tc.urgent, urgent)
		})
	}
}

// TestReportedStepTimes: tasks the driver has no step time of take the
// latest their trainers reported from the same allocation; a sample of
// another allocation of the same rank, or a step time the driver
// measured, is left alone.
func TestReportedStepTimes(t *testing.T) {
	js := &structs.JobSamples{
		Samples: []structs.Sample{
			{Role: structs.RoleWorker, AllocID: "w0", TaskStepTimeS: 0.5, Time: 1},
			{Role: structs.RoleWorker, AllocID: "w0", TaskStepTimeS: 0.6, Time: 2},
			{Role: structs.RoleWorker, TaskStepTimeS: 0.9, Time: 3},
		},
		Tasks: []structs.Sample{
			{Role: structs.RolePS, Rank: 0, AllocID: "p0", TaskStepTimeS: 0.1},
			{Role: structs.RoleWorker, Rank: 1, AllocID: "w1-old", TaskStepTimeS: 2},
			{Role: structs.RoleWorker, Rank: 2, AllocID: "w2", TaskStepTimeS: 1.5},
		},
	}
	u := &structs.JobUsage{Tasks: []*structs.TaskUsage{
		{Role: structs.RolePS, Rank: 0, AllocID: "p0"},
		{Role: structs.RoleWorker, Rank: 0, AllocID: "w0"},
		{Role: structs.RoleWorker, Rank: 1, AllocID: "w1-new"},
		{Role: structs.RoleWorker, Rank: 2, AllocID: "w2", TaskStepTimeS: 0.7},
		{Role: structs.RoleWorker, Rank: 3},
	}}
	reportedStepTimes(u, js)
	var got []float64
	for _, tu := range u.Tasks {
		got = append(got, tu.TaskStepTimeS)
	}
	must.Eq(t, []float64{0.1, 0.6, 0, 0.7, 0}, got)
	reportedStepTimes(u, nil)
}
