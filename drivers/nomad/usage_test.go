package nomad

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/google/go-cmp/cmp"
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
	host := &eventHost{}
	d := &Driver{
		cfg: Config{Logger: hclog.NewNullLogger(), Host: host}, log: hclog.NewNullLogger(), jobs: map[structs.JobKey]*jobState{},
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
	must.Eq(t, []*structs.Event{{
		Type: structs.EventTaskOOMKilled, Namespace: "default", JobID: "j",
		Message: "worker 3 on node n1 was killed for memory (limit 128 MB, most measured 121 MB; inferred from signal 9)",
		Details: map[string]string{"Role": "worker", "Rank": "3", "NodeID": "n1", "AllocID": "a1",
			"MemoryLimitMB": "128", "Inferred": "true", "MaxMemoryMB": "121"},
	}}, host.events)

	// The same kill read again is no new one.
	u, again := d.usage(context.Background(), &structs.Job{Namespace: "default", ID: "j"}, key, job, allocs)
	must.False(t, again)
	must.Eq(t, 1, u.Tasks[1].OOMKills)
	must.SliceLen(t, 1, host.events)
}

// eventHost is a structs.DriverHost that keeps the events recorded.
type eventHost struct{ events []*structs.Event }

func (h *eventHost) LastSample(structs.JobKey) (structs.Sample, bool) { return structs.Sample{}, false }
func (h *eventHost) JobReportToken(structs.JobKey) string             { return "" }
func (h *eventHost) Event(_ context.Context, ev *structs.Event) error {
	h.events = append(h.events, ev)
	return nil
}

// TestReadStats reads allocation stats as a Nomad v1.11 client answers
// them (captured from a raw_exec task holding a 100 MiB buffer, on
// cgroups v1): raw_exec measures RSS and Swap only, its Usage is 0, and
// timestamps are Unix nanoseconds. A client without
// telemetry { publish_allocation_metrics = true } answers with no task.
func TestReadStats(t *testing.T) {
	cases := []struct {
		file  string
		tasks int
		want  map[string]*taskStats
	}{
		{
			file: "alloc_stats_raw_exec.json", tasks: 1,
			want: map[string]*taskStats{"t": {
				cpuMHz: 15.562730811079472,
				mem:    []memPoint{{at: 1795549609837689747, mb: 113418240.0 / (1 << 20)}},
			}},
		},
		{file: "alloc_stats_unpublished.json", tasks: 0, want: map[string]*taskStats{}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", tc.file))
			must.NoError(t, err)
			var path string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				path = r.URL.Path
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			client, err := api.NewClient(&api.Config{Address: srv.URL})
			must.NoError(t, err)
			d := &Driver{client: client, stats: map[string]map[string]*taskStats{}}

			n, err := d.readStats(context.Background(), "a1", "default")
			must.NoError(t, err)
			must.Eq(t, "/v1/client/allocation/a1/stats", path)
			must.Eq(t, tc.tasks, n)
			must.Eq(t, tc.want, d.stats["a1"], must.Cmp(cmp.AllowUnexported(taskStats{}, memPoint{})))
			if tc.tasks > 0 {
				must.Eq(t, 108, math.Round(d.stats["a1"]["t"].last()), must.Sprint("raw_exec's RSS in MB"))
			}
		})
	}
}

// TestTaskReading converts one task's stats: the cgroup's Usage when
// Nomad measured it, else RSS; the allocation's timestamp when the task's
// is missing; non-finite CPU dropped.
func TestTaskReading(t *testing.T) {
	mem := func(measured []string, rss, usage uint64) *api.MemoryStats {
		return &api.MemoryStats{Measured: measured, RSS: rss, Usage: usage}
	}
	cases := []struct {
		name string
		tu   *api.TaskResourceUsage
		want reading
		ok   bool
	}{
		{name: "no resource usage", tu: &api.TaskResourceUsage{Timestamp: 5}},
		{
			name: "raw_exec: RSS and Swap measured",
			tu: &api.TaskResourceUsage{Timestamp: 5, ResourceUsage: &api.ResourceUsage{
				CpuStats: &api.CpuStats{TotalTicks: 250}, MemoryStats: mem([]string{"RSS", "Swap"}, 64<<20, 0)}},
			want: reading{at: 5, cpuMHz: 250, cpuOK: true, memMB: 64, memOK: true}, ok: true,
		},
		{
			name: "exec: the cgroup's usage measured",
			tu: &api.TaskResourceUsage{Timestamp: 5, ResourceUsage: &api.ResourceUsage{
				MemoryStats: mem([]string{"RSS", "Cache", "Swap", "Usage", "Max Usage"}, 64<<20, 96<<20)}},
			want: reading{at: 5, memMB: 96, memOK: true}, ok: true,
		},
		{
			name: "the allocation's timestamp, CPU not finite",
			tu: &api.TaskResourceUsage{ResourceUsage: &api.ResourceUsage{
				CpuStats: &api.CpuStats{TotalTicks: math.NaN()}, MemoryStats: mem([]string{"RSS"}, 1<<20, 0)}},
			want: reading{at: 9, memMB: 1, memOK: true}, ok: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := taskReading(&api.AllocResourceUsage{Timestamp: 9}, tc.tu)
			must.Eq(t, tc.ok, ok)
			must.Eq(t, tc.want, r, must.Cmp(cmp.AllowUnexported(reading{})))
		})
	}
}

// TestStatsWarner logs the first failure at warn level, then at most one
// a minute with how many were only logged at debug in between.
func TestStatsWarner(t *testing.T) {
	var buf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Warn})
	var w statsWarner
	t0 := time.Unix(1000, 0)
	for _, s := range []int{0, 10, 30, 59, 60, 61} {
		w.log(log, t0.Add(time.Duration(s)*time.Second), "a1", errNoTaskStats)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	must.SliceLen(t, 2, lines)
	must.StrContains(t, lines[0], "failures_since_last_warning=0")
	must.StrContains(t, lines[1], "failures_since_last_warning=3")
	must.StrContains(t, lines[1], "publish_allocation_metrics")
}
