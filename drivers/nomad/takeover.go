package nomad

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
)

// A new version of a job declared in Nomad, run with `nomad job run`,
// replaces Caravan's groups at once: Nomad stops the tasks of the
// generation Caravan ran, and they checkpoint as they stop (DESIGN.md §3:
// a stopped chief checkpoints at its next step boundary, within the
// tasks' kill_timeout, the job's checkpoint timeout). The next generation
// must resume from that checkpoint, not an older one, so the change that
// takes the job over again waits, in phase checkpointing, until no task of
// the earlier generation runs, at most the checkpoint timeout.

// awaitEarlier holds back the takeover f of a job declared in Nomad while
// tasks of its earlier generation may still run, and says whether it did;
// advance then moves it on (advanceTakeover). Not held back, the takeover
// records what the earlier generation's last sample says of its stop.
func (d *Driver) awaitEarlier(ctx context.Context, f *flight) bool {
	n, ok := d.earlierRunning(f.job)
	if ok && n == 0 {
		d.stoppedAt(ctx, f)
		return false
	}
	f.draining = true
	f.timeout = checkpointTimeout(f.job)
	f.deadline = f.began.Add(f.timeout)
	f.state.Phase = structs.ChangeCheckpointing
	f.state.Message = "waiting for the driver's first view of Nomad's allocations"
	if ok {
		d.awaitingEarlier(ctx, f, n)
	}
	return true
}

// awaitingEarlier says that the takeover f waits for the n tasks of the
// earlier generation that run.
func (d *Driver) awaitingEarlier(ctx context.Context, f *flight, n int) {
	f.announced = true
	f.state.Message = fmt.Sprintf("waiting up to %s for the earlier generation's tasks to checkpoint and stop", f.timeout)
	d.event(ctx, f.job, structs.EventCheckpointRequested,
		fmt.Sprintf("a new version of the Nomad job stops the earlier generation (%d tasks running; they checkpoint as they stop); waiting up to %s before the next generation", n, f.timeout), nil)
}

// advanceTakeover submits a held-back takeover once no task of the
// earlier generation runs, or its timeout passed.
func (d *Driver) advanceTakeover(ctx context.Context, f *flight) {
	n, ok := d.earlierRunning(f.job)
	late := time.Now().After(f.deadline)
	if !(ok && n == 0) && !late {
		if ok && !f.announced {
			d.awaitingEarlier(ctx, f, n)
		}
		return
	}
	f.draining = false
	if ok && n == 0 {
		d.stoppedAt(ctx, f)
	} else {
		d.event(ctx, f.job, structs.EventCheckpointRequested,
			fmt.Sprintf("%d tasks of the earlier generation still run after %s; starting the next generation from the last checkpoint", max(n, 0), f.timeout), nil)
	}
	f.state.Phase, f.state.Message, f.state.Since = structs.ChangeStarting, "submitting the placement to Nomad", time.Now().UnixNano()
	d.startSubmit(f)
}

// stoppedAt records how the earlier generation of a job taken over
// stopped, from the job's last sample (the stop may have been reported
// before the leader read the user's version): a chief that checkpointed
// as it stopped reports a checkpoint at its last step, which the next
// generation resumes from (CheckpointConfirmed); one whose last step is
// past its last checkpoint lost the steps between (a warning). A job
// without samples (its first takeover) records nothing.
func (d *Driver) stoppedAt(ctx context.Context, f *flight) {
	host := d.hostOf()
	if host == nil {
		return
	}
	last, ok := host.LastSample(f.key)
	switch {
	case !ok || last.CheckpointStep == 0 && last.Step == 0:
	case last.CheckpointStep >= last.Step:
		d.event(ctx, f.job, structs.EventCheckpointConfirmed, fmt.Sprintf("checkpoint at step %d confirmed; the earlier generation stopped at it", last.CheckpointStep),
			map[string]string{"Step": strconv.FormatInt(last.CheckpointStep, 10)})
	default:
		d.log.Warn("the earlier generation stopped past its last checkpoint; the steps since are lost",
			"job_id", f.job.ID, "checkpoint_step", last.CheckpointStep, "step", last.Step)
	}
}

// earlierRunning counts the tasks of a job declared in Nomad that run (or
// are about to) in groups other than the user's current version's: those
// of the generation Caravan ran before. Those ran before the user's
// version, so a view of Nomad's allocations older than that version shows
// them too. ok is false while there is no view; a list that fails counts
// nothing (the submission then fails, and says why).
func (d *Driver) earlierRunning(job *structs.Job) (n int, ok bool) {
	d.mu.Lock()
	allocs := d.allocs
	d.mu.Unlock()
	if allocs.err != nil {
		return 0, true
	}
	if !allocs.ok {
		return 0, false
	}
	user := map[string]bool{}
	for _, g := range job.Nomad.Groups {
		user[g] = true
	}
	for _, a := range allocs.byJob[namespacedID{Namespace: job.Namespace, ID: job.ID}] {
		if user[a.TaskGroup] {
			continue
		}
		if a.ClientStatus == api.AllocClientStatusPending || a.ClientStatus == api.AllocClientStatusRunning {
			n++
		}
	}
	return n, true
}
