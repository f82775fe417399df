package nomad

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
)

// FailureDelay is how long not all tasks of a Caravan job's current
// version may run before the driver reads the job's evaluations for
// Nomad's placement failures, and FailureReread how often it reads them
// again while that lasts. Tasks usually start within a second or two
// (README "Numbers"), so a job whose tasks all run never costs a read.
const (
	FailureDelay  = 3 * time.Second
	FailureReread = 10 * time.Second
)

// failureState is what the driver knows of Nomad's failures for one job:
// since when not all its tasks run, and the placement failures the last
// read of its evaluations found. Guarded by Driver.mu.
type failureState struct {
	// since is when Status first saw the job's current version with fewer
	// tasks running than it has; zero while all run.
	since time.Time
	// version is the Nomad job's JobModifyIndex the state is about: a new
	// version starts over.
	version uint64
	// readAt is when the last read was queued; reading is set until it
	// ends.
	readAt  time.Time
	reading bool
	// read is set once a read for this version ended; evals are the
	// placement failures it found (none when Nomad placed everything).
	read  bool
	evals []*structs.Failure
}

// failures returns Nomad's failures for a job's current version nj, whose
// allocations are allocs: placement failures from its latest evaluation
// and the failed tasks' last events. It calls Nomad for nothing: while
// fewer than want tasks run for FailureDelay, it queues a read of the
// job's evaluations on the job's worker (at most one in FailureReread),
// whose answer a later Status reports. It returns an empty, non-nil list
// once every task runs, and nil while it does not know yet (no read has
// ended for this version): the leader then keeps the failures it
// committed last, so that a new leader's driver does not wipe them before
// its first read.
func (d *Driver) failures(key structs.JobKey, nj *nomadJob, allocs []*api.AllocationListStub, running, want int) []*structs.Failure {
	version := uint64(0)
	if nj.info != nil && nj.info.JobModifyIndex != nil {
		version = *nj.info.JobModifyIndex
	}
	now := time.Now()
	d.mu.Lock()
	js := d.jobs[key]
	if js == nil {
		d.mu.Unlock()
		return nil
	}
	fs := &js.failures
	if want == 0 || running >= want {
		*fs = failureState{}
		d.mu.Unlock()
		return []*structs.Failure{}
	}
	if fs.version != version {
		*fs = failureState{version: version}
	}
	if fs.since.IsZero() {
		fs.since = now
	}
	queue := !fs.reading && now.Sub(fs.since) >= FailureDelay && (fs.readAt.IsZero() || now.Sub(fs.readAt) >= FailureReread)
	if queue {
		fs.reading, fs.readAt = true, now
	}
	read, evals := fs.read, slices.Clone(fs.evals)
	d.mu.Unlock()
	if queue {
		id := nj.id()
		d.enqueue(key, func(ctx context.Context) { d.readFailures(ctx, key, id, version) })
	}
	tasks := taskFailures(allocs)
	if !read && len(tasks) == 0 {
		return nil
	}
	return append(evals, tasks...)
}

// readFailures reads a Nomad job's evaluations, on the job's worker, and
// keeps the placement failures of the latest one for its version, logging
// them at the first read and whenever they change.
func (d *Driver) readFailures(ctx context.Context, key structs.JobKey, id namespacedID, version uint64) {
	ctx, cancel := d.callContext(ctx)
	defer cancel()
	evals, _, err := d.client.Jobs().Evaluations(id.ID, (&api.QueryOptions{Namespace: id.Namespace}).WithContext(ctx))
	d.mu.Lock()
	defer d.mu.Unlock()
	js := d.jobs[key]
	if js == nil || js.failures.version != version {
		return // the job moved on meanwhile
	}
	js.failures.reading = false
	if err != nil {
		d.log.Warn("cannot read a job's evaluations", "job_id", key.ID, "error", err)
		return
	}
	fs := evalFailures(evals, version)
	if !js.failures.read || !structs.SameFailures(fs, js.failures.evals) {
		d.log.Info("read Nomad's placement failures of a job", "job_id", key.ID, "failures", len(fs))
	}
	js.failures.read, js.failures.evals = true, fs
}

// evalFailures returns the placement failures of a Nomad job's version:
// those of its latest evaluation with failed task groups, while the
// version has a blocked evaluation or no later evaluation ran (a later one
// that ran with nothing failed, and no blocked one left, placed
// everything: then there are none). Task groups are in name order.
func evalFailures(evals []*api.Evaluation, version uint64) []*structs.Failure {
	var failing, last *api.Evaluation
	blocked := false
	for _, e := range evals {
		switch {
		case e.JobModifyIndex < version:
			continue // an older version's
		case e.Status == api.EvalStatusBlocked:
			blocked = true
			continue
		case e.Status == api.EvalStatusPending:
			continue // not run yet
		}
		if last == nil || e.CreateIndex > last.CreateIndex {
			last = e
		}
		if len(e.FailedTGAllocs) > 0 && (failing == nil || e.CreateIndex > failing.CreateIndex) {
			failing = e
		}
	}
	if failing == nil || !blocked && last != failing {
		return nil
	}
	var out []*structs.Failure
	for _, tg := range slices.Sorted(maps.Keys(failing.FailedTGAllocs)) {
		m := failing.FailedTGAllocs[tg]
		if m == nil {
			continue
		}
		out = append(out, &structs.Failure{
			Kind:    structs.FailurePlacement,
			Group:   tg,
			Summary: fmt.Sprintf("Task Group %q (failed to place %s)", tg, structs.Plural(m.CoalescedFailures+1, "allocation")),
			Details: formatAllocMetrics(m),
		})
	}
	return out
}

// formatAllocMetrics renders an allocation metric as the lines Nomad's
// command line prints for it (command/monitor.go's formatAllocMetrics,
// without scores), in a fixed order: map entries sorted by name.
func formatAllocMetrics(m *api.AllocationMetric) []string {
	var out []string
	if m.NodesEvaluated == 0 {
		out = append(out, "No nodes were eligible for evaluation")
	}
	for _, dc := range slices.Sorted(maps.Keys(m.NodesAvailable)) {
		if m.NodesAvailable[dc] == 0 {
			out = append(out, fmt.Sprintf("No nodes are available in datacenter %q", dc))
		}
	}
	for _, class := range slices.Sorted(maps.Keys(m.ClassFiltered)) {
		out = append(out, fmt.Sprintf("Class %q: %d nodes excluded by filter", class, m.ClassFiltered[class]))
	}
	for _, cs := range slices.Sorted(maps.Keys(m.ConstraintFiltered)) {
		out = append(out, fmt.Sprintf("Constraint %q: %d nodes excluded by filter", cs, m.ConstraintFiltered[cs]))
	}
	if m.NodesExhausted > 0 {
		out = append(out, fmt.Sprintf("Resources exhausted on %d nodes", m.NodesExhausted))
	}
	for _, class := range slices.Sorted(maps.Keys(m.ClassExhausted)) {
		out = append(out, fmt.Sprintf("Class %q exhausted on %d nodes", class, m.ClassExhausted[class]))
	}
	for _, dim := range slices.Sorted(maps.Keys(m.DimensionExhausted)) {
		out = append(out, fmt.Sprintf("Dimension %q exhausted on %d nodes", dim, m.DimensionExhausted[dim]))
	}
	for _, dim := range m.QuotaExhausted {
		out = append(out, fmt.Sprintf("Quota limit hit %q", dim))
	}
	return out
}

// taskFailures describes the tasks of allocs that failed or that Nomad
// could not start (a "Driver Failure", "Setup Failure" or "Failed
// Validation" event on a task that does not run), from the allocation
// list: one per group, in group order.
func taskFailures(allocs []*api.AllocationListStub) []*structs.Failure {
	byGroup := map[string]*structs.Failure{}
	for _, a := range allocs {
		if a.ClientStatus == api.AllocClientStatusRunning || a.ClientStatus == api.AllocClientStatusComplete {
			continue
		}
		if _, ok := byGroup[a.TaskGroup]; ok {
			continue
		}
		if msg := taskFailure(a); msg != "" {
			byGroup[a.TaskGroup] = &structs.Failure{Kind: structs.FailureTask, Group: a.TaskGroup, Summary: msg}
		}
	}
	out := slices.Collect(maps.Values(byGroup))
	slices.SortFunc(out, func(a, b *structs.Failure) int { return cmp.Compare(a.Group, b.Group) })
	return out
}

// startFailures are the task events of a task Nomad could not start.
var startFailures = []string{api.TaskDriverFailure, api.TaskSetupFailure, api.TaskFailedValidation}

// taskFailure describes a failed allocation's failed task as failure does,
// or the last start failure of one of its tasks; "" when there is none.
func taskFailure(a *api.AllocationListStub) string {
	if a.ClientStatus == api.AllocClientStatusFailed || a.ClientStatus == api.AllocClientStatusLost {
		return failure(a)
	}
	for _, name := range slices.Sorted(maps.Keys(a.TaskStates)) {
		ts := a.TaskStates[name]
		if ts == nil || ts.State == "running" {
			continue
		}
		for i := len(ts.Events) - 1; i >= 0; i-- {
			if ev := ts.Events[i]; slices.Contains(startFailures, ev.Type) {
				return fmt.Sprintf("task %s of %s on node %s: %s: %s", name, a.TaskGroup, a.NodeID, ev.Type, strings.TrimSpace(eventMessage(ev)))
			}
		}
	}
	return ""
}
