package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/caravan-sched/caravan/plugins/loader"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/models"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
)

// establish makes a new leader's view whole (see newLeader).
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
	// The bounds of what the state keeps are the leader's, as the
	// scheduler configuration is: commit them now rather than at the
	// collector's first pass.
	if err := s.syncRetention(ctx); err != nil {
		return err
	}
	alg, _, err := l.algorithm(txn)
	if err != nil {
		return err
	}
	l.models = models.New(alg, models.Options{
		ProfileConfigs: s.cfg.ProfileConfigs, ProfileSteps: s.cfg.ProfileSteps, ProfileInPlace: s.cfg.Profiler == nil,
		Stragglers: s.cfg.Stragglers, Logger: l.log,
	})
	l.runs = map[structs.JobKey]*run{}
	l.rejected = map[structs.JobKey]uint64{}

	// Rebuild the runs from the replicated state: the active jobs, what
	// runs of them, and the models from their samples.
	jobs, err := state.Jobs(txn, nil, "")
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if structs.Terminal(j.Status) {
			continue
		}
		r, err := l.startRun(j)
		if err != nil {
			l.log.Error("cannot schedule job", "job_id", j.ID, "error", err)
			continue
		}
		if err := l.load(txn, r); err != nil {
			return err
		}
	}
	if l.cursor, err = state.Cursor(txn, state.MetricsCursor); err != nil {
		return err
	}
	if err := l.ingest(txn); err != nil {
		return err
	}
	profiled := map[structs.JobKey]bool{}
	for key, r := range l.runs {
		profiled[key] = r.ingested > 0
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

// load reads what the state holds of a run: what runs of it, what was
// decided for it, its models and its usage.
func (l *leader) load(txn *memdb.Txn, r *run) error {
	ns, id := r.key.Namespace, r.key.ID
	o, err := state.ObservedOf(txn, nil, ns, id)
	if err != nil {
		return err
	}
	if o != nil {
		r.observed = o
		l.models.Observe(r.key, o.Placement, o.Change)
	}
	d, err := state.Desired(txn, nil, ns, id)
	if err != nil {
		return err
	}
	if d != nil {
		r.desired = d.Placement
	}
	if r.model, err = state.Model(txn, nil, ns, id); err != nil {
		return err
	}
	u, err := state.UsageOf(txn, nil, ns, id)
	if err != nil {
		return err
	}
	if u != nil {
		r.usage, r.usageAt = u, time.Unix(0, u.Time)
		l.models.ObserveUsage(r.key, u)
	}
	return nil
}
