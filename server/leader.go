package server

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/plugins/loader"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/scheduler"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	metrics "github.com/hashicorp/go-metrics/compat"
)

// monitorLeadership runs the leader loop while the server leads.
func (s *Server) monitorLeadership() {
	defer s.wg.Done()
	stop := func() {}
	defer func() { stop() }()
	for {
		select {
		case <-s.shutdownCtx.Done():
			return
		case leader := <-s.notify:
			stop()
			// The old loop has stopped: a new term's leader serves
			// consistent reads only after its own Barrier.
			s.setReadyForReads(false)
			stop = func() {}
			if !leader {
				s.log.Info("lost leadership")
				continue
			}
			s.log.Info("gained leadership")
			stop = s.startLeaderLoop()
		}
	}
}

// startLeaderLoop runs the leader loop in a goroutine and returns a
// function that stops it and waits for it. In Manual mode it only makes
// the leader's view whole; Step runs the loop's steps.
func (s *Server) startLeaderLoop() func() {
	ctx, cancel := context.WithCancel(s.shutdownCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if !s.cfg.Manual {
			s.leaderLoop(ctx)
			return
		}
		if l := s.newLeader(ctx); l != nil {
			s.manualMu.Lock()
			s.manual = l
			s.manualMu.Unlock()
		}
	}()
	return func() {
		cancel()
		<-done
		s.manualMu.Lock()
		s.manual = nil
		s.manualMu.Unlock()
	}
}

// Step runs one step of the leader loop in Manual mode: it reads the
// driver and the metrics, commits what changed and runs a round when one
// is due. It returns ErrNotLeader until the server leads and its view is
// whole.
func (s *Server) Step(ctx context.Context) error {
	s.manualMu.Lock()
	l := s.manual
	s.manualMu.Unlock()
	if l == nil {
		return ErrNotLeader
	}
	err := l.step(ctx)
	l.driverHealth(ctx, err)
	return err
}

// NextRound returns when the next periodic round is due in Manual mode,
// by the server's clock; the zero time while it does not lead.
func (s *Server) NextRound() time.Time {
	s.manualMu.Lock()
	defer s.manualMu.Unlock()
	if s.manual == nil {
		return time.Time{}
	}
	return s.manual.nextRound
}

// leader is the state of one term of leadership.
type leader struct {
	s     *Server
	log   hclog.Logger
	sched *scheduler.Scheduler
	// configIndex is the ModifyIndex of the scheduler config in force.
	configIndex uint64
	// nodes are the driver's nodes as last committed.
	nodes []*structs.Node
	// cursor is the metrics source's cursor.
	cursor uint64
	// ingested counts, per job, the committed samples (JobSamples.Received)
	// the models have seen.
	ingested map[structs.JobKey]int64
	// versions are the job versions the scheduler plans with.
	versions map[structs.JobKey]jobVersion
	// jobsIndex and samplesIndex are the state's jobs and samples
	// indexes when they were last read: a step reads them again only
	// when they moved.
	jobsIndex, samplesIndex uint64
	// declaredAt is when the declarations were last acted on; rejected
	// holds, per job, the cluster index of the declaration last rejected.
	declaredAt declaredAt
	rejected   map[structs.JobKey]uint64
	// What the leader last committed, per job: the desired placement, what
	// runs (observed) and the models; only changes to them are committed.
	desired  map[structs.JobKey]*structs.Placement
	observed map[structs.JobKey]*structs.Observed
	models   map[structs.JobKey]*structs.JobModel
	// usage is each job's usage as last committed, at usageAt.
	usage   map[structs.JobKey]*structs.JobUsage
	usageAt map[structs.JobKey]time.Time
	// replan holds the jobs whose driver reports lost tasks (Replan), so
	// that only the first report makes a plan in flight stale.
	replan map[structs.JobKey]bool
	// decidedBy is the algorithm of the last decision committed; updated
	// holds the jobs with a new version since: the next round commits
	// their placements, changed or not, so that the version's round shows.
	decidedBy string
	updated   map[structs.JobKey]bool
	// inFlight is set while a job's change is in flight: the loop then
	// polls the driver more often, to advance it promptly.
	inFlight bool
	// urgent asks for a round at the next poll: the job set or the nodes
	// changed. nextRound is when the next periodic round is due.
	urgent    bool
	nextRound time.Time
	// unenacted is a committed plan the driver failed to enact; the
	// leader retries it at every step until it succeeds or a newer plan
	// replaces it.
	unenacted *structs.Plan
	// driverErr is the driver's last error, nil while it works.
	driverErr error
	// lastGood is the last algorithm whose plan passed its checks;
	// fallback is the configured fallback algorithm, built when first
	// needed; algErr is the algorithm in force's last failure, nil while
	// it works.
	lastGood, fallback planner.Algorithm
	algErr             error
	// planning is the round whose plan is being made off the loop, nil
	// when none is; nodesVersion counts the changes of the nodes, so that
	// a plan made on nodes since changed is not committed.
	planning     *planning
	nodesVersion uint64
}

// driverError marks errors of the driver (the cluster), as opposed to
// errors of the leader's own state or of Raft.
type driverError struct{ err error }

func (e *driverError) Error() string { return e.err.Error() }
func (e *driverError) Unwrap() error { return e.err }

// newLeader makes a new leader's view whole: its own address, the
// scheduler config, the models rebuilt from the replicated samples, the
// driver reconciled with the plan in force. It retries every Poll until it
// succeeds, and returns nil when ctx ends first.
func (s *Server) newLeader(ctx context.Context) *leader {
	l := &leader{s: s, log: s.log.Named("leader")}
	for {
		err := l.establish(ctx)
		if err == nil {
			return l
		}
		l.log.Error("failed to establish leadership", "error", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.cfg.Poll):
		}
	}
}

// leaderLoop plans while the server leads: it makes the leader's view
// whole, then polls the driver every Poll and runs a scheduling round
// every Interval, or at once when jobs or nodes change.
func (s *Server) leaderLoop(ctx context.Context) {
	if g := s.cfg.Gatherer; g != nil {
		done := make(chan struct{})
		go func() {
			defer close(done)
			g.Run(ctx)
		}()
		defer func() { <-done }()
	}
	l := s.newLeader(ctx)
	if l == nil {
		return
	}
	poll := time.NewTimer(s.cfg.Poll)
	defer poll.Stop()
	for {
		err := l.step(ctx)
		if err != nil && ctx.Err() == nil {
			l.log.Error("scheduling step failed", "error", err)
		}
		l.driverHealth(ctx, err)
		poll.Reset(l.pollInterval())
		// A dry run waits for the plan in flight: an algorithm plans one
		// request at a time. A plan that landed but was not committed (the
		// step failed first) waits for the next poll.
		dryRuns, landed := s.dryRuns, l.planning.landed()
		if l.planning != nil {
			dryRuns = nil
			if l.planning.done() {
				landed = nil
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		case <-s.wake:
		case <-landed:
		case req := <-dryRuns:
			plan, err := l.sched.DryRun(req.job, l.nodes, s.now().UnixNano())
			req.reply <- dryRunReply{plan: plan, err: err}
		}
	}
}

// pollInterval is how long the loop waits for the next step: Poll, or a
// quarter of it while a change is in flight, so that a confirmed
// checkpoint is acted on promptly.
func (l *leader) pollInterval() time.Duration {
	if l.inFlight {
		return max(l.s.cfg.Poll/4, 10*time.Millisecond)
	}
	return l.s.cfg.Poll
}

// jobVersion identifies a version of a run of a job: a job purged and
// registered again starts at version 0 of a new run.
type jobVersion struct{ create, version uint64 }

func versionOf(j *structs.Job) jobVersion { return jobVersion{j.CreateIndex, j.Version} }

func (l *leader) establish(ctx context.Context) error {
	s := l.s
	if err := s.await(s.raft.Barrier(30 * time.Second)); err != nil {
		return fmt.Errorf("wait for the log to apply: %w", err)
	}
	s.setReadyForReads(true)
	if _, _, err := s.apply(ctx, fsm.MemberUpsertType, &fsm.MemberUpsertRequest{Member: s.selfMember()}); err != nil {
		return err
	}
	txn := s.State().Txn()
	cfg, err := state.SchedulerConfig(txn, nil)
	if err != nil {
		return err
	}
	if cfg == nil {
		cfg = &structs.SchedulerConfig{Algorithm: s.cfg.Algorithm, Options: s.cfg.AlgorithmOptions}
		// A plugin that is down now is no reason not to lead: rounds fall
		// back until it starts.
		if _, err := s.newAlgorithm(cfg); err != nil && !errors.Is(err, loader.ErrUnavailable) {
			return fmt.Errorf("scheduler configuration of the agent: %w", err)
		}
		if _, _, err := s.apply(ctx, fsm.SchedulerConfigType, &fsm.SchedulerConfigRequest{Config: cfg, Time: s.now().UnixNano()}); err != nil {
			return err
		}
		txn = s.State().Txn()
	}
	alg, _, err := l.algorithm(txn)
	if err != nil {
		return err
	}
	l.sched = scheduler.New(alg, scheduler.Options{
		ProfileConfigs: s.cfg.ProfileConfigs, ProfileSteps: s.cfg.ProfileSteps, ProfileInPlace: s.cfg.Profiler == nil,
		Stragglers: s.cfg.Stragglers, Logger: l.log,
	})
	l.versions = map[structs.JobKey]jobVersion{}
	l.updated = map[structs.JobKey]bool{}
	l.rejected = map[structs.JobKey]uint64{}
	l.desired = map[structs.JobKey]*structs.Placement{}
	l.observed = map[structs.JobKey]*structs.Observed{}
	l.models = map[structs.JobKey]*structs.JobModel{}
	l.usage = map[structs.JobKey]*structs.JobUsage{}
	l.usageAt = map[structs.JobKey]time.Time{}
	l.replan = map[structs.JobKey]bool{}

	// Rebuild the scheduler from the replicated state: the active jobs,
	// what runs of them, and the models from their samples.
	jobs, err := state.Jobs(txn, nil, "")
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if structs.Terminal(j.Status) {
			continue
		}
		key := j.Key()
		if err := l.sched.Register(j); err != nil {
			l.log.Error("cannot schedule job", "job_id", j.ID, "error", err)
			continue
		}
		l.versions[key] = versionOf(j)
		if o, err := state.ObservedOf(txn, nil, j.Namespace, j.ID); err != nil {
			return err
		} else if o != nil {
			l.observed[key] = o
			l.sched.Observe(key, o.Placement, o.Change)
		}
		if d, err := state.Desired(txn, nil, j.Namespace, j.ID); err != nil {
			return err
		} else if d != nil {
			l.desired[key] = d.Placement
		}
		if m, err := state.Model(txn, nil, j.Namespace, j.ID); err != nil {
			return err
		} else if m != nil {
			l.models[key] = m
		}
		if u, err := state.UsageOf(txn, nil, j.Namespace, j.ID); err != nil {
			return err
		} else if u != nil {
			l.usage[key], l.usageAt[key] = u, time.Unix(0, u.Time)
			l.sched.ObserveUsage(key, u)
		}
	}
	if l.cursor, err = state.Cursor(txn, state.MetricsCursor); err != nil {
		return err
	}
	l.ingested = map[structs.JobKey]int64{}
	if err := l.ingest(txn); err != nil {
		return err
	}
	profiled := map[structs.JobKey]bool{}
	for key, n := range l.ingested {
		profiled[key] = n > 0
	}
	l.profile(ctx, profiled)

	// Learn what runs before anything is enacted: a driver that has not
	// listed a job yet would report that nothing of it runs.
	if err := l.syncStatus(ctx); err != nil {
		l.log.Error("failed to read what runs", "error", err)
	}
	// Reconcile the driver with the plan in force: what the last leader
	// decided for the jobs still active.
	plan, err := state.LatestPlan(txn, nil)
	if err != nil {
		return err
	}
	if plan != nil {
		l.decidedBy = plan.Algorithm
		// A driver that fails now is retried at every step.
		if enacted, err := l.enact(ctx, plan); err != nil {
			l.log.Error("failed to reconcile the driver with the plan in force", "plan_index", plan.Index, "error", err)
		} else if enacted {
			l.log.Info("reconciled driver with the plan in force", "plan_index", plan.Index, "jobs", len(plan.Placements))
		}
	}
	l.urgent = true
	l.nextRound = s.now().Add(s.cfg.Interval)
	return nil
}

// algorithm returns the algorithm the replicated config names when it
// changed since the last call; nil if it did not.
func (l *leader) algorithm(txn *memdb.Txn) (planner.Algorithm, bool, error) {
	cfg, err := state.SchedulerConfig(txn, nil)
	if err != nil || cfg == nil || cfg.ModifyIndex == l.configIndex {
		return nil, false, err
	}
	alg, err := l.s.newAlgorithm(cfg)
	if err != nil {
		// The committed configuration stands even where it cannot run now
		// (a plugin that is down, or that this server lacks): rounds fall
		// back until it works.
		l.log.Error("cannot run the configured algorithm", "algorithm", cfg.Algorithm, "error", err)
		if alg == nil {
			alg = &unavailable{name: cfg.Algorithm, err: err}
		}
	}
	l.configIndex = cfg.ModifyIndex
	return alg, true, nil
}

// unavailable stands for an algorithm the server cannot build: planning
// with it fails, so that rounds fall back.
type unavailable struct {
	name string
	err  error
}

func (u *unavailable) Name() string { return u.name }

func (u *unavailable) Plan(*planner.Request) (*planner.Decision, error) { return nil, u.err }

// newAlgorithm builds the algorithm a scheduler config names, with its
// options.
func (s *Server) newAlgorithm(cfg *structs.SchedulerConfig) (planner.Algorithm, error) {
	return s.cfg.Algorithms.Algorithm(cfg.Algorithm, cfg.Options)
}

// step polls the driver, commits what changed, and runs a round when one
// is due.
func (l *leader) step(ctx context.Context) error {
	s := l.s
	if err := l.assertSelf(ctx); err != nil {
		return err
	}
	if alg, changed, err := l.algorithm(s.State().Txn()); err != nil {
		return err
	} else if changed {
		l.sched.SetAlgorithm(alg)
		l.urgent = true
		l.algErr = nil // a new algorithm's failures are its own
		l.log.Info("switched algorithm", "algorithm", alg.Name())
	}
	if err := l.syncNodes(ctx); err != nil {
		return err
	}
	if err := l.syncStatus(ctx); err != nil {
		return err
	}
	if err := l.syncDeclared(ctx); err != nil {
		return err
	}
	if err := l.syncJobs(ctx); err != nil {
		return err
	}
	if err := l.syncSamples(ctx); err != nil {
		return err
	}
	if err := l.ingest(s.State().Txn()); err != nil {
		return err
	}
	if l.sched.Profiled() {
		l.urgent = true
	}
	if p := l.planning; p != nil && p.done() {
		l.planning = nil
		if err := l.commit(ctx, p); err != nil {
			return err
		}
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
	now := s.now()
	if l.sched.TickStragglers(now.UnixNano()) {
		l.urgent = true // a straggler's window ended: move it now
	}
	if !l.urgent && now.Before(l.nextRound) {
		return nil
	}
	l.nextRound = now.Add(s.cfg.Interval)
	// A failing algorithm is tried again at every round, changes or not.
	if !l.urgent && !l.sched.Changed() && l.algErr == nil {
		l.log.Debug("skipped round", "reason", "no job, node or model changed")
		return nil
	}
	l.urgent = false
	return l.round(ctx)
}

func (l *leader) syncNodes(ctx context.Context) error {
	nodes, err := l.s.cfg.Driver.Nodes(ctx)
	if err != nil {
		return &driverError{fmt.Errorf("read nodes: %w", err)}
	}
	slices.SortFunc(nodes, func(a, b *structs.Node) int { return strings.Compare(a.ID, b.ID) })
	committed, err := state.Nodes(l.s.State().Txn(), nil)
	if err != nil {
		return err
	}
	// Nodes decoded from the log may differ from the driver's in nil
	// against empty maps: at worst one needless commit after a failover.
	if len(nodes) == 0 && len(committed) == 0 || reflect.DeepEqual(nodes, committed) {
		l.nodes = committed
		return nil
	}
	if _, _, err := l.s.apply(ctx, fsm.NodesReplaceType, &fsm.NodesReplaceRequest{Nodes: nodes}); err != nil {
		return err
	}
	l.log.Info("cluster nodes changed", "nodes", len(nodes))
	l.nodes = nodes
	l.nodesVersion++
	l.urgent = true
	return nil
}

// syncStatus advances the driver's changes in flight and commits what it
// reports: what runs of each job, and the jobs that ended.
func (l *leader) syncStatus(ctx context.Context) error {
	reports, err := l.s.cfg.Driver.Status(ctx)
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
		if r.Replan && l.sched.Has(key) {
			if !l.replan[key] {
				l.sched.Invalidate() // a plan in flight did not know
			}
			l.replan[key] = true
			l.log.Info("driver lost tasks of a job", "job_id", r.JobID, "message", r.Message)
			l.urgent = true
		} else {
			delete(l.replan, key)
		}
		if !structs.Terminal(r.Status) || !l.sched.Has(key) {
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
	for _, r := range reports {
		key := structs.NewJobKey(r.Namespace, r.JobID)
		if !l.sched.Has(key) || structs.Terminal(r.Status) {
			continue // an ended job keeps what it ran last
		}
		o := &structs.Observed{Namespace: key.Namespace, JobID: key.ID, Placement: r.Placement, Change: r.Change}
		inFlight = inFlight || o.Change.InFlight()
		if prev := l.observed[key]; prev != nil && sameObserved(prev, o) {
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
		if prev := l.observed[key]; prev != nil && prev.Change.InFlight() && !o.Change.InFlight() {
			l.urgent = true // the change ended: plan from where it arrived
		}
		l.observed[key] = o
		l.sched.Observe(key, o.Placement, o.Change)
		if c := o.Change; c != nil {
			l.log.Debug("observed job", "job_id", o.JobID, "phase", c.Phase, "message", c.Message)
		}
	}
	return nil
}

// sameObserved reports whether two observed states say the same: the
// same tasks run, at the same batch, and the change is at the same phase
// of the same target.
func sameObserved(a, b *structs.Observed) bool {
	if !a.Placement.SameRun(b.Placement) || (a.Change == nil) != (b.Change == nil) {
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
// the JobPolicy refuses, is reported once per version, as a JobRejected
// event. A job submitted to
// Caravan keeps its ID: a declaration of the same job is rejected.
func (l *leader) syncDeclared(ctx context.Context) error {
	disc := l.s.cfg.Discoverer
	if disc == nil {
		return nil
	}
	decls, index, err := disc.Declared(ctx)
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
			if cur != nil && cur.Nomad != nil && cur.Nomad.JobModifyIndex == decl.Index {
				continue // registered, and running or ended
			}
			if cur != nil && cur.Nomad == nil && !structs.Terminal(cur.Status) {
				if l.rejected[key] != decl.Index {
					errs = append(errs, l.reject(ctx, decl, "Caravan already runs a job of this ID, submitted to its API"))
				}
				continue
			}
			job := decl.Job.Copy()
			if err := l.s.cfg.Jobs.Check(job); err != nil {
				if l.rejected[key] != decl.Index {
					errs = append(errs, l.reject(ctx, decl, err.Error()))
				}
				continue
			}
			job.SubmitTime = l.s.now().UnixNano()
			resp, err := l.s.registerJob(ctx, job, false)
			if err != nil {
				// Reported once per version: one job's refusal must not
				// hold up the loop.
				if l.rejected[key] != decl.Index {
					errs = append(errs, l.reject(ctx, decl, err.Error()))
				}
				continue
			}
			l.log.Info("registered a job declared in the cluster", "job_id", key.ID, "namespace", key.Namespace, "version", resp.Version, "cluster_index", decl.Index)
			l.urgent = true
		case structs.DeclaredInvalid:
			if l.rejected[key] != decl.Index {
				errs = append(errs, l.reject(ctx, decl, decl.Message))
			}
			if declaredHere {
				errs = append(errs, l.handBack(ctx, cur, "its caravan policy is invalid now, so the cluster runs it as written: "+decl.Message))
			}
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

// declaredAt is the discoverer's index and the state's jobs index when
// the leader last acted on the declarations: it acts again when either
// moves.
type declaredAt struct{ cluster, jobs uint64 }

// reject records, once per declaring version, that a job declared in the
// cluster cannot run under Caravan.
func (l *leader) reject(ctx context.Context, decl *structs.Declaration, why string) error {
	l.log.Warn("cannot run a job declared in the cluster", "job_id", decl.JobID, "namespace", decl.Namespace, "error", why)
	ev := &structs.Event{Type: structs.EventJobRejected, Namespace: decl.Namespace, JobID: decl.JobID,
		Message: fmt.Sprintf("version at cluster index %d not run by Caravan: %s", decl.Index, why)}
	if err := l.s.Event(ctx, ev); err != nil {
		return err
	}
	l.rejected[decl.Key()] = decl.Index
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

// syncJobs makes the scheduler's job set the state's active jobs, each at
// its latest version: a new version reaches the next round, which it
// triggers.
func (l *leader) syncJobs(ctx context.Context) error {
	txn := l.s.State().Txn()
	index := state.IndexOf(txn, state.TableJobs)
	if index == l.jobsIndex {
		return nil
	}
	jobs, err := state.Jobs(txn, nil, "")
	if err != nil {
		return err
	}
	l.jobsIndex = index
	active := map[structs.JobKey]bool{}
	fresh := map[structs.JobKey]bool{}
	for _, j := range jobs {
		key := j.Key()
		if structs.Terminal(j.Status) {
			continue
		}
		active[key] = true
		v, known := l.versions[key]
		switch {
		case known && v == versionOf(j):
			continue
		case known:
			if v.create != versionOf(j).create {
				// Registered anew under the same ID: the old run's usage
				// is not this one's.
				delete(l.usage, key)
				delete(l.usageAt, key)
			}
			if err := l.sched.Update(j); err != nil {
				l.log.Error("cannot schedule the new version of a job", "job_id", j.ID, "version", j.Version, "error", err)
				continue
			}
			l.log.Info("job updated", "job_id", j.ID, "version", j.Version)
			l.updated[key] = true
		default:
			if err := l.sched.Register(j); err != nil {
				l.log.Error("cannot schedule job", "job_id", j.ID, "error", err)
				continue
			}
			fresh[key] = false
		}
		l.versions[key] = versionOf(j)
		l.urgent = true
	}
	for _, k := range l.sched.Keys() {
		if !active[k] {
			l.sched.Complete(k)
			delete(l.versions, k)
			delete(l.desired, k)
			delete(l.observed, k)
			delete(l.models, k)
			delete(l.usage, k)
			delete(l.usageAt, k)
			delete(l.replan, k)
			l.urgent = true
		}
	}
	l.profile(ctx, fresh)
	return nil
}

// profile asks a profiling driver to measure new jobs; jobs marked true
// in skip already have samples and are not profiled again.
func (l *leader) profile(ctx context.Context, skip map[structs.JobKey]bool) {
	reqs := l.sched.ProfileRequests()
	p := l.s.cfg.Profiler
	if p == nil {
		return
	}
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

// syncSamples commits new samples of active jobs and feeds them to the
// models.
func (l *leader) syncSamples(ctx context.Context) error {
	src := l.s.cfg.Metrics
	if src == nil {
		return nil
	}
	smps, next, err := src.Samples(ctx, l.cursor)
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
		if !l.sched.Has(key) || smp.Validate() != nil {
			continue
		}
		// A sample stamped in the future would hide every later one.
		if err := smp.ValidateTime(l.s.now()); err != nil {
			l.log.Warn("dropped a sample from the future", "job_id", smp.JobID, "error", err)
			continue
		}
		if !smp.Chief() {
			// Another task's own time per step: the store keeps the
			// latest of each task, whatever the order.
			keep = append(keep, smp)
			continue
		}
		last, ok := newest[key]
		if !ok {
			if js, err := state.Samples(txn, nil, key.Namespace, key.ID); err == nil && js != nil && len(js.Samples) > 0 {
				last = js.Samples[len(js.Samples)-1]
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
	all, err := state.AllSamples(txn, nil)
	if err != nil {
		return err
	}
	l.samplesIndex = index
	for _, js := range all {
		key := structs.JobKey{Namespace: js.Namespace, ID: js.JobID}
		fresh := js.Received - l.ingested[key]
		if fresh <= 0 {
			continue
		}
		l.sched.Ingest(js.Samples[len(js.Samples)-int(min(fresh, int64(len(js.Samples)))):])
		l.ingested[key] = js.Received
	}
	return nil
}

// newTypeFlag marks the message types this version added: a server of an
// earlier version, in a rolling upgrade, skips them with a warning instead
// of stopping (it keeps showing its whole-cluster plans until upgraded).
const newTypeFlag = fsm.IgnoreUnknownTypeFlag

// maxSampleBatch bounds the samples one Raft entry carries.
const maxSampleBatch = 512

// round starts planning on a snapshot of the scheduler: the algorithm
// runs on a goroutine of its own while the loop goes on, and a later step
// commits the plan (commit). In Manual mode the round waits for its plan
// and commits it, so that a step does the same whatever the machine's
// speed.
func (l *leader) round(ctx context.Context) error {
	p := l.startPlanning()
	if !l.s.cfg.Manual {
		l.planning = p
		return nil
	}
	select {
	case <-p.landed():
	case <-ctx.Done():
		return ctx.Err()
	}
	return l.commit(ctx, p)
}

// commit commits what changed of a round's decision and the models, and
// starts enacting the plan; it drops the plan, and asks for another
// round, when what it was made from changed meanwhile. It returns as soon
// as the driver has started the changes; later steps advance them.
func (l *leader) commit(ctx context.Context, p *planning) error {
	defer metrics.MeasureSinceWithLabels([]string{"leader", "round"}, time.Now(), []metrics.Label{{Name: "algorithm", Value: p.alg.Name()}})
	if why := l.stale(p); why != "" {
		l.log.Debug("discarded a stale plan", "reason", why, "took", p.outcome.took)
		metrics.IncrCounter([]string{"leader", "plan", "discarded"}, 1)
		l.urgent = true
		return nil
	}
	plan, err := l.plan(ctx, p)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	req := &fsm.DecisionApplyRequest{Algorithm: plan.Algorithm, Time: plan.CreateTime}
	for _, p := range plan.Placements {
		if prev := l.desired[p.Key()]; prev == nil || !prev.SameRun(p) || p.Paused() && prev.Reason != p.Reason ||
			prev.JobVersion != p.JobVersion || l.updated[p.Key()] {
			req.Placements = append(req.Placements, p)
		}
	}
	for _, m := range l.sched.Summaries() {
		key := structs.JobKey{Namespace: m.Namespace, ID: m.JobID}
		if prev := l.models[key]; prev == nil || modelChanged(prev, m) {
			req.Models = append(req.Models, m)
		}
	}
	index := l.s.State().Index(state.TableDecision)
	if len(req.Placements) > 0 || len(req.Models) > 0 || plan.Algorithm != l.decidedBy {
		if _, index, err = l.s.apply(ctx, fsm.DecisionApplyType|newTypeFlag, req); err != nil {
			return err
		}
		for _, p := range req.Placements {
			l.desired[p.Key()] = p
		}
		for _, m := range req.Models {
			l.models[structs.JobKey{Namespace: m.Namespace, ID: m.JobID}] = m
		}
		l.decidedBy = plan.Algorithm
		clear(l.updated)
	}
	plan.Index = index
	l.log.Debug("committed decision", "index", index, "algorithm", plan.Algorithm, "jobs", len(plan.Placements), "changed", len(req.Placements))
	if _, err := l.enact(ctx, plan); err != nil {
		return fmt.Errorf("enact plan %d: %w", index, err)
	}
	return nil
}

// planning is a round whose algorithm runs off the loop. The goroutine
// sets outcome and then closes finished; the loop reads outcome only
// after that.
type planning struct {
	round *scheduler.Round
	// nodesVersion is the leader's when the round was taken.
	nodesVersion uint64
	// alg is the algorithm in force; fallbacks plan when it fails.
	alg       planner.Algorithm
	fallbacks []planner.Algorithm
	finished  chan struct{}
	outcome   planOutcome
}

// planOutcome is what planning a round came to.
type planOutcome struct {
	// decision is nil when every algorithm failed.
	decision *scheduler.Decision
	// err is the failure of the algorithm in force, nil when it planned;
	// fallback is the algorithm that planned instead, and errs all the
	// failures when none did.
	err      error
	fallback planner.Algorithm
	errs     error
	took     time.Duration
}

// landed returns a channel closed once the plan is made; nil, which
// blocks for ever, when p is nil.
func (p *planning) landed() <-chan struct{} {
	if p == nil {
		return nil
	}
	return p.finished
}

// done reports whether the plan is made.
func (p *planning) done() bool {
	select {
	case <-p.finished:
		return true
	default:
		return false
	}
}

// startPlanning takes the round's snapshot and runs the algorithm in
// force on it on a goroutine, and the fallbacks when it fails. Nothing
// waits for a goroutine whose leader stepped down or shut down: it ends
// when the algorithm answers, and its plan is dropped.
func (l *leader) startPlanning() *planning {
	p := &planning{
		round:        l.sched.Snapshot(l.nodes, l.s.now().UnixNano()),
		nodesVersion: l.nodesVersion,
		alg:          l.sched.Algorithm(),
		fallbacks:    []planner.Algorithm{l.lastGood, l.fallbackAlgorithm()},
		finished:     make(chan struct{}),
	}
	go func() {
		defer close(p.finished)
		p.outcome = p.decide()
	}()
	return p
}

// decide runs the algorithm in force, and when it fails the fallbacks in
// turn. It touches nothing of the leader's.
func (p *planning) decide() planOutcome {
	start := time.Now()
	defer metrics.MeasureSinceWithLabels([]string{"leader", "plan"}, start, []metrics.Label{{Name: "algorithm", Value: p.alg.Name()}})
	dec, err := p.round.Decide(p.alg)
	if err == nil {
		return planOutcome{decision: dec, took: time.Since(start)}
	}
	errs := []error{err}
	for _, fallback := range p.fallbacks {
		if fallback == nil || fallback.Name() == p.alg.Name() {
			continue
		}
		dec, ferr := p.round.Decide(fallback)
		if ferr != nil {
			errs = append(errs, fmt.Errorf("fallback: %w", ferr))
			continue
		}
		return planOutcome{decision: dec, err: err, fallback: fallback, took: time.Since(start)}
	}
	return planOutcome{err: err, errs: errors.Join(errs...), took: time.Since(start)}
}

// stale says why a plan made off the loop must not be committed: a job
// came, changed or went, what runs of a job changed, the algorithm or the
// nodes changed since its round was taken. The empty string when none
// did.
func (l *leader) stale(p *planning) string {
	switch {
	case p.round.Version != l.sched.Version():
		return "jobs, what runs of them or the algorithm changed while planning"
	case p.nodesVersion != l.nodesVersion:
		return "nodes changed while planning"
	case state.IndexOf(l.s.State().Txn(), state.TableJobs) != l.jobsIndex:
		// A job registered, updated or stopped since this step synced
		// the jobs, which the plan does not know of.
		return "jobs changed since the step began"
	}
	return ""
}

// modelChanged reports whether a job's models say something new: a
// refit, a new configuration measured, a new speed at its placement. The
// step alone, and the time left that follows from it, do not count:
// readers work those out from the newest sample.
func modelChanged(a, b *structs.JobModel) bool {
	x, y := *a, *b
	x.Step, y.Step = 0, 0
	x.RemainingSeconds, y.RemainingSeconds = 0, 0
	return !reflect.DeepEqual(&x, &y)
}

// plan makes a round's outcome a plan. When the algorithm in force
// failed (an error, a crashed or hung plugin, a decision that breaks the
// rules), the round planned with the last algorithm that worked, or
// failing that the fallback algorithm, and an AlgorithmFallback event
// records it once per streak of failures; the algorithm in force is
// tried again next round.
func (l *leader) plan(ctx context.Context, p *planning) (*structs.Plan, error) {
	o, alg := p.outcome, p.alg
	l.log.Debug("planned round", "algorithm", alg.Name(), "took", o.took, "failed", o.err != nil)
	switch {
	case o.err == nil:
		if l.algErr != nil {
			l.log.Info("algorithm works again", "algorithm", alg.Name())
			l.algErr = nil
		}
		l.lastGood = alg
	case o.decision != nil:
		l.log.Error("algorithm failed; planned with the fallback", "algorithm", alg.Name(), "fallback", o.fallback.Name(), "error", o.err)
		metrics.IncrCounterWithLabels([]string{"leader", "fallback"}, 1, []metrics.Label{
			{Name: "algorithm", Value: alg.Name()}, {Name: "fallback", Value: o.fallback.Name()}})
		if l.algErr == nil {
			msg := fmt.Sprintf("algorithm %s failed, planned with %s: %v", alg.Name(), o.fallback.Name(), o.err)
			if eerr := l.event(ctx, structs.EventAlgorithmFallback, msg); eerr != nil {
				l.log.Warn("failed to record the fallback", "error", eerr)
			}
		}
		l.algErr = o.err
	default:
		l.algErr = o.err
		return nil, o.errs
	}
	return l.sched.Finish(o.decision), nil
}

// fallbackAlgorithm returns the configured fallback algorithm, or nil
// when it cannot be built.
func (l *leader) fallbackAlgorithm() planner.Algorithm {
	if l.fallback == nil {
		alg, err := l.s.newAlgorithm(&structs.SchedulerConfig{Algorithm: l.s.cfg.FallbackAlgorithm})
		if err != nil {
			l.log.Error("cannot build the fallback algorithm", "algorithm", l.s.cfg.FallbackAlgorithm, "error", err)
			return nil
		}
		l.fallback = alg
	}
	return l.fallback
}

// enact hands a plan to the driver with the specs of its jobs, and
// commits what the driver reports runs of them. Each job goes with the
// spec of the version its placement was made for, never a newer one at
// that placement (which might break the newer's bounds). A plan that
// placed a job at another version than the one the scheduler holds (a
// new leader's plan in force, made before the job's newest version), or
// than the state's for a job the scheduler does not hold, is not enacted
// at all: enact asks for the round that plans the version the scheduler
// holds, and reports false.
func (l *leader) enact(ctx context.Context, plan *structs.Plan) (bool, error) {
	txn := l.s.State().Txn()
	jobs := make([]*structs.Job, 0, len(plan.Placements))
	for _, p := range plan.Placements {
		j, err := state.JobByID(txn, nil, p.Namespace, p.JobID)
		if err != nil {
			return false, err
		}
		if j == nil {
			return false, fmt.Errorf("plan names job %q, which the state does not hold", p.JobID)
		}
		v, scheduled := l.versions[p.Key()]
		if scheduled && v.version != p.JobVersion || !scheduled && j.Version != p.JobVersion {
			l.log.Info("left a plan to the next round: it placed another version of a job", "plan_index", plan.Index,
				"job_id", j.ID, "namespace", j.Namespace, "placed_version", p.JobVersion, "version", j.Version)
			l.unenacted, l.urgent = nil, true
			return false, nil
		}
		if j.Version != p.JobVersion {
			// A version registered since the step synced the jobs, or
			// one the scheduler refused: the placement's own runs until
			// a round plans the newest.
			if j, err = specAt(txn, p.Namespace, p.JobID, p.JobVersion); err != nil {
				return false, err
			}
			if j == nil {
				l.log.Info("left a plan to the next round: the version it placed is gone", "plan_index", plan.Index,
					"job_id", p.JobID, "namespace", p.Namespace, "placed_version", p.JobVersion)
				l.unenacted, l.urgent = nil, true
				return false, nil
			}
		}
		jobs = append(jobs, j.Copy())
	}
	reports, err := l.s.cfg.Driver.Enact(ctx, plan, jobs)
	if err != nil {
		l.unenacted = plan
		if oerr := l.observe(ctx, reports); oerr != nil {
			l.log.Warn("failed to commit what runs", "error", oerr)
		}
		return false, &driverError{err}
	}
	l.unenacted = nil
	return true, l.observe(ctx, reports)
}

// specAt returns version v of a job, nil when the state does not hold
// it.
func specAt(txn *memdb.Txn, namespace, id string, v uint64) (*structs.Job, error) {
	versions, err := state.JobVersions(txn, nil, namespace, id)
	if err != nil {
		return nil, err
	}
	for _, j := range versions {
		if j.Version == v {
			return j, nil
		}
	}
	return nil, nil
}

// driverHealth records, as events, when the driver starts failing and
// when it works again, so that an outage of the cluster shows in the
// history once rather than at every poll.
func (l *leader) driverHealth(ctx context.Context, stepErr error) {
	var derr *driverError
	failing := errors.As(stepErr, &derr)
	if !failing && stepErr != nil {
		return // the step stopped before the driver could tell
	}
	var err error
	switch {
	case failing && l.driverErr == nil:
		err = l.event(ctx, structs.EventDriverError, "cluster unavailable, state kept, retrying: "+derr.Error())
	case !failing && l.driverErr != nil:
		err = l.event(ctx, structs.EventDriverRecovered, "cluster available again after: "+l.driverErr.Error())
	}
	if err != nil {
		l.log.Warn("failed to record driver health", "error", err)
		return
	}
	if failing {
		l.driverErr = derr
	} else {
		l.driverErr = nil
	}
}

func (l *leader) event(ctx context.Context, typ, msg string) error {
	return l.s.Event(ctx, &structs.Event{Type: typ, Message: msg})
}
