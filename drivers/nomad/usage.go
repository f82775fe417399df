package nomad

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
)

// maxMemPoints bounds the memory readings kept per task, enough to find
// the peak of the last minutes at the default UsageInterval.
const maxMemPoints = 64

// cpuSmoothing is the weight of a new CPU reading in the moving average.
const cpuSmoothing = 0.5

// oomPeakFraction is how close to its memory limit a task killed by
// SIGKILL must have been measured for the kill to count as an OOM kill.
const oomPeakFraction = 0.8

// taskStats is what the stats poller read of one task of an allocation.
type taskStats struct {
	// cpuMHz is a moving average of Nomad's TotalTicks (MHz).
	cpuMHz float64
	// mem holds the latest memory readings, oldest first.
	mem []memPoint
}

// memPoint is one memory reading: when, and the task's RSS (or cgroup
// usage, whichever Nomad measured), in MB.
type memPoint struct {
	at int64
	mb float64
}

// last returns the latest memory reading, 0 when there is none.
func (t *taskStats) last() float64 {
	if t == nil || len(t.mem) == 0 {
		return 0
	}
	return t.mem[len(t.mem)-1].mb
}

// peak returns the most memory read in [from, to] (Unix nanoseconds);
// ok is false when nothing was read then.
func (t *taskStats) peak(from, to int64) (mb float64, ok bool) {
	if t == nil {
		return 0, false
	}
	for _, p := range t.mem {
		if p.at >= from && p.at <= to {
			mb, ok = max(mb, p.mb), true
		}
	}
	return mb, ok
}

// statsWarnEvery is how often a failing stats call is logged at warn
// level; the failures in between are counted and logged at debug.
const statsWarnEvery = time.Minute

// watchUsage reads the stats of the allocations Status last saw running,
// one at a time, until ctx ends. Status only reads what it cached: no
// Nomad call of it holds the leader's loop.
//
// Each round reads every allocation once, its calls spread evenly over
// the round: a round lasts UsageInterval, or n/UsageRate seconds for n
// allocations when that is longer, so that the stats calls never exceed
// UsageRate a second, whatever the number of jobs. With the defaults (10s,
// 4 a second) 40 allocations are read every 10 s; 200 jobs of 2 tasks
// each make 4 calls a second and each allocation is read every 100 s
// (where one burst of 400 calls every 10 s, 40 a second, read them
// before). Memory peaks, and the OOM kills inferred from them, are then
// measured less often.
func (d *Driver) watchUsage(ctx context.Context) {
	var warn statsWarner
	// empty holds since when each allocation's stats had no task.
	empty := map[string]time.Time{}
	round := time.Now().Add(d.cfg.UsageInterval)
	for {
		if !sleep(ctx, time.Until(round)) {
			return
		}
		d.mu.Lock()
		watched := maps.Clone(d.watched)
		d.mu.Unlock()
		spacing := d.usageSpacing(len(watched))
		next := round
		for id, ns := range watched {
			if !sleep(ctx, time.Until(next)) {
				return
			}
			next = next.Add(spacing)
			d.mu.Lock()
			_, still := d.watched[id]
			d.mu.Unlock()
			if !still {
				continue // its job moved on since the round began
			}
			tasks, err := d.readStats(ctx, id, ns)
			now := time.Now()
			switch {
			case err != nil:
				if ctx.Err() == nil {
					warn.log(d.log, now, id, err)
				}
			case tasks > 0:
				delete(empty, id)
			default:
				since, ok := empty[id]
				if !ok {
					empty[id] = now
				} else if now.Sub(since) >= noTaskStatsGrace {
					warn.log(d.log, now, id, errNoTaskStats)
				}
			}
		}
		if round = round.Add(d.cfg.UsageInterval); next.After(round) {
			round = next
		}
		d.mu.Lock()
		for id := range d.stats {
			if _, ok := d.watched[id]; !ok {
				delete(d.stats, id)
			}
		}
		d.mu.Unlock()
		for id := range empty {
			if _, ok := watched[id]; !ok {
				delete(empty, id)
			}
		}
	}
}

// usageSpacing is the time between two stats calls of a round over n
// allocations: the round's UsageInterval shared among them, and never
// less than one UsageRate allows.
func (d *Driver) usageSpacing(n int) time.Duration {
	least := time.Duration(float64(time.Second) / d.cfg.UsageRate)
	if n == 0 {
		return least
	}
	return max(d.cfg.UsageInterval/time.Duration(n), least)
}

// errNoTaskStats is why an allocation's stats stay without any task: a
// Nomad client collects its tasks' stats only when its agent has
// telemetry { publish_allocation_metrics = true } (a -dev agent has it),
// and answers the stats API with an empty Tasks otherwise, without an
// error. Task memory then reads 0 and OOM kills cannot be told from
// other kills by the memory measured.
var errNoTaskStats = errors.New("nomad reports no task stats; the client collects them only with telemetry { publish_allocation_metrics = true }")

// noTaskStatsGrace is how long an allocation's stats may have no task
// before errNoTaskStats is logged: a task's stats appear one collection
// interval (telemetry collection_interval, default 1s) after it starts,
// and a pending allocation has none.
const noTaskStatsGrace = 30 * time.Second

// statsWarner logs failed stats calls at warn level at most once every
// statsWarnEvery, with how many failed since the last warning; the
// others go to debug. An allocation that just stopped fails once or
// twice, a client that cannot answer fails every time.
type statsWarner struct {
	last       time.Time
	suppressed int
}

func (w *statsWarner) log(log hclog.Logger, now time.Time, allocID string, err error) {
	if !w.last.IsZero() && now.Sub(w.last) < statsWarnEvery {
		w.suppressed++
		log.Debug("cannot read allocation stats", "alloc_id", allocID, "error", err)
		return
	}
	log.Warn("cannot read allocation stats", "alloc_id", allocID, "error", err,
		"failures_since_last_warning", w.suppressed)
	w.last, w.suppressed = now, 0
}

// readStats reads one allocation's stats into the cache and returns how
// many tasks they held. On an error (the allocation may have just
// stopped) the cache is kept.
func (d *Driver) readStats(ctx context.Context, allocID, namespace string) (tasks int, err error) {
	ctx, cancel := d.callContext(ctx)
	defer cancel()
	q := (&api.QueryOptions{Namespace: namespace}).WithContext(ctx)
	u, err := d.client.Allocations().Stats(&api.Allocation{ID: allocID, Namespace: namespace}, q)
	if err != nil {
		return 0, fmt.Errorf("allocation %s stats: %w", allocID, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	byTask := d.stats[allocID]
	if byTask == nil {
		byTask = map[string]*taskStats{}
		d.stats[allocID] = byTask
	}
	for name, tu := range u.Tasks {
		r, ok := taskReading(u, tu)
		if !ok {
			continue
		}
		ts := byTask[name]
		if ts == nil {
			ts = &taskStats{}
			byTask[name] = ts
		}
		ts.add(r)
		tasks++
	}
	return tasks, nil
}

// reading is what one stats call said of one task.
type reading struct {
	// at is when Nomad read it, Unix nanoseconds.
	at int64
	// cpuMHz is Nomad's TotalTicks; ok only when measured and finite.
	cpuMHz float64
	cpuOK  bool
	// memMB is the task's memory in MB (see taskReading); ok only when
	// Nomad reported memory.
	memMB float64
	memOK bool
}

// taskReading converts one task's entry of an allocation's stats. Memory
// is the cgroup's Usage when Nomad measured it (the exec and docker
// drivers), else the RSS of the task's processes (raw_exec measures only
// RSS and Swap); ok is false when the entry holds no resource usage.
func taskReading(u *api.AllocResourceUsage, tu *api.TaskResourceUsage) (r reading, ok bool) {
	if tu == nil || tu.ResourceUsage == nil {
		return reading{}, false
	}
	r.at = tu.Timestamp
	if r.at == 0 && u != nil {
		r.at = u.Timestamp
	}
	if c := tu.ResourceUsage.CpuStats; c != nil && finite(c.TotalTicks) {
		r.cpuMHz, r.cpuOK = c.TotalTicks, true
	}
	if m := tu.ResourceUsage.MemoryStats; m != nil {
		used := m.RSS
		if slices.Contains(m.Measured, "Usage") && m.Usage > 0 {
			used = m.Usage
		}
		r.memMB, r.memOK = float64(used)/(1<<20), true
	}
	return r, true
}

// add folds a reading into the task's stats.
func (t *taskStats) add(r reading) {
	if r.cpuOK {
		if len(t.mem) == 0 {
			t.cpuMHz = r.cpuMHz
		} else {
			t.cpuMHz = cpuSmoothing*r.cpuMHz + (1-cpuSmoothing)*t.cpuMHz
		}
	}
	if r.memOK {
		t.mem = append(t.mem, memPoint{at: r.at, mb: r.memMB})
		if len(t.mem) > maxMemPoints {
			t.mem = slices.Delete(t.mem, 0, len(t.mem)-maxMemPoints)
		}
	}
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) && f >= 0 }

// watch sets the allocations whose stats the poller reads: the running
// allocations of the current version of every job Status saw, by job.
func (d *Driver) watch(key structs.JobKey, allocs []*api.AllocationListStub) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, k := range d.watchedBy {
		if k == key {
			delete(d.watched, id)
			delete(d.watchedBy, id)
		}
	}
	for _, a := range allocs {
		if a.ClientStatus == api.AllocClientStatusRunning || a.ClientStatus == api.AllocClientStatusPending {
			d.watched[a.ID], d.watchedBy[a.ID] = a.Namespace, key
		}
	}
}

// unwatch stops reading the stats of a job's allocations.
func (d *Driver) unwatch(key structs.JobKey) { d.watch(key, nil) }

// oomKill is one OOM kill found in a task's events.
type oomKill struct {
	at       int64
	inferred bool // from signal 9 / exit 137, not oom_killed
	// peakMB is the most memory read during the run that was killed;
	// measured is false when none was read.
	peakMB   float64
	measured bool
}

// oomKills finds the kills for memory in a task's events, oldest first.
// A Terminated event with oom_killed=true is one (the exec and docker
// drivers set it). raw_exec never sets it (its executor does not watch
// the cgroup's OOM notifications), so a Terminated event with signal 9 or
// exit code 137 counts too, as an inference, when nothing of Nomad's
// killed the task since it last started (no Killing, Restart Signaled or
// SIGKILL Signaling event) and, if its memory was read during that run,
// the most read was at least 80% of limitMB: the kernel's OOM killer is
// then the only other sender of SIGKILL to the task. Without a reading
// the kill counts. peak reads the most memory measured in a time range
// (Unix nanoseconds); limitMB 0 disables the memory check.
func oomKills(events []*api.TaskEvent, limitMB int, peak func(from, to int64) (float64, bool)) []oomKill {
	var kills []oomKill
	var started int64
	killedByNomad := false
	for _, ev := range events {
		if ev == nil {
			continue
		}
		switch ev.Type {
		case api.TaskStarted:
			started, killedByNomad = ev.Time, false
		case api.TaskKilling, api.TaskRestartSignal:
			killedByNomad = true
		case api.TaskSignaling:
			switch ev.Details["task_signal"] {
			case "killed", "SIGKILL", "9":
				killedByNomad = true
			}
		case api.TaskTerminated:
			if ev.Details["oom_killed"] == "true" {
				mb, measured := peak(started, ev.Time)
				kills = append(kills, oomKill{at: ev.Time, peakMB: mb, measured: measured})
				continue
			}
			if killedByNomad || (ev.Details["signal"] != "9" && ev.Details["exit_code"] != "137") {
				continue
			}
			mb, measured := peak(started, ev.Time)
			if measured && limitMB > 0 && mb < oomPeakFraction*float64(limitMB) {
				continue // killed from outside, not for memory
			}
			kills = append(kills, oomKill{at: ev.Time, inferred: true, peakMB: mb, measured: measured})
		}
	}
	return kills
}

// usage builds a job's usage from its allocations of the current version
// (so OOM kills count for the current generation only), the stats the
// poller cached and the tasks' events. New OOM kills are recorded as
// TaskOOMKilled events; newOOM reports whether there was one.
func (d *Driver) usage(ctx context.Context, job *structs.Job, key structs.JobKey, info *api.Job, allocs []*api.AllocationListStub) (u *structs.JobUsage, newOOM bool) {
	groups := groupEntries(info)
	limits := taskLimits(info)
	u = &structs.JobUsage{Namespace: key.Namespace, JobID: key.ID}
	js := d.state(key)
	type found struct {
		t    *structs.TaskUsage
		kill oomKill
	}
	var kills []found
	d.mu.Lock()
	for _, a := range allocs {
		g, ok := groups[a.TaskGroup]
		if !ok || a.ClientStatus != api.AllocClientStatusRunning && a.ClientStatus != api.AllocClientStatusFailed {
			continue
		}
		name := taskOf(a, g.role)
		if name == "" {
			continue
		}
		lim := limits[a.TaskGroup+"/"+name]
		st := d.stats[a.ID][name]
		ts := a.TaskStates[name]
		t := &structs.TaskUsage{
			Role: g.role, Rank: g.rankBase + allocIndex(a.Name), NodeID: a.NodeID, AllocID: a.ID,
			CPUMHz: st.cpu(), MemoryMB: st.last(), CPULimitMHz: lim.CPU, MemoryLimitMB: lim.MemoryMB,
			Source: structs.UsageSourceNomad,
		}
		if ts != nil {
			t.Restarts = int(ts.Restarts)
			t.MaxMemoryMB, _ = st.peak(startedAt(ts), math.MaxInt64)
			for _, k := range oomKills(ts.Events, lim.MemoryMB, st.peak) {
				t.OOMKills++
				t.LastOOM = k.at
				seen := oomKey{alloc: a.ID, at: k.at}
				if !js.oomSeen[seen] {
					js.oomSeen[seen] = true
					kills = append(kills, found{t, k})
				}
			}
		}
		u.Tasks = append(u.Tasks, t)
	}
	d.mu.Unlock()
	slices.SortFunc(u.Tasks, func(a, b *structs.TaskUsage) int {
		if c := strings.Compare(a.Role, b.Role); c != 0 {
			return c
		}
		return a.Rank - b.Rank
	})
	if len(u.Tasks) > structs.MaxUsageTasks {
		u.Tasks = u.Tasks[:structs.MaxUsageTasks]
	}
	for _, k := range kills {
		how := "oom_killed"
		if k.kill.inferred {
			how = "inferred from signal 9"
		}
		measured := "no memory measured"
		details := map[string]string{
			"Role": k.t.Role, "Rank": strconv.Itoa(k.t.Rank), "NodeID": k.t.NodeID, "AllocID": k.t.AllocID,
			"MemoryLimitMB": strconv.Itoa(k.t.MemoryLimitMB), "Inferred": strconv.FormatBool(k.kill.inferred),
		}
		if k.kill.measured {
			measured = fmt.Sprintf("most measured %.0f MB", k.kill.peakMB)
			details["MaxMemoryMB"] = strconv.FormatFloat(math.Round(k.kill.peakMB), 'f', 0, 64)
		}
		msg := fmt.Sprintf("%s %d on node %s was killed for memory (limit %d MB, %s; %s)",
			k.t.Role, k.t.Rank, k.t.NodeID, k.t.MemoryLimitMB, measured, how)
		d.event(ctx, job, structs.EventTaskOOMKilled, msg, details)
	}
	if len(u.Tasks) == 0 {
		return nil, false
	}
	return u, len(kills) > 0
}

// oomKey names one OOM kill: the allocation and when.
type oomKey struct {
	alloc string
	at    int64
}

func (t *taskStats) cpu() float64 {
	if t == nil {
		return 0
	}
	return t.cpuMHz
}

// startedAt is when a task last started, Unix nanoseconds.
func startedAt(ts *api.TaskState) int64 {
	for i := len(ts.Events) - 1; i >= 0; i-- {
		if ev := ts.Events[i]; ev != nil && ev.Type == api.TaskStarted {
			return ev.Time
		}
	}
	return 0
}

// taskOf names the task of an allocation that runs the role: the task
// named after it (Translate's), else the allocation's only task that is
// not the collector sidecar; "" when there is none or several.
func taskOf(a *api.AllocationListStub, role string) string {
	if _, ok := a.TaskStates[role]; ok {
		return role
	}
	var name string
	for n := range a.TaskStates {
		if n == collectorTask {
			continue
		}
		if name != "" {
			return ""
		}
		name = n
	}
	return name
}

// taskLimits returns the CPU and memory each task of the job was given,
// by "<group>/<task>".
func taskLimits(info *api.Job) map[string]structs.TaskSize {
	out := map[string]structs.TaskSize{}
	if info == nil {
		return out
	}
	for _, tg := range info.TaskGroups {
		if tg.Name == nil {
			continue
		}
		for _, t := range tg.Tasks {
			var s structs.TaskSize
			if r := t.Resources; r != nil {
				if r.CPU != nil {
					s.CPU = *r.CPU
				}
				if r.MemoryMB != nil {
					s.MemoryMB = *r.MemoryMB
				}
			}
			out[*tg.Name+"/"+t.Name] = s
		}
	}
	return out
}

// allocIndex reads an allocation's index from its name
// "<job>.<group>[<index>]"; 0 when the name has none.
func allocIndex(name string) int {
	open := strings.LastIndexByte(name, '[')
	if open < 0 || !strings.HasSuffix(name, "]") {
		return 0
	}
	i, err := strconv.Atoi(name[open+1 : len(name)-1])
	if err != nil || i < 0 {
		return 0
	}
	return i
}
