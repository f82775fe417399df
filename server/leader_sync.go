package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
	metrics "github.com/hashicorp/go-metrics/compat"
)

// step reconciles the leader with the driver (nodes and what runs), the
// jobs declared in the cluster, the state's jobs and the metrics, and
// runs a round when one is due. Each reconciler keeps its own cursor and
// its own error, so that one failing does not starve the others: while
// the cluster cannot be reached, samples still commit and feed the
// models, and jobs still register and stop. A round, and a plan the
// driver refused, wait for the nodes and what runs to be read again.
func (l *leader) step(ctx context.Context) error {
	if err := l.assertSelf(ctx); err != nil {
		return err
	}
	if err := l.switchAlgorithm(); err != nil {
		return err
	}
	errs := []error{l.syncNodes(ctx), l.syncStatus(ctx), l.syncDeclared(ctx), l.syncJobs(ctx), l.syncQueues(), l.syncSamples(ctx)}
	if err := l.ingest(l.s.State().Txn()); err != nil {
		errs = append(errs, err)
	}
	if l.models.Profiled() {
		l.urgent = true
	}
	if p := l.planning; p != nil && p.done() {
		l.planning = nil
		errs = append(errs, l.commit(ctx, p))
	}
	if err := errors.Join(errs...); err != nil {
		return err // a round plans from all they read
	}
	// A plan the driver refused is enacted again, unless a round is due
	// now: its plan is fresher (the refusal may have been for a job's
	// version since replaced).
	if plan := l.unenacted; plan != nil && !l.urgent {
		if enacted, err := l.enact(ctx, plan); err != nil {
			return fmt.Errorf("enact plan %d again: %w", plan.Index, err)
		} else if enacted {
			l.log.Info("enacted plan after the driver recovered", "plan_index", plan.Index)
		}
	}
	if l.planning != nil {
		return nil // a round due now follows the plan in flight
	}
	now := l.s.now()
	if l.models.TickStragglers(now.UnixNano()) {
		l.urgent = true // a straggler's window ended: move it now
	}
	if !l.urgent && now.Before(l.nextRound) {
		return nil
	}
	l.nextRound = now.Add(l.s.cfg.Interval)
	// A failing algorithm is tried again at every round, changes or not.
	if !l.urgent && !l.models.Changed() && l.algErr == nil {
		l.log.Debug("skipped round", "reason", "no job, node or model changed")
		return nil
	}
	l.urgent = false
	return l.round(ctx)
}

func (l *leader) syncNodes(ctx context.Context) error {
	supported := l.s.supports(fsm.SampleAppendType)
	versioner, versioned := l.s.cfg.Driver.(NodesVersioner)
	var version uint64
	if versioned {
		version = versioner.NodesVersion()
		if l.nodesSynced != nil && *l.nodesSynced == (nodesSync{version, supported}) {
			return nil
		}
	}
	dctx, cancel := context.WithTimeout(ctx, driverTimeout)
	defer cancel()
	nodes, err := l.s.cfg.Driver.Nodes(dctx)
	if err != nil {
		return &driverError{fmt.Errorf("read nodes: %w", err)}
	}
	slices.SortFunc(nodes, func(a, b *structs.Node) int { return strings.Compare(a.ID, b.ID) })
	nodes = gateNodeDrivers(nodes, supported)
	committed, err := state.Nodes(l.s.State().Txn(), nil)
	if err != nil {
		return err
	}
	synced := func() {
		if versioned {
			l.nodesSynced = &nodesSync{version, supported}
		}
	}
	// Nodes decoded from the log may differ from the driver's in nil
	// against empty maps: at worst one needless commit after a failover.
	if len(nodes) == 0 && len(committed) == 0 || reflect.DeepEqual(nodes, committed) {
		l.nodes = committed
		synced()
		return nil
	}
	if _, _, err := l.s.apply(ctx, fsm.NodesReplaceType, &fsm.NodesReplaceRequest{Nodes: nodes}); err != nil {
		return err
	}
	l.log.Info("cluster nodes changed", "nodes", len(nodes))
	l.nodes = nodes
	synced()
	l.nodesVersion++
	l.urgent = true
	return nil
}

// syncStatus advances the driver's changes in flight and commits what it
// reports: what runs of each job, and the jobs that ended.
func (l *leader) syncStatus(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, driverTimeout)
	defer cancel()
	reports, err := l.s.cfg.Driver.Status(dctx)
	if err != nil {
		return &driverError{fmt.Errorf("read job status: %w", err)}
	}
	if err := l.observe(ctx, reports); err != nil {
		return err
	}
	if err := l.commitUsage(ctx, reports); err != nil {
		return err
	}
	for _, r := range reports {
		key := structs.NewJobKey(r.Namespace, r.JobID)
		run := l.runOf(key)
		if run == nil {
			continue
		}
		if r.Replan {
			if !run.replan {
				l.models.Invalidate() // a plan in flight did not know
			}
			l.log.Info("driver lost tasks of a job", "job_id", r.JobID, "message", r.Message)
			l.urgent = true
		}
		run.replan = r.Replan
		if !structs.Terminal(r.Status) {
			continue
		}
		req := &fsm.JobStatusRequest{Namespace: key.Namespace, JobID: key.ID, Status: r.Status, Description: r.Message, Time: l.s.now().UnixNano()}
		if _, _, err := l.s.apply(ctx, fsm.JobStatusType, req); err != nil {
			return err
		}
		l.log.Info("job ended", "job_id", r.JobID, "status", r.Status, "message", r.Message)
	}
	return nil
}

// observe commits, in one entry, what the driver reports runs of the
// active jobs whose observed state changed, and tells the scheduler: the
// next plan starts from what runs, not from what was asked for.
func (l *leader) observe(ctx context.Context, reports []*structs.JobReport) error {
	var changed []*structs.Observed
	inFlight := false
	// Servers before 0.2.0 would record the tasks that finished as lost:
	// all record the same events once every server counts them.
	finished := l.s.supports(fsm.SampleAppendType)
	for _, r := range reports {
		key := structs.NewJobKey(r.Namespace, r.JobID)
		run := l.runOf(key)
		if run == nil || structs.Terminal(r.Status) {
			continue // an ended job keeps what it ran last
		}
		o := &structs.Observed{Namespace: key.Namespace, JobID: key.ID, Placement: r.Placement, Change: r.Change,
			Failures: observedFailures(run.observed, r, finished)}
		if !finished && o.Placement != nil && o.Placement.Finished != nil {
			o.Placement = o.Placement.Copy()
			o.Placement.Finished = nil
		}
		inFlight = inFlight || o.Change.InFlight()
		if prev := run.observed; prev != nil && sameObserved(prev, o) {
			continue
		}
		changed = append(changed, o)
	}
	l.inFlight = inFlight
	if len(changed) == 0 {
		return nil
	}
	req := &fsm.ObservedUpsertRequest{Observed: changed, Time: l.s.now().UnixNano()}
	if _, _, err := l.s.apply(ctx, fsm.ObservedUpsertType|newTypeFlag, req); err != nil {
		return err
	}
	for _, o := range changed {
		key := structs.NewJobKey(o.Namespace, o.JobID)
		run := l.runOf(key)
		if prev := run.observed; prev != nil && prev.Change.InFlight() && !o.Change.InFlight() {
			l.urgent = true // the change ended: plan from where it arrived
		}
		if err := l.failureEvents(ctx, run.observed, o); err != nil {
			return err
		}
		run.observed = o
		l.models.Observe(key, o.Placement, o.Change)
		if c := o.Change; c != nil {
			l.log.Debug("observed job", "job_id", o.JobID, "phase", c.Phase, "message", c.Message)
		}
	}
	return nil
}

// sameObserved reports whether two observed states say the same: the
// same tasks run, at the same batch, the change is at the same phase
// of the same target, and the cluster reports the same failures.
func sameObserved(a, b *structs.Observed) bool {
	if !a.Placement.SameRun(b.Placement) || (a.Change == nil) != (b.Change == nil) || !structs.SameFailures(a.Failures, b.Failures) {
		return false
	}
	if a.Change == nil {
		return true
	}
	x, y := a.Change, b.Change
	return x.Phase == y.Phase && x.PlanIndex == y.PlanIndex && x.Message == y.Message && x.Target.SameTasks(y.Target)
}

// syncDeclared runs the jobs declared in the cluster (see Discoverer) as
// the jobs submitted to Caravan: a new or changed declaration registers a
// version of its job; a declaring job that was stopped, purged, or whose
// caravan policy was removed or made invalid stops its Caravan job, and
// the cluster runs what its user wrote. An invalid declaration, or one
// the JobPolicy refuses, is rejected once per version (see reject). A
// job submitted to Caravan keeps its ID: a declaration of the same job
// is rejected.
func (l *leader) syncDeclared(ctx context.Context) error {
	disc := l.s.cfg.Discoverer
	if disc == nil {
		return nil
	}
	dctx, cancel := context.WithTimeout(ctx, driverTimeout)
	defer cancel()
	decls, index, err := disc.Declared(dctx)
	if err != nil {
		return &driverError{fmt.Errorf("read the jobs declared in the cluster: %w", err)}
	}
	txn := l.s.State().Txn()
	at := declaredAt{cluster: index, jobs: state.IndexOf(txn, state.TableJobs)}
	if at == l.declaredAt {
		return nil
	}
	jobs, err := state.Jobs(txn, nil, "")
	if err != nil {
		return err
	}
	held := make(map[structs.JobKey]*structs.Job, len(jobs))
	for _, j := range jobs {
		held[j.Key()] = j
	}
	var errs []error
	for key, decl := range decls {
		cur := held[key]
		declaredHere := cur != nil && cur.Nomad != nil && !structs.Terminal(cur.Status)
		switch decl.Kind {
		case structs.DeclaredJob:
			if cur != nil && cur.Nomad != nil && cur.Nomad.JobModifyIndex == decl.Index && cur.Status != structs.JobStatusRejected {
				continue // registered, and running or ended
			}
			if cur != nil && cur.Nomad == nil && !structs.Terminal(cur.Status) {
				errs = append(errs, l.reject(ctx, decl, cur, "Caravan already runs a job of this ID, submitted to its API"))
				continue
			}
			job := decl.Job.Copy()
			if err := l.s.cfg.Jobs.Check(job); err != nil {
				errs = append(errs, l.reject(ctx, decl, cur, err.Error()))
				continue
			}
			job.SubmitTime = l.s.now().UnixNano()
			resp, err := l.s.registerJob(ctx, job, false)
			if err != nil {
				if !refusal(err) {
					// Raft or the state failed, not the job: the next
					// step tries it again.
					errs = append(errs, fmt.Errorf("register job %q declared in the cluster: %w", key.ID, err))
					continue
				}
				// Reported once per version: one job's refusal must not
				// hold up the loop.
				errs = append(errs, l.reject(ctx, decl, cur, err.Error()))
				continue
			}
			l.log.Info("registered a job declared in the cluster", "job_id", key.ID, "namespace", key.Namespace, "version", resp.Version, "cluster_index", decl.Index)
			l.urgent = true
		case structs.DeclaredInvalid:
			if declaredHere {
				// Nomad runs the invalid version's groups in place of
				// Caravan's already: the job ends here, and is then
				// rejected as one that never ran, stopped in the cluster
				// too rather than left crash-looping.
				if err := l.handBack(ctx, cur, "its caravan policy is invalid now: "+decl.Message); err != nil {
					errs = append(errs, err)
					continue
				}
				cur = nil
			}
			errs = append(errs, l.reject(ctx, decl, cur, decl.Message))
		case structs.DeclaredPlain:
			if declaredHere {
				errs = append(errs, l.handBack(ctx, cur, "handed back: the cluster's current version of the job has no caravan policy"))
			}
		case structs.DeclaredStopped:
			if declaredHere {
				errs = append(errs, l.handBack(ctx, cur, "stopped in the cluster"))
			}
		}
	}
	for key, cur := range held {
		if cur.Nomad != nil && !structs.Terminal(cur.Status) && decls[key] == nil {
			errs = append(errs, l.handBack(ctx, cur, "purged from the cluster"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	l.declaredAt = declaredAt{cluster: index, jobs: l.s.State().Index(state.TableJobs)}
	return nil
}

// refusal reports whether registering a job failed because of the job
// (what the API answers with a 4xx: it never fits, it is too complex, its
// ID is taken), not because Raft or the state could not take it now: only
// a refusal rejects a declared job, which stops it in the cluster.
func refusal(err error) bool {
	code := errorCode(err)
	return code >= 400 && code < 500
}

// declaredAt is the discoverer's index and the state's jobs index when
// the leader last acted on the declarations: it acts again when either
// moves.
type declaredAt struct{ cluster, jobs uint64 }

// reject records, once per declaring version, that a job declared in the
// cluster cannot run under Caravan, as a JobRejected event; cur is the
// state's job of that ID, nil when there is none. When no job of the ID
// is active, the rejection is the job's record (status rejected, see
// state.Store.RejectJob), once every server applies that, so that
// `job status` answers for it after a leader change too. When the
// cluster's job does not run under Caravan, a Rejecter stops it there,
// with why: it would otherwise run as written, without Caravan's
// environment, and fail.
func (l *leader) reject(ctx context.Context, decl *structs.Declaration, cur *structs.Job, why string) error {
	key := decl.Key()
	if l.rejected[key] == decl.Index {
		return nil
	}
	l.log.Warn("cannot run a job declared in the cluster", "job_id", decl.JobID, "namespace", decl.Namespace, "error", why)
	active := cur != nil && !structs.Terminal(cur.Status)
	switch {
	case cur != nil && cur.Status == structs.JobStatusRejected && cur.Nomad != nil && cur.Nomad.JobModifyIndex == decl.Index:
		// Recorded, with its event, by an earlier leader.
	case !active && l.s.supports(fsm.JobRejectType):
		desc := why // one error a line
		if len(decl.Errors) > 0 {
			desc = strings.Join(decl.Errors, "\n")
		}
		req := &fsm.JobRejectRequest{Namespace: decl.Namespace, JobID: decl.JobID, Name: decl.Name,
			NomadIndex: decl.Index, Description: desc, Time: l.s.now().UnixNano()}
		if _, _, err := l.s.apply(ctx, fsm.JobRejectType, req); err != nil {
			return err
		}
	default:
		// An active job keeps its record; the event says it.
		ev := &structs.Event{Type: structs.EventJobRejected, Namespace: decl.Namespace, JobID: decl.JobID,
			Message: fmt.Sprintf("version at cluster index %d not run by Caravan: %s", decl.Index, why)}
		if err := l.s.Event(ctx, ev); err != nil {
			return err
		}
	}
	declaredHere := active && cur.Nomad != nil
	if r, ok := l.s.cfg.Discoverer.(Rejecter); ok && !declaredHere {
		if err := r.Reject(ctx, decl, why); err != nil {
			l.log.Warn("cannot stop a rejected job in the cluster", "job_id", decl.JobID, "namespace", decl.Namespace, "error", err)
		}
	}
	l.rejected[key] = decl.Index
	return nil
}

// handBack stops a job declared in the cluster; the driver then leaves
// the cluster's job as its user made it.
func (l *leader) handBack(ctx context.Context, job *structs.Job, why string) error {
	req := &fsm.JobStatusRequest{Namespace: job.Namespace, JobID: job.ID, Status: structs.JobStatusStopped, Description: why, Time: l.s.now().UnixNano()}
	if _, _, err := l.s.apply(ctx, fsm.JobStatusType, req); err != nil {
		return err
	}
	l.log.Info("stopped a job declared in the cluster", "job_id", job.ID, "namespace", job.Namespace, "reason", why)
	l.urgent = true
	return nil
}

// syncQueues hands the scheduler the state's queues when they changed:
// the next round respects them (planner/queue).
func (l *leader) syncQueues() error {
	txn := l.s.State().Txn()
	index := state.IndexOf(txn, state.TableQueues)
	if index == l.queuesIndex {
		return nil
	}
	queues, err := state.Queues(txn, nil)
	if err != nil {
		return err
	}
	l.queuesIndex = index
	l.models.SetQueues(queues)
	return nil
}

// syncJobs makes the scheduler's job set the state's active jobs, each at
// its latest version: a new version reaches the next round, which it
// triggers.
func (l *leader) syncJobs(ctx context.Context) error {
	txn := l.s.State().Txn()
	index := state.ActiveJobsIndex(txn)
	if index == l.jobsIndex {
		return nil
	}
	jobs, err := state.ActiveJobs(txn, nil)
	if err != nil {
		return err
	}
	l.jobsIndex = index
	active := make(map[structs.JobKey]bool, len(jobs))
	fresh := map[structs.JobKey]bool{}
	for _, j := range jobs {
		key := j.Key()
		active[key] = true
		switch r := l.runOf(key); {
		case r != nil && r.create == j.CreateIndex && r.version == j.Version:
		case r != nil && r.create == j.CreateIndex:
			if err := l.models.Update(j); err != nil {
				l.log.Error("cannot schedule the new version of a job", "job_id", j.ID, "version", j.Version, "error", err)
				continue
			}
			l.log.Info("job updated", "job_id", j.ID, "version", j.Version)
			r.version, r.updated = j.Version, true
			l.urgent = true
		default:
			// A new job, or a new run of one stopped or purged since the
			// last step: it starts from nothing.
			if _, err := l.startRun(j); err != nil {
				l.log.Error("cannot schedule job", "job_id", j.ID, "error", err)
				continue
			}
			fresh[key] = false
		}
	}
	for key := range l.runs {
		if !active[key] {
			l.endRun(key)
		}
	}
	l.profile(ctx, fresh)
	return nil
}

// profile asks a profiling driver to measure new jobs, and the
// TypeProfiler, if any (typeProfiler), to measure them on each GPU type
// when the algorithm plans by type; jobs marked true in skip already have
// samples and are not profiled again.
func (l *leader) profile(ctx context.Context, skip map[structs.JobKey]bool) {
	reqs, typed := l.models.ProfileRequests(), l.models.TypeProfileRequests()
	if p := l.s.cfg.Profiler; p != nil {
		for _, r := range reqs {
			if skip[r.Job] {
				continue
			}
			if err := p.Profile(ctx, r.Job, r.Configs); ctx.Err() != nil {
				return
			} else if err != nil {
				l.log.Warn("failed to profile job", "job_id", r.Job.ID, "error", err)
			}
		}
	}
	tp := l.s.typeProfiler()
	if tp == nil {
		return
	}
	for _, key := range typed {
		if skip[key] {
			continue
		}
		job := l.models.Job(key)
		if job == nil {
			continue
		}
		if err := tp.ProfileTypes(ctx, job); ctx.Err() != nil {
			return
		} else if err != nil {
			l.log.Warn("failed to profile job by GPU type", "job_id", key.ID, "error", err)
			continue
		}
		if h, ok := tp.(TypeProfileHolder); ok {
			if d := h.TypeProfileHold(job); d > 0 {
				l.models.HoldForTypes(key, l.s.now().Add(d).UnixNano())
			}
		}
	}
}

// syncSamples commits new samples of active jobs and feeds them to the
// models.
func (l *leader) syncSamples(ctx context.Context) error {
	src := l.s.cfg.Metrics
	if src == nil {
		return nil
	}
	dctx, cancel := context.WithTimeout(ctx, driverTimeout)
	defer cancel()
	smps, next, err := src.Samples(dctx, l.cursor)
	if err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	// A source read again from its start, as a new leader reads the
	// collectors, repeats samples already committed: a job's trainer
	// stamps its samples in order, so those older than the job's newest
	// committed sample, or equal to it, are dropped. (Samples of one
	// instant, such as profiling runs, may share a time.)
	txn := l.s.State().Txn()
	newest := map[structs.JobKey]structs.Sample{}
	var keep []structs.Sample
	for _, smp := range smps {
		key := structs.NewJobKey(smp.Namespace, smp.JobID)
		smp.Namespace = key.Namespace
		if !l.models.Has(key) || smp.Validate() != nil {
			continue
		}
		// A sample stamped in the future would hide every later one.
		if err := smp.ValidateTime(l.s.now()); err != nil {
			l.log.Warn("dropped a sample from the future", "job_id", smp.JobID, "error", err)
			continue
		}
		if !smp.Chief() || smp.Profile {
			// Another task's own time per step: the store keeps the
			// latest of each task, whatever the order. A profiling run's
			// measurements are not in the order of the job's steps.
			keep = append(keep, smp)
			continue
		}
		last, ok := newest[key]
		if !ok {
			if js, err := state.Samples(txn, nil, key.Namespace, key.ID); err == nil {
				last, _ = lastOwn(js)
			}
		}
		if smp.Time < last.Time || smp == last {
			continue
		}
		newest[key] = smp
		keep = append(keep, smp)
	}
	for len(keep) > 0 {
		batch := keep[:min(len(keep), maxSampleBatch)]
		keep = keep[len(batch):]
		cursor := l.cursor
		if len(keep) == 0 {
			cursor = next
		}
		if _, _, err := l.s.apply(ctx, l.s.sampleType(), &fsm.SampleBatchRequest{Samples: batch, Cursor: cursor}); err != nil {
			return err
		}
		metrics.IncrCounter([]string{"samples", "committed"}, float32(len(batch)))
	}
	l.cursor = next
	return nil
}

// ingest feeds the models the samples committed since the last call,
// whether the leader read them from its metrics source or trainers
// reported them to the API. A history thinned since then has lost some
// of them; the models get those still held.
func (l *leader) ingest(txn *memdb.Txn) error {
	index := state.IndexOf(txn, state.TableSamples)
	if index == l.samplesIndex {
		return nil
	}
	// The active runs' rows, not every job's: ended jobs keep theirs.
	for _, key := range slices.SortedFunc(maps.Keys(l.runs), structs.JobKey.Compare) {
		r := l.runs[key]
		js, err := state.Samples(txn, nil, key.Namespace, key.ID)
		if err != nil {
			return err
		}
		if js == nil || js.Run != 0 && js.Run != r.create {
			continue // another run's: startRun reads them again
		}
		fresh := js.Received - r.ingested
		if fresh <= 0 {
			continue
		}
		l.models.Ingest(js.Samples[len(js.Samples)-int(min(fresh, int64(len(js.Samples)))):])
		r.ingested = js.Received
	}
	l.samplesIndex = index // after every read: a failed one is tried again
	l.models.RefitShownGoodput()
	return nil
}

// newTypeFlag marks the message types this version added: a server of an
// earlier version, in a rolling upgrade, skips them with a warning instead
// of stopping (it keeps showing its whole-cluster plans until upgraded).
const newTypeFlag = fsm.IgnoreUnknownTypeFlag

// maxSampleBatch bounds the samples one Raft entry carries.
const maxSampleBatch = 512
