package server

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
)

// usageInterval is the default of Config.UsageInterval.
const usageInterval = 30 * time.Second

// usageMove is how much a task's CPU or memory must move, relative to
// what was last committed, for a periodic usage commit to be worth it.
const usageMove = 0.05

// usageDue decides whether the usage u of a job is committed now, given
// what was last committed (prev, at) and the interval between periodic
// commits. At once and urgent when the job's first usage arrives, a new
// OOM kill or restart appears, or the tasks changed; otherwise only once
// interval has passed since the last commit and some task's CPU or
// memory moved by more than 5%.
func usageDue(prev *structs.JobUsage, at, now time.Time, interval time.Duration, u *structs.JobUsage) (due, urgent bool) {
	if prev == nil || len(prev.Tasks) != len(u.Tasks) {
		return true, false
	}
	moved := false
	for i, t := range u.Tasks {
		p := prev.Tasks[i]
		if p.Role != t.Role || p.Rank != t.Rank || p.AllocID != t.AllocID {
			return true, false
		}
		if t.OOMKills != p.OOMKills || t.LastOOM != p.LastOOM || t.Restarts != p.Restarts {
			return true, true
		}
		moved = moved || relMove(p.CPUMHz, t.CPUMHz) || relMove(p.MemoryMB, t.MemoryMB) ||
			relMove(p.MaxMemoryMB, t.MaxMemoryMB) || relMove(p.TaskStepTimeS, t.TaskStepTimeS)
	}
	return moved && now.Sub(at) >= interval, false
}

// chiefLookback is how many of the chief's latest samples
// reportedStepTimes searches for one of a task's allocation.
const chiefLookback = 16

// reportedStepTimes fills in the time per step of u's tasks that the
// driver did not measure (a Nomad task's own step time is known only to
// the trainer) from the samples the tasks reported themselves: the latest
// with the task's allocation ID, so that a sample of an earlier
// allocation of the same rank never stands for the current one.
func reportedStepTimes(u *structs.JobUsage, js *structs.JobSamples) {
	if js == nil {
		return
	}
	for _, t := range u.Tasks {
		if t.TaskStepTimeS > 0 || t.AllocID == "" {
			continue
		}
		from := js.Tasks
		if t.Role == structs.RoleWorker && t.Rank == 0 {
			from = chiefSamples(js.Samples, chiefLookback)
		}
		for i := len(from) - 1; i >= 0; i-- {
			if s := from[i]; s.AllocID == t.AllocID && s.TaskStepTimeS > 0 {
				t.TaskStepTimeS = s.TaskStepTimeS
				break
			}
		}
	}
}

// chiefSamples returns the latest n of samples that are not a profiling
// run's, oldest first.
func chiefSamples(samples []structs.Sample, n int) []structs.Sample {
	var out []structs.Sample
	for i := len(samples) - 1; i >= 0 && len(out) < n; i-- {
		if !samples[i].Profile {
			out = append(out, samples[i])
		}
	}
	slices.Reverse(out)
	return out
}

// relMove reports whether b differs from a by more than usageMove of a.
func relMove(a, b float64) bool {
	if a == 0 {
		return b != 0
	}
	return math.Abs(b-a) > usageMove*math.Abs(a)
}

// commitUsage commits, in one entry, the usage the driver reported of the
// active jobs whose usage is due (usageDue), and hands it to the
// scheduler. Usage that fails validation is dropped with a warning: the
// driver's garbage never reaches Raft.
func (l *leader) commitUsage(ctx context.Context, reports []*structs.JobReport) error {
	now := l.s.now()
	txn := l.s.State().Txn()
	var due []*structs.JobUsage
	urgent := false
	for _, r := range reports {
		key := structs.NewJobKey(r.Namespace, r.JobID)
		run := l.runOf(key)
		if r.Usage == nil || run == nil || structs.Terminal(r.Status) {
			continue
		}
		u := r.Usage.Copy()
		u.Namespace, u.JobID = key.Namespace, key.ID
		if js, err := state.Samples(txn, nil, key.Namespace, key.ID); err == nil {
			reportedStepTimes(u, js)
		}
		if err := u.Validate(); err != nil {
			l.log.Warn("dropped invalid usage from the driver", "job_id", key.ID, "error", err)
			continue
		}
		ok, at := usageDue(run.usage, run.usageAt, now, l.s.cfg.UsageInterval, u)
		if ok {
			due = append(due, u)
			urgent = urgent || at
		}
	}
	if len(due) == 0 {
		return nil
	}
	req := &fsm.UsageUpsertRequest{Usage: due, Time: now.UnixNano()}
	if _, _, err := l.s.apply(ctx, fsm.UsageUpsertType|newTypeFlag, req); err != nil {
		return err
	}
	txn = l.s.State().Txn()
	for _, u := range due {
		key := u.Key()
		committed, err := state.UsageOf(txn, nil, key.Namespace, key.ID)
		if err != nil {
			return err
		}
		run := l.runOf(key)
		if committed == nil || run == nil {
			continue // the job ended meanwhile
		}
		run.usage, run.usageAt = committed, now
		l.models.ObserveUsage(key, committed)
	}
	if urgent {
		l.urgent = true // a task was killed or restarted: plan now
	}
	l.log.Debug("committed usage", "jobs", len(due), "urgent", urgent)
	return nil
}
