package nomad

import (
	"context"
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// Task events as Nomad v1.11 records them (nomad/structs TaskEvent
// setters): a Terminated event carries exit_code, signal, oom_killed and
// exit_message in its details.
func started(at int64) *api.TaskEvent {
	return &api.TaskEvent{Type: api.TaskStarted, Time: at, Details: map[string]string{}}
}

func terminated(at int64, exit, signal string, oom bool) *api.TaskEvent {
	o := "false"
	if oom {
		o = "true"
	}
	return &api.TaskEvent{Type: api.TaskTerminated, Time: at, Details: map[string]string{
		"exit_code": exit, "signal": signal, "oom_killed": o, "exit_message": "",
	}}
}

func event(typ string, at int64, details map[string]string) *api.TaskEvent {
	if details == nil {
		details = map[string]string{}
	}
	return &api.TaskEvent{Type: typ, Time: at, Details: details}
}

func TestOOMKills(t *testing.T) {
	const limit = 128
	peakOf := func(points ...memPoint) func(int64, int64) (float64, bool) {
		st := &taskStats{mem: points}
		return st.peak
	}
	received := event(api.TaskReceived, 1, nil)
	cases := []struct {
		name     string
		events   []*api.TaskEvent
		peak     func(int64, int64) (float64, bool)
		want     []int64
		inferred bool
	}{
		{
			name: "raw_exec killed by the kernel near its limit",
			events: []*api.TaskEvent{received, started(10), terminated(50, "137", "9", false),
				event(api.TaskRestarting, 51, map[string]string{"restart_reason": "Restart within policy"})},
			peak: peakOf(memPoint{20, 40}, memPoint{40, 120}), want: []int64{50}, inferred: true,
		},
		{
			name:   "exit code 137 without a signal",
			events: []*api.TaskEvent{started(10), terminated(50, "137", "0", false)},
			peak:   peakOf(memPoint{40, 127}), want: []int64{50}, inferred: true,
		},
		{
			name:   "no memory read during the run",
			events: []*api.TaskEvent{started(10), terminated(50, "137", "9", false)},
			peak:   peakOf(memPoint{5, 10}), want: []int64{50}, inferred: true,
		},
		{
			name:   "oom_killed set by the exec driver",
			events: []*api.TaskEvent{started(10), terminated(50, "137", "9", true)},
			peak:   peakOf(), want: []int64{50},
		},
		{
			name:   "SIGKILL from outside while far below the limit",
			events: []*api.TaskEvent{started(10), terminated(50, "137", "9", false)},
			peak:   peakOf(memPoint{40, 10}),
		},
		{
			name: "killed by Nomad after its kill timeout",
			events: []*api.TaskEvent{started(10), event(api.TaskKilling, 40, map[string]string{"kill_timeout": "5s"}),
				terminated(50, "137", "9", false), event(api.TaskKilled, 51, nil)},
			peak: peakOf(memPoint{30, 125}),
		},
		{
			name: "SIGKILL sent through Nomad",
			events: []*api.TaskEvent{started(10), event(api.TaskSignaling, 40, map[string]string{"task_signal": "killed"}),
				terminated(50, "", "9", false)},
			peak: peakOf(memPoint{30, 125}),
		},
		{
			name: "restart asked of Nomad",
			events: []*api.TaskEvent{started(10), event(api.TaskRestartSignal, 40, nil),
				terminated(50, "137", "9", false)},
			peak: peakOf(memPoint{30, 125}),
		},
		{
			name: "a checkpoint signal does not hide a later OOM",
			events: []*api.TaskEvent{started(10), event(api.TaskSignaling, 30, map[string]string{"task_signal": "user defined signal 1"}),
				terminated(50, "137", "9", false)},
			peak: peakOf(memPoint{45, 110}), want: []int64{50}, inferred: true,
		},
		{
			name:   "a failure that is not a kill",
			events: []*api.TaskEvent{started(10), terminated(50, "1", "0", false)},
			peak:   peakOf(memPoint{45, 127}),
		},
		{
			name: "a Nomad kill is forgotten at the next start",
			events: []*api.TaskEvent{started(10), event(api.TaskKilling, 20, nil), terminated(30, "137", "9", false),
				started(40), terminated(90, "137", "9", false), started(100), terminated(150, "137", "9", false)},
			peak: peakOf(memPoint{35, 126}, memPoint{80, 120}, memPoint{140, 125}), want: []int64{90, 150}, inferred: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kills := oomKills(tc.events, limit, tc.peak)
			var at []int64
			for _, k := range kills {
				at = append(at, k.at)
				must.Eq(t, tc.inferred, k.inferred)
			}
			must.Eq(t, tc.want, at)
		})
	}
}

func TestAllocIndex(t *testing.T) {
	for name, want := range map[string]int{
		"caravan-a.worker-n1[0]": 0, "caravan-a.worker-n1-2[13]": 13, "caravan-a.worker": 0, "x[y]": 0, "x[-1]": 0,
	} {
		must.Eq(t, want, allocIndex(name), must.Sprint(name))
	}
}

// TestUsage builds a job's usage from its allocations as Status reads
// them: the rank from the group's rank base and the allocation's index,
// the limits from the job's tasks, the measured stats, the restarts, and
// an OOM kill of the current generation recorded once as an event.
func TestUsage(t *testing.T) {
	d := &Driver{
		cfg: Config{Logger: hclog.NewNullLogger()}, log: hclog.NewNullLogger(), jobs: map[structs.JobKey]*jobState{},
		stats: map[string]map[string]*taskStats{
			"a1": {"worker": {cpuMHz: 90, mem: []memPoint{{20, 50}, {40, 121}}}},
			"a2": {"ps": {cpuMHz: 30, mem: []memPoint{{20, 12}}}},
		},
	}
	job := &api.Job{TaskGroups: []*api.TaskGroup{
		{Name: new("worker-n1"), Meta: map[string]string{metaGroupRole: "worker", metaGroupNode: "n1", metaGroupRankBase: "2"},
			Tasks: []*api.Task{{Name: "worker", Resources: &api.Resources{CPU: new(100), MemoryMB: new(128)}}}},
		{Name: new("ps-n2"), Meta: map[string]string{metaGroupRole: "ps", metaGroupNode: "n2", metaGroupRankBase: "0"},
			Tasks: []*api.Task{{Name: "ps", Resources: &api.Resources{CPU: new(200), MemoryMB: new(64)}}}},
	}}
	allocs := []*api.AllocationListStub{
		{ID: "a1", Name: "caravan-j.worker-n1[1]", TaskGroup: "worker-n1", NodeID: "n1", ClientStatus: api.AllocClientStatusRunning,
			TaskStates: map[string]*api.TaskState{"worker": {Restarts: 1, Events: []*api.TaskEvent{
				started(10), terminated(45, "137", "9", false), event(api.TaskRestarting, 46, nil), started(60)}}}},
		{ID: "a2", Name: "caravan-j.ps-n2[0]", TaskGroup: "ps-n2", NodeID: "n2", ClientStatus: api.AllocClientStatusRunning,
			TaskStates: map[string]*api.TaskState{"ps": {Events: []*api.TaskEvent{started(10)}}}},
	}
	key := structs.JobKey{Namespace: "default", ID: "j"}
	u, first := d.usage(context.Background(), &structs.Job{Namespace: "default", ID: "j"}, key, job, allocs)
	must.True(t, first)
	must.Eq(t, []*structs.TaskUsage{
		{Role: "ps", Rank: 0, NodeID: "n2", AllocID: "a2", CPUMHz: 30, MemoryMB: 12, MaxMemoryMB: 12, CPULimitMHz: 200, MemoryLimitMB: 64, Source: "nomad"},
		{Role: "worker", Rank: 3, NodeID: "n1", AllocID: "a1", CPUMHz: 90, MemoryMB: 121, CPULimitMHz: 100, MemoryLimitMB: 128,
			Restarts: 1, OOMKills: 1, LastOOM: 45, Source: "nomad"},
	}, u.Tasks)
	must.Eq(t, "worker 3 on node n1 was killed for memory (limit 128 MB)", oomMessage(u))

	// The same kill read again is no new one.
	u, again := d.usage(context.Background(), &structs.Job{Namespace: "default", ID: "j"}, key, job, allocs)
	must.False(t, again)
	must.Eq(t, 1, u.Tasks[1].OOMKills)
}
