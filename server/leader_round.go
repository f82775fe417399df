package server

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/models"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	metrics "github.com/hashicorp/go-metrics/compat"
)

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
		r := l.runOf(p.Key())
		if r == nil || r.desired == nil || r.updated || !r.desired.SameRun(p) || p.Paused() && r.desired.Reason != p.Reason ||
			r.desired.JobVersion != p.JobVersion {
			req.Placements = append(req.Placements, p)
		}
	}
	for _, m := range l.models.Summaries() {
		r := l.runOf(structs.JobKey{Namespace: m.Namespace, ID: m.JobID})
		if r == nil || r.model == nil || modelChanged(r.model, m) {
			req.Models = append(req.Models, m)
		}
	}
	index := l.s.State().Index(state.TableDecision)
	if len(req.Placements) > 0 || len(req.Models) > 0 || plan.Algorithm != l.decidedBy {
		if _, index, err = l.s.apply(ctx, fsm.DecisionApplyType|newTypeFlag, req); err != nil {
			return err
		}
		before := make(map[structs.JobKey]*structs.Placement, len(req.Placements))
		for _, p := range req.Placements {
			if r := l.runOf(p.Key()); r != nil {
				before[p.Key()] = r.desired
				r.desired = p
			}
		}
		for _, m := range req.Models {
			if r := l.runOf(structs.JobKey{Namespace: m.Namespace, ID: m.JobID}); r != nil {
				r.model = m
			}
		}
		l.decidedBy = plan.Algorithm
		for _, r := range l.runs {
			r.updated = false
		}
		l.preemptionEvents(ctx, p.outcome.decision, before)
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
	round *models.Round
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
	decision *models.Decision
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
		round:        l.models.Snapshot(l.nodes, l.s.now().UnixNano()),
		nodesVersion: l.nodesVersion,
		alg:          l.models.Algorithm(),
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
	dec, err := decideSafely(p.round, p.alg)
	if err == nil {
		return planOutcome{decision: dec, took: time.Since(start)}
	}
	errs := []error{err}
	for _, fallback := range p.fallbacks {
		if fallback == nil || fallback.Name() == p.alg.Name() {
			continue
		}
		dec, ferr := decideSafely(p.round, fallback)
		if ferr != nil {
			errs = append(errs, fmt.Errorf("fallback: %w", ferr))
			continue
		}
		return planOutcome{decision: dec, err: err, fallback: fallback, took: time.Since(start)}
	}
	return planOutcome{err: err, errs: errors.Join(errs...), took: time.Since(start)}
}

// decideSafely is round.Decide(alg) with a panic made an error, so that
// the round plans with a fallback and the server lives on: planning runs
// on a goroutine, where a panic would end the process. The algorithms'
// loader recovers their own panics; this covers what Decide does around
// them, the queues' pass among it.
func decideSafely(round *models.Round, alg planner.Algorithm) (dec *models.Decision, err error) {
	defer func() {
		if r := recover(); r != nil {
			dec, err = nil, fmt.Errorf("%s panicked: %v", alg.Name(), r)
		}
	}()
	return round.Decide(alg)
}

// stale says why a plan made off the loop must not be committed: a job
// came, changed or went, what runs of a job changed, the algorithm or the
// nodes changed since its round was taken. The empty string when none
// did.
func (l *leader) stale(p *planning) string {
	switch {
	case p.round.Version != l.models.Version():
		return "jobs, what runs of them or the algorithm changed while planning"
	case p.nodesVersion != l.nodesVersion:
		return "nodes changed while planning"
	case state.ActiveJobsIndex(l.s.State().Txn()) != l.jobsIndex:
		// A job registered, updated or stopped since this step synced
		// the jobs, which the plan does not know of (the garbage
		// collector's purges of ended jobs do not count).
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
	return l.models.Finish(o.decision), nil
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

// preemptionEvents records a JobPreempted event for each job the queues
// shrank or paused in dec to less than it was decided before this commit
// (before: the jobs' earlier desired placements, by key, for those whose
// placement changed). A job the queues keep from starting, or hold
// paused round after round, or give less than the algorithm wanted but
// more than before, was preempted from nothing. A failure to record one
// is logged: the decision stands.
func (l *leader) preemptionEvents(ctx context.Context, dec *models.Decision, before map[structs.JobKey]*structs.Placement) {
	for _, pre := range dec.Preemptions {
		was, ok := before[pre.Job]
		if !ok || was == nil || was.Paused() || pre.To.Compare(was.Shape()) >= 0 {
			continue
		}
		ev := &structs.Event{Type: structs.EventJobPreempted, Namespace: pre.Job.Namespace, JobID: pre.Job.ID, Message: pre.Reason,
			Details: map[string]string{"Queue": pre.Queue, "From": was.Shape().String(), "To": pre.To.String()}}
		if err := l.s.Event(ctx, ev); err != nil {
			l.log.Warn("failed to record a preemption", "job_id", pre.Job.ID, "namespace", pre.Job.Namespace, "error", err)
		}
	}
}
