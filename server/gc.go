package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	metrics "github.com/hashicorp/go-metrics/compat"
)

// Defaults of the job garbage collector, Nomad's.
const (
	// defaultJobGCThreshold is how long a job that ended stays in the
	// state (Nomad's job_gc_threshold).
	defaultJobGCThreshold = 4 * time.Hour
	// defaultJobGCInterval is how often the collector looks.
	defaultJobGCInterval = 5 * time.Minute
)

// jobGC is the state of the leader's job garbage collector, which purges
// the jobs that ended more than Config.JobGCThreshold ago, with
// everything kept about them, through Raft (fsm.JobGCType). It runs off
// the leader loop: on its own goroutine while the server leads (runJobGC),
// or when CollectGarbage is called (Manual mode). Passes are serialised.
type jobGC struct {
	mu sync.Mutex
	// firstSeen is when a pass first found each ended job whose record has
	// no ModifyTime (written before servers stamped it): such a job is
	// aged from then, which is never earlier than it ended. It holds
	// only the jobs of the last pass.
	firstSeen map[structs.JobKey]time.Time
	// undeclared are the ended jobs declared in the cluster that the last
	// pass found without a declaration (collectable).
	undeclared map[structs.JobKey]bool
	// beforeApply, when set (by tests), is called between a pass's
	// listing and its first entry.
	beforeApply func()
}

// runJobGC runs a collection every JobGCInterval (wall-clock time) until
// ctx ends: the leader's term, or the server's life. Each pass ages jobs
// by the server's clock. A pass that fails is logged and the next one
// tries again.
func (s *Server) runJobGC(ctx context.Context) {
	log := s.log.Named("gc")
	t := time.NewTimer(s.cfg.JobGCInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.collect(ctx); err != nil && ctx.Err() == nil {
			log.Error("job garbage collection failed", "error", err)
		}
		t.Reset(s.cfg.JobGCInterval)
	}
}

// CollectGarbage runs one pass of the job garbage collector now, on the
// leader, and returns how many jobs it purged: every job that ended
// (complete, failed, stopped or rejected) more than JobGCThreshold ago by
// the server's clock, in entries of at most fsm.MaxJobGC jobs. It also
// commits the configured retention bounds when they differ from those in
// force. A server in Manual mode runs no collector of its own: its caller
// calls this between steps, and the pass is as deterministic as the
// clock. It answers ErrNotLeader on a follower, and purges nothing
// (without error) until every server applies JobGC entries.
func (s *Server) CollectGarbage(ctx context.Context) (int, error) {
	if !s.IsLeader() {
		return 0, ErrNotLeader
	}
	return s.collect(ctx)
}

func (s *Server) collect(ctx context.Context) (int, error) {
	s.gc.mu.Lock()
	defer s.gc.mu.Unlock()
	log := s.log.Named("gc")
	if err := s.syncRetention(ctx); err != nil {
		log.Warn("failed to commit the retention bounds", "error", err)
	}
	if err := s.supportsErr(fsm.JobGCType); err != nil {
		log.Debug("job garbage collection waits for every server to apply it", "reason", err)
		return 0, nil
	}
	now := s.now()
	found, err := s.collectable(ctx, now)
	if err != nil {
		return 0, err
	}
	if s.gc.beforeApply != nil && len(found) > 0 {
		s.gc.beforeApply()
	}
	collected := 0
	for len(found) > 0 {
		batch := found[:min(len(found), fsm.MaxJobGC)]
		found = found[len(batch):]
		res, _, err := s.apply(ctx, fsm.JobGCType, &fsm.JobGCRequest{Jobs: batch, Time: now.UnixNano()})
		if err != nil {
			err = fmt.Errorf("purge %d ended jobs: %w", len(batch), err)
			if collected > 0 {
				s.collected(collected)
			}
			return collected, err
		}
		if r, ok := res.(fsm.JobGCResponse); ok {
			collected += r.Collected
		}
	}
	if collected > 0 {
		s.collected(collected)
	}
	return collected, nil
}

// collected reports n jobs purged: an INFO log and the counter
// caravan_jobs_collected.
func (s *Server) collected(n int) {
	s.log.Named("gc").Info("collected ended jobs", "jobs", n, "threshold", s.cfg.JobGCThreshold)
	metrics.IncrCounter([]string{"jobs", "collected"}, float32(n))
}

// collectable lists the jobs that ended before now less the threshold,
// as they are now. A job declared in the cluster (Job.Nomad) is kept
// while the cluster still declares it (a version with a caravan policy,
// valid or not): purged, its declaration would register or reject it
// again. One the cluster's view holds no declaration of is collected only
// when the pass before found none either: the view may not have read its
// version yet. When the declarations cannot be read, no declared job is
// collected in this pass.
func (s *Server) collectable(ctx context.Context, now time.Time) ([]state.Collectable, error) {
	jobs, err := state.Jobs(s.State().Txn(), nil, "")
	if err != nil {
		return nil, err
	}
	cutoff := now.Add(-s.cfg.JobGCThreshold)
	seen := make(map[structs.JobKey]time.Time, len(s.gc.firstSeen))
	var decls map[structs.JobKey]*structs.Declaration
	declsRead := false
	undeclared := map[structs.JobKey]bool{}
	var out []state.Collectable
	for _, j := range jobs {
		if !structs.Terminal(j.Status) {
			continue
		}
		key := j.Key()
		ended := time.Unix(0, j.ModifyTime)
		if j.ModifyTime == 0 {
			first, ok := s.gc.firstSeen[key]
			if !ok {
				first = now
			}
			seen[key] = first
			ended = first
		}
		if ended.After(cutoff) {
			continue
		}
		if j.Nomad != nil && s.cfg.Discoverer != nil {
			if !declsRead {
				declsRead = true
				dctx, cancel := context.WithTimeout(ctx, driverTimeout)
				d, _, err := s.cfg.Discoverer.Declared(dctx)
				cancel()
				if err != nil {
					s.log.Named("gc").Warn("cannot read the jobs declared in the cluster; keeping the ended jobs declared there for now", "error", err)
				} else {
					decls = d
				}
			}
			if decls == nil {
				continue
			}
			d, ok := decls[key]
			if ok && (d.Kind == structs.DeclaredJob || d.Kind == structs.DeclaredInvalid) {
				continue
			}
			if !ok {
				// Purged from the cluster, or a version its view could
				// not read yet (drivers/nomad's Declared): only a second
				// pass in a row without it is taken for a purge.
				undeclared[key] = true
				if !s.gc.undeclared[key] {
					continue
				}
			}
		}
		out = append(out, state.Collectable{Namespace: j.Namespace, JobID: j.ID, ModifyIndex: j.ModifyIndex})
	}
	s.gc.firstSeen = seen
	if declsRead && decls != nil {
		s.gc.undeclared = undeclared
	}
	return out, nil
}

// syncRetention commits the configured retention bounds when they differ
// from those in force, once every server applies RetentionSet entries.
func (s *Server) syncRetention(ctx context.Context) error {
	want := s.cfg.Retention
	if want == nil {
		want = structs.DefaultRetention()
	}
	have, err := state.Retention(s.State().Txn(), nil)
	if err != nil {
		return err
	}
	if have.Same(want) {
		return nil
	}
	if !s.supports(fsm.RetentionSetType) {
		return nil
	}
	if _, _, err := s.apply(ctx, fsm.RetentionSetType, &fsm.RetentionSetRequest{Retention: want}); err != nil {
		if errors.Is(err, ErrUpgradeInProgress) {
			return nil
		}
		return fmt.Errorf("commit retention bounds: %w", err)
	}
	s.log.Named("gc").Info("retention bounds committed", "max_job_samples", want.MaxJobSamples,
		"max_job_placements", want.MaxJobPlacements, "max_events", want.MaxEvents)
	return nil
}
