package nomad

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
)

// Status advances the changes in flight (see Enact) and reports every
// Caravan job Nomad runs, judged by the allocations of its Nomad job's
// current version: what runs (the running allocations, per node and role),
// complete when all of them finished successfully (a trainer exits 0 only
// once it converged or reached its epoch cap), running otherwise. Failed
// or lost allocations set Replan, up to MaxRestarts times, and then fail
// the job with the task's last error. A change is done, and a
// TasksRunning event says how long it took, when all tasks of the
// generation it submitted run.
//
// Status calls Nomad for nothing: it reads the views the watchers keep
// (the job list and specs, the allocations, the stats), applies what the
// workers did since the last call (a checkpoint signal sent, a generation
// submitted, either failing) and hands the workers what comes next (the
// next generation once a checkpoint is confirmed). It waits for the first
// views at most CallTimeout (the driver just started) and fails only
// while it never had them; after that it answers from the last views,
// however old, since the leader keeps what runs meanwhile (Nodes and
// Declared fail while Nomad cannot be reached). A view older than what
// this driver submitted, or a spec not read yet, never makes a job look
// failed or complete: such a job is reported as the last Status saw it.
func (d *Driver) Status(ctx context.Context) ([]*structs.JobReport, error) {
	jobs, allocs, err := d.views(ctx)
	if err != nil {
		return nil, err
	}
	d.collect(ctx)
	var reports []*structs.JobReport
	for key, f := range d.flights() {
		if !f.pending && jobs.listIndex >= f.index && stale(f, jobs.caravan[key]) {
			// The Nomad job is gone or another leader changed it since
			// this driver started the change (it led before): the change
			// is not this driver's to finish.
			d.mu.Lock()
			d.jobs[key].flight = nil
			d.mu.Unlock()
			d.log.Info("dropped a change another leader overtook", "job_id", key.ID)
			continue
		}
		d.advance(ctx, f)
	}
	d.mu.Lock()
	var gone []structs.JobKey
	for key := range d.jobs {
		if jobs.caravan[key] == nil {
			gone = append(gone, key)
		}
	}
	for key := range d.lingering {
		if nj := jobs.caravan[key]; nj == nil || !nj.stub.Stop {
			delete(d.lingering, key)
		}
	}
	d.mu.Unlock()
	now := d.now()
	for _, key := range gone {
		// Planned, but Nomad does not list it (not submitted yet, or
		// purged outside Caravan): nothing of it runs.
		d.state(key).running = nil
		d.unwatch(key)
		reports = append(reports, d.report(key))
	}
	for key, nj := range jobs.caravan {
		js := d.state(key)
		if nj.stub.Stop {
			js.running = nil // paused, or stopped by Caravan
			d.unwatch(key)
			d.stopLingering(key, nj, liveCount(allocs.byJob[nj.id()]), now)
			r := d.report(key)
			r.Failures = d.failures(key, nj, nil, 0, 0) // none: nothing is to run
			reports = append(reports, r)
			continue
		}
		info := nj.info
		if info == nil || behind(js.flight, jobs) {
			// Its spec is not read yet, or the view predates what this
			// driver submitted: what ran at the last Status stands.
			reports = append(reports, d.report(key))
			continue
		}
		allocs := allocs.current(nj)
		r := d.report(key)
		var running, complete, failed int
		for _, a := range allocs {
			switch a.ClientStatus {
			case api.AllocClientStatusRunning:
				running++
			case api.AllocClientStatusComplete:
				// One Nomad stopped (a newer version replaces it) did not
				// finish its work.
				if a.DesiredStatus == api.AllocDesiredStatusRun {
					complete++
				}
			case api.AllocClientStatusFailed, api.AllocClientStatusLost:
				failed++
				r.Message = failure(a)
			}
		}
		js.running = observed(key, info, allocs)
		if js.running != nil {
			js.running.Finished = finished(info, allocs)
		}
		r.Placement = js.running.Copy()
		d.watch(key, allocs)
		usage, _ := d.usage(ctx, &structs.Job{Namespace: key.Namespace, ID: key.ID}, key, info, allocs)
		r.Usage = usage
		oom := oomMessage(usage)
		if last, ok := d.lastSample(key); ok {
			r.Step = last.Step
		}
		want := expected(info)
		r.Failures = d.failures(key, nj, allocs, running, want)
		switch f := js.flight; {
		case failed > 0 && js.restarts >= d.cfg.MaxRestarts:
			r.Status = structs.JobStatusFailed
			r.Message = fmt.Sprintf("tasks failed after %d restarts from the checkpoint: %s", js.restarts, r.Message)
		case failed > 0 || oom != "":
			// A task killed for memory is replanned at its first kill:
			// Nomad would otherwise restart it in place at the same
			// memory, as a task of a generation the others moved on from.
			if failed == 0 {
				r.Message = oom
			}
			r.Replan = true
			js.lost, js.lostMsg, js.lostGeneration = true, r.Message, nj.generation
			if f != nil && f.state.InFlight() && !f.pending {
				f.state.Phase, f.state.Message, f.state.Since = structs.ChangeFailed, "tasks failed: "+r.Message, time.Now().UnixNano()
				r.Change = f.state.Copy()
			}
		case want > 0 && complete == want:
			r.Status = structs.JobStatusComplete
			r.Message = fmt.Sprintf("all %d tasks finished at step %d", want, r.Step)
		case want > 0 && running == want && f != nil && f.state.Phase == structs.ChangeStarting && !f.pending && f.generation == nj.generation:
			d.tasksRunning(ctx, f, want)
			r.Change = f.state.Copy()
		}
		reports = append(reports, r)
	}
	return reports, nil
}

// behind reports whether the job view predates a change of this
// driver's: its write is not done, or not listed yet.
func behind(f *flight, jobs jobsView) bool {
	return f != nil && f.state.InFlight() && (f.pending || jobs.listIndex < f.index)
}

// views returns the views of Nomad's jobs and allocations, waiting for
// the first ones at most CallTimeout; it fails only while one was never
// read.
func (d *Driver) views(ctx context.Context) (jobsView, allocsView, error) {
	if err := d.awaitFirst(ctx, d.viewed, "Nomad's jobs"); err != nil {
		return jobsView{}, allocsView{}, err
	}
	if err := d.awaitFirst(ctx, d.allocsRead, "Nomad's allocations"); err != nil {
		return jobsView{}, allocsView{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case !d.view.ok:
		return jobsView{}, allocsView{}, d.view.err
	case !d.allocs.ok:
		return jobsView{}, allocsView{}, d.allocs.err
	}
	return d.view, d.allocs, nil
}

// allocsView is the driver's view of Nomad's allocations, kept by
// watchAllocs from one list it follows with blocking queries.
type allocsView struct {
	// index is Nomad's index of the last list; err is its error, the
	// view then holding what the last good list said; ok says a list was
	// read once.
	index uint64
	err   error
	ok    bool
	// byJob holds the allocations of every Nomad job; never changed once
	// published.
	byJob map[namespacedID][]*api.AllocationListStub
}

// current returns the allocations of a Nomad job's version as listed;
// its spec must have been read.
func (v allocsView) current(nj *nomadJob) []*api.AllocationListStub {
	var out []*api.AllocationListStub
	for _, a := range v.byJob[nj.id()] {
		if a.JobVersion == *nj.info.Version {
			out = append(out, a)
		}
	}
	return out
}

// watchAllocs follows the allocations of every job in the namespace
// Caravan's jobs are listed in, with one blocking query, so that Status
// reads them without a call per job.
func (d *Driver) watchAllocs(ctx context.Context) {
	follow(ctx, func(index uint64) ([]*api.AllocationListStub, *api.QueryMeta, error) {
		return d.listAllocs(ctx, index)
	}, func(err error) {
		d.setAllocs(allocsView{err: fmt.Errorf("list Nomad allocations: %w", err)})
	}, func(allocs []*api.AllocationListStub, index uint64) {
		byJob := map[namespacedID][]*api.AllocationListStub{}
		for _, a := range allocs {
			id := namespacedID{Namespace: a.Namespace, ID: a.JobID}
			byJob[id] = append(byJob[id], a)
		}
		d.setAllocs(allocsView{index: index, ok: true, byJob: byJob})
	})
}

// listAllocs lists the allocations, blocking until Nomad's index passes
// index or WaitTime passes.
func (d *Driver) listAllocs(ctx context.Context, index uint64) ([]*api.AllocationListStub, *api.QueryMeta, error) {
	ctx, cancel := d.blockingContext(ctx, d.cfg.WaitTime)
	defer cancel()
	q := (&api.QueryOptions{Namespace: d.queryNamespace(), WaitIndex: index, WaitTime: d.cfg.WaitTime}).WithContext(ctx)
	return d.client.Allocations().List(q)
}

// setAllocs publishes a view of the allocations, or a failed list's
// error over the last view.
func (d *Driver) setAllocs(v allocsView) {
	d.mu.Lock()
	if v.err != nil {
		if d.allocs.err == nil {
			d.log.Warn("cannot read Nomad's allocations", "error", v.err)
		}
		d.allocs.err = v.err
	} else {
		d.allocs = v
	}
	d.mu.Unlock()
	d.allocsOnce.Do(func() { close(d.allocsRead) })
}

// oomMessage describes the first task of usage killed for memory in its
// current generation; "" when none was.
func oomMessage(u *structs.JobUsage) string {
	if u == nil {
		return ""
	}
	for _, t := range u.Tasks {
		if t.OOMKills > 0 {
			return fmt.Sprintf("%s %d on node %s was killed for memory (limit %d MB)", t.Role, t.Rank, t.NodeID, t.MemoryLimitMB)
		}
	}
	return ""
}

// flights returns the changes in flight.
func (d *Driver) flights() map[structs.JobKey]*flight {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[structs.JobKey]*flight{}
	for key, js := range d.jobs {
		if js.flight != nil && js.flight.state.InFlight() {
			out[key] = js.flight
		}
	}
	return out
}

// stale reports whether a change in flight is no longer this driver's:
// the Nomad job is at another generation than the change expects.
func stale(f *flight, nj *nomadJob) bool {
	want := f.generation // starting: the generation it submitted
	if f.state.Phase == structs.ChangeCheckpointing {
		want = 0
		if f.existing != nil {
			want = f.existing.generation
		}
	}
	have := 0
	if nj != nil {
		have = nj.generation
	}
	return want != have
}

// report is what the driver knows of a job without asking Nomad: what
// ran at the last Status and its change.
func (d *Driver) report(key structs.JobKey) *structs.JobReport {
	js := d.state(key)
	r := &structs.JobReport{Namespace: key.Namespace, JobID: key.ID, Status: structs.JobStatusRunning, Placement: js.running.Copy()}
	if js.flight != nil {
		r.Change = js.flight.state.Copy()
	}
	return r
}

// finished counts, by role, the allocations of a job's version that
// finished their work: complete while Nomad still wanted them to run (one
// Nomad stopped did not finish). Nil when none did.
func finished(info *api.Job, allocs []*api.AllocationListStub) *structs.Shape {
	groups := groupEntries(info)
	var n structs.Shape
	for _, a := range allocs {
		g, ok := groups[a.TaskGroup]
		if !ok || a.ClientStatus != api.AllocClientStatusComplete || a.DesiredStatus != api.AllocDesiredStatusRun {
			continue
		}
		if g.role == structs.RolePS {
			n.PS++
		} else {
			n.Workers++
		}
	}
	if n == (structs.Shape{}) {
		return nil
	}
	return &n
}

// observed is the placement the running allocations make up: per node,
// how many of its ps and worker groups' allocations run, and the batch
// the Nomad job's tasks were started with when it set one. Nil when none
// runs.
func observed(key structs.JobKey, info *api.Job, allocs []*api.AllocationListStub) *structs.Placement {
	groups := groupEntries(info)
	type entryKey struct {
		node       string
		ps, worker structs.TaskSize
	}
	byEntry := map[entryKey]*structs.NodeTasks{}
	p := &structs.Placement{Namespace: key.Namespace, JobID: key.ID}
	for _, a := range allocs {
		if a.ClientStatus != api.AllocClientStatusRunning {
			continue
		}
		g, ok := groups[a.TaskGroup]
		if !ok {
			continue
		}
		k := entryKey{g.NodeID, g.PSSize, g.WorkerSize}
		nt := byEntry[k]
		if nt == nil {
			nt = &structs.NodeTasks{NodeID: g.NodeID, PSSize: g.PSSize, WorkerSize: g.WorkerSize}
			byEntry[k] = nt
			p.Nodes = append(p.Nodes, nt)
		}
		if g.role == structs.RolePS {
			nt.PS++
			p.NumPS++
		} else {
			nt.Workers++
			p.NumWorkers++
		}
	}
	if len(p.Nodes) == 0 {
		return nil
	}
	// A size is set only for a role that runs: one whose tasks all
	// stopped leaves the entry's other size alone.
	for _, nt := range p.Nodes {
		if nt.PS == 0 {
			nt.PSSize = structs.TaskSize{}
		}
		if nt.Workers == 0 {
			nt.WorkerSize = structs.TaskSize{}
		}
	}
	structs.SortNodeTasks(p.Nodes)
	if info != nil && p.NumWorkers > 0 {
		p.Batch = parseBatch(info.Meta[metaBatch])
	}
	return p
}

// groupEntry is what a group of a Caravan-submitted job runs: its role
// and the entry of the placement it came from (node and sizes).
type groupEntry struct {
	role string
	// rankBase is the rank of the group's first allocation (0 for groups
	// submitted before groups had it).
	rankBase int
	structs.NodeTasks
}

// groupEntries reads each group's role, node and sizes from its meta
// (groupMeta), or, for groups submitted before groups had it, from its
// name `<role>-<node>`.
func groupEntries(info *api.Job) map[string]groupEntry {
	out := map[string]groupEntry{}
	if info == nil {
		return out
	}
	for _, tg := range info.TaskGroups {
		if tg.Name == nil {
			continue
		}
		var g groupEntry
		if role := tg.Meta[metaGroupRole]; role != "" {
			g.role, g.NodeID = role, tg.Meta[metaGroupNode]
			g.PSSize, _ = parseSize(tg.Meta[metaGroupPSSize])
			g.WorkerSize, _ = parseSize(tg.Meta[metaGroupWorkerSize])
			g.rankBase, _ = strconv.Atoi(tg.Meta[metaGroupRankBase])
		} else {
			role, node, ok := strings.Cut(*tg.Name, "-")
			if !ok {
				continue
			}
			g.role, g.NodeID = role, node
		}
		out[*tg.Name] = g
	}
	return out
}

// tasksRunning ends a change whose tasks all run, and records how long it
// took, from the checkpoint request (rescales) or the submission.
func (d *Driver) tasksRunning(ctx context.Context, f *flight, tasks int) {
	took := time.Since(f.began)
	what := "start"
	if f.checkpoint {
		what = "rescale"
	}
	f.state.Phase, f.state.Message, f.state.Since = structs.ChangeDone, fmt.Sprintf("all %d tasks run", tasks), time.Now().UnixNano()
	d.event(ctx, f.job, structs.EventTasksRunning, fmt.Sprintf("all %d tasks of generation %d run; the %s took %s", tasks, f.generation, what, took.Round(time.Millisecond)), map[string]string{
		"Generation": strconv.Itoa(f.generation),
		"Rescale":    strconv.FormatBool(f.checkpoint),
		"Seconds":    strconv.FormatFloat(took.Seconds(), 'f', 3, 64),
	})
}

// failure describes why an allocation failed: the last event of its
// first failed task (by name, so that the same allocation is always told
// alike) and how it last exited, or the allocation's own status.
func failure(a *api.AllocationListStub) string {
	for _, name := range slices.Sorted(maps.Keys(a.TaskStates)) {
		ts := a.TaskStates[name]
		if !ts.Failed || len(ts.Events) == 0 {
			continue
		}
		msg := eventMessage(ts.Events[len(ts.Events)-1])
		for i := len(ts.Events) - 1; i >= 0; i-- {
			if ev := ts.Events[i]; ev.Type == api.TaskTerminated {
				msg += " (last exit: " + eventMessage(ev) + ")"
				break
			}
		}
		return fmt.Sprintf("task %s of %s on node %s: %s", name, a.TaskGroup, a.NodeID, msg)
	}
	return fmt.Sprintf("allocation %s of %s on node %s is %s: %s", a.ID, a.TaskGroup, a.NodeID, a.ClientStatus, a.ClientDescription)
}

func eventMessage(ev *api.TaskEvent) string {
	if ev.DisplayMessage != "" {
		return ev.DisplayMessage
	}
	return ev.Type
}

func (d *Driver) lastSample(key structs.JobKey) (structs.Sample, bool) {
	host := d.hostOf()
	if host == nil {
		return structs.Sample{}, false
	}
	return host.LastSample(key)
}
