package server

import (
	"context"
	"errors"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/server/models"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
)

// monitorLeadership runs the leader loop while the server leads, and
// starts it again when asked (restartLeader) if it runs. Raft's
// notifications and the restarts arrive on different channels, so that a
// restart asked just before leadership was lost cannot start a loop after
// Raft said the server no longer leads.
func (s *Server) monitorLeadership() {
	defer s.wg.Done()
	stop := func() {}
	defer func() { stop() }()
	leading := false
	start := func() {
		stop()
		// The old loop has stopped: a new term's leader serves
		// consistent reads only after its own Barrier.
		s.setReadyForReads(false)
		stop = func() {}
		s.loopRunning.Store(false)
		if leading {
			stop = s.startLeaderLoop()
			s.loopRunning.Store(true)
		}
	}
	for {
		select {
		case <-s.shutdownCtx.Done():
			return
		case leading = <-s.notify:
			if leading {
				s.log.Info("gained leadership")
			} else {
				s.log.Info("lost leadership")
			}
			start()
		case done := <-s.restart:
			if leading && s.raft.State() == raft.Leader {
				s.log.Info("restarting the leader loop")
				start()
			}
			close(done)
		}
	}
}

// startLeaderLoop runs the leader loop in a goroutine, and the job
// garbage collector in another (gc.go), and returns a function that stops
// both and waits for them. In Manual mode it only makes the leader's view
// whole; Step runs the loop's steps and CollectGarbage the collector's.
func (s *Server) startLeaderLoop() func() {
	ctx, cancel := context.WithCancel(s.shutdownCtx)
	done := make(chan struct{})
	gcDone := make(chan struct{})
	if s.cfg.Manual {
		close(gcDone)
	} else {
		go func() {
			defer close(gcDone)
			s.runJobGC(ctx)
		}()
	}
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
		<-gcDone
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
	s   *Server
	log hclog.Logger
	// models holds the active runs' models and builds each round's
	// snapshot.
	models *models.Set
	// configIndex is the ModifyIndex of the scheduler config in force.
	configIndex uint64
	// nodes are the driver's nodes as last committed; nodesSynced, for a
	// NodesVersioner, the version they were read at and whether their
	// drivers were committed (gateNodeDrivers), nil before the first read.
	nodes       []*structs.Node
	nodesSynced *nodesSync
	// cursor is the metrics source's cursor.
	cursor uint64
	// runs holds the leader's state of each active job's run (see run).
	runs map[structs.JobKey]*run
	// jobsIndex and samplesIndex are the state's active jobs' index
	// (state.ActiveJobsIndex) and samples index when they were last
	// read: a step reads them again only when they moved.
	jobsIndex, samplesIndex uint64
	// queuesIndex is the state's queues index when they were last read.
	queuesIndex uint64
	// declaredAt is when the declarations were last acted on; rejected
	// holds, per declared job, the cluster index of the declaration last
	// rejected (a declaration is not a run: it may never become one).
	declaredAt declaredAt
	rejected   map[structs.JobKey]uint64
	// decidedBy is the algorithm of the last decision committed.
	decidedBy string
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

// nodesSync is what the nodes were last synced at.
type nodesSync struct {
	version   uint64
	supported bool
}

// driverTimeout bounds each call of the loop to the driver, the
// discoverer and the metrics source. They answer from views their own
// goroutines keep and start changes without waiting for them (see
// Driver), so a call takes far less; the bound keeps one that does wait
// on an unresponsive cluster from holding the loop, its dry runs and its
// sample commits, for longer.
const driverTimeout = 5 * time.Second

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
			plan, err := l.models.DryRun(req.job, l.nodes, s.now().UnixNano())
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

// switchAlgorithm plans with the algorithm the replicated config names
// from the next round on, when it changed.
func (l *leader) switchAlgorithm() error {
	alg, changed, err := l.algorithm(l.s.State().Txn())
	if err != nil || !changed {
		return err
	}
	l.models.SetAlgorithm(alg)
	l.urgent = true
	l.algErr = nil // a new algorithm's failures are its own
	l.log.Info("switched algorithm", "algorithm", alg.Name())
	return nil
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
