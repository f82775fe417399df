package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/rpc"
	"os"
	"sync"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
)

// pullWait bounds how long a parameter server holds a Pull for a step it
// has not reached: the worker then asks again, so that neither side waits
// on a connection that may be dead.
const pullWait = 2 * time.Second

// finishGrace is how long a finished parameter server waits for the
// workers that have not yet heard that training is done.
const finishGrace = 10 * time.Second

// finishLinger is how long a parameter server whose workers were all told
// that training is done keeps serving, so that its replies are delivered.
const finishLinger = 500 * time.Millisecond

// The RPC messages between workers and parameter servers (net/rpc, gob).
// Every reply carries the server's incarnation so that a worker notices a
// restart, and Done once training is over.

// PullArgs asks for the parameters of step Version; a negative Version
// asks for the current ones.
type PullArgs struct {
	Rank    int
	Version int64
	// Pad asks for that many bytes of padding with the parameters
	// (-comm-bytes), at most maxCommBytes.
	Pad int
}

// PullReply holds the server's slice at Version. NotReady means the step
// was not reached within pullWait: ask again.
type PullReply struct {
	Incarnation string
	Done        bool
	NotReady    bool
	Version     int64
	Params      []float64
	Pad         []byte
	// Stats are the gradient statistics of the slice at the step that
	// led to Version (sync mode; zero when unknown).
	Stats GradStats
}

// PushArgs is worker Rank's gradient of the server's slice at step
// Version.
type PushArgs struct {
	Rank    int
	Version int64
	Grad    []float64
	// Pad is -comm-bytes of padding, ignored.
	Pad []byte
	// SqrNorm is the sum of the squared norms of the slice of the
	// gradients of the worker's Micro microbatches (sync mode; batch.go).
	SqrNorm float64
	Micro   int
	// LRGain, from the chief, multiplies the learning rate of the step
	// (AdaScale's gain); 0, from the other workers, says nothing.
	LRGain float64
}

// PushReply says whether the push counted: Stale means the step was
// already applied (a retry, or a restarted worker).
type PushReply struct {
	Incarnation string
	Done        bool
	Stale       bool
}

// CheckpointArgs asks for the server's slice to be written under Tag. In
// sync mode Step is the step the chief expects the server to be at.
type CheckpointArgs struct {
	Tag  string
	Step int64
}

// CheckpointReply locates the shard written.
type CheckpointReply struct {
	Incarnation string
	Shard       shardRef
}

// FinishArgs tells the server that training is done.
type FinishArgs struct{}

// FinishReply acknowledges FinishArgs.
type FinishReply struct{ Incarnation string }

// paramServer owns one contiguous slice of the parameter vector and
// applies the workers' gradients to it: in sync mode the average of one
// gradient per worker per step (a barrier), in async mode each gradient as
// it comes. Its exported methods are the RPC service "PS"; they are safe
// for concurrent use.
type paramServer struct {
	log         hclog.Logger
	cfg         *config
	root        string // ckpt directory
	offset      int
	incarnation string

	mu     sync.Mutex
	params []float64
	step   int64
	// In sync mode, sum accumulates the gradients of step and pushed
	// records which workers sent theirs.
	sum     []float64
	pushed  []bool
	npushed int
	// sqrSum and micro add up the pushes' SqrNorm and Micro for step,
	// gain is the chief's LRGain for it; stats are those of the step
	// last applied, which pulls return.
	sqrSum float64
	micro  int
	gain   float64
	stats  GradStats
	// advanced is closed, and replaced, whenever step advances or
	// training ends: Pull waits on it.
	advanced chan struct{}
	done     bool
	// told records the workers that heard training is done; finished is
	// closed once all have (or is left to finishGrace).
	told     []bool
	finished chan struct{}
	// lastCall is when a worker last called, for the idle timeout.
	lastCall time.Time
}

func newParamServer(cfg *config, log hclog.Logger) *paramServer {
	offset, length := partition(cfg.Features, cfg.NumPS, cfg.Rank)
	return &paramServer{
		log:         log,
		cfg:         cfg,
		root:        ckptRoot(cfg.CheckpointDir),
		offset:      offset,
		incarnation: randomID(),
		params:      make([]float64, length),
		sum:         make([]float64, length),
		pushed:      make([]bool, cfg.NumWorkers),
		advanced:    make(chan struct{}),
		told:        make([]bool, cfg.NumWorkers),
		finished:    make(chan struct{}),
		lastCall:    time.Now(),
	}
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// restore loads the server's slice and step from the latest checkpoint.
// It returns false, and leaves the server at step 0, when there is none.
func (s *paramServer) restore() (bool, error) {
	m, err := readManifest(s.root)
	if noCheckpoint(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if m.Features != s.cfg.Features {
		return false, fmt.Errorf("checkpoint has %d parameters but -features is %d", m.Features, s.cfg.Features)
	}
	params, err := loadSlice(s.root, m, s.offset, len(s.params))
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.params, s.step = params, m.Step
	return true, nil
}

// runPS serves until training is done (nil), ctx ends (ctx.Err()), or no
// worker called for the idle timeout.
func runPS(ctx context.Context, cfg *config, log hclog.Logger) error {
	s := newParamServer(cfg, log)
	if cfg.Resume {
		ok, err := s.restore()
		if err != nil {
			return fmt.Errorf("resume from checkpoint: %w", err)
		}
		if ok {
			log.Info("resumed from checkpoint", "step", s.step)
		} else {
			log.Warn("resume asked but there is no checkpoint; starting from step 0", "dir", s.root)
		}
	}
	srv := rpc.NewServer()
	if err := srv.RegisterName("PS", s); err != nil {
		return fmt.Errorf("register rpc service: %w", err)
	}
	l, err := net.Listen("tcp", cfg.Bind)
	if err != nil {
		return fmt.Errorf("listen on -bind %s: %w", cfg.Bind, err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return // closed on exit
			}
			go srv.ServeConn(conn)
		}
	}()
	addr := psAddress{Addr: l.Addr().String(), Incarnation: s.incarnation, PID: os.Getpid()}
	if err := publishPS(cfg.CheckpointDir, cfg.Generation, cfg.Rank, addr); err != nil {
		return fmt.Errorf("publish address: %w", err)
	}
	log.Info("parameter server ready", "addr", addr.Addr, "offset", s.offset, "len", len(s.params), "step", s.currentStep())

	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	var grace <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.finished:
			// Let the last replies reach their workers before the
			// connections close.
			if err := sleep(ctx, finishLinger); err != nil {
				return err
			}
			log.Info("training finished; every worker was told", "step", s.currentStep())
			return nil
		case <-grace:
			log.Info("training finished; not every worker was told in time", "step", s.currentStep(), "grace", finishGrace)
			return nil
		case <-ticker.C:
			s.mu.Lock()
			done, idle := s.done, time.Since(s.lastCall)
			s.mu.Unlock()
			if done && grace == nil {
				grace = time.After(finishGrace)
			}
			if idle > cfg.IdleTimeout {
				return fmt.Errorf("no worker called for %v (-idle-timeout): the workers are gone", idle.Round(time.Second))
			}
		}
	}
}

func (s *paramServer) currentStep() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.step
}

// checkRank validates a worker's rank. s.mu is held.
func (s *paramServer) checkRank(rank int) error {
	if rank < 0 || rank >= s.cfg.NumWorkers {
		return fmt.Errorf("worker rank %d is not below %d: worker and parameter server disagree on %s", rank, s.cfg.NumWorkers, envNumWorkers)
	}
	s.lastCall = time.Now()
	return nil
}

// tell records that worker rank heard training is done. s.mu is held.
func (s *paramServer) tell(rank int) {
	if s.told[rank] {
		return
	}
	s.told[rank] = true
	for _, t := range s.told {
		if !t {
			return
		}
	}
	close(s.finished)
}

// advance wakes the pulls waiting for the next step. s.mu is held.
func (s *paramServer) advance() {
	close(s.advanced)
	s.advanced = make(chan struct{})
}

// Pull returns the server's slice at step args.Version or later, waiting
// up to pullWait for it.
func (s *paramServer) Pull(args PullArgs, reply *PullReply) error {
	timer := time.NewTimer(pullWait)
	defer timer.Stop()
	reply.Incarnation = s.incarnation
	for {
		s.mu.Lock()
		if err := s.checkRank(args.Rank); err != nil {
			s.mu.Unlock()
			return err
		}
		if s.done {
			s.tell(args.Rank)
			s.mu.Unlock()
			reply.Done = true
			return nil
		}
		if args.Version < 0 || s.step >= args.Version {
			reply.Version = s.step
			reply.Params = append([]float64(nil), s.params...)
			reply.Stats = s.stats
			s.mu.Unlock()
			reply.Pad = pad(args.Pad)
			return nil
		}
		wait := s.advanced
		s.mu.Unlock()
		select {
		case <-wait:
		case <-timer.C:
			reply.NotReady = true
			return nil
		}
	}
}

// Push adds a worker's gradient. In sync mode it counts towards step
// args.Version, which is applied, as the average of all workers'
// gradients, when the last worker has pushed; a second push of the same
// worker for a step is ignored, so pushes can be retried. In async mode
// the gradient is applied at once.
func (s *paramServer) Push(args PushArgs, reply *PushReply) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	reply.Incarnation = s.incarnation
	if err := s.checkRank(args.Rank); err != nil {
		return err
	}
	if len(args.Grad) != len(s.params) {
		return fmt.Errorf("gradient has %d values; this parameter server owns %d", len(args.Grad), len(s.params))
	}
	if s.done {
		s.tell(args.Rank)
		reply.Done = true
		return nil
	}
	lr := s.cfg.LR
	if s.cfg.Mode == structs.ModeAsync {
		for i, g := range args.Grad {
			s.params[i] -= lr * g
		}
		s.step++
		s.advance()
		return nil
	}
	switch {
	case args.Version < s.step:
		reply.Stale = true
		return nil
	case args.Version > s.step:
		return fmt.Errorf("push for step %d, but this parameter server is at step %d", args.Version, s.step)
	case s.pushed[args.Rank]:
		return nil
	}
	for i, g := range args.Grad {
		s.sum[i] += g
	}
	s.sqrSum += args.SqrNorm
	s.micro += args.Micro
	if args.Rank == 0 && args.LRGain > 0 && !math.IsInf(args.LRGain, 0) {
		s.gain = args.LRGain
	}
	s.pushed[args.Rank] = true
	s.npushed++
	if s.npushed < s.cfg.NumWorkers {
		return nil
	}
	s.stats = GradStats{}
	if s.micro > 0 {
		mean := 0.0
		for _, g := range s.sum {
			m := g / float64(s.cfg.NumWorkers)
			mean += m * m
		}
		s.stats = GradStats{MicroSqr: s.sqrSum / float64(s.micro), MeanSqr: mean, Micro: s.micro}
	}
	gain := 1.0
	if s.gain > 0 {
		gain = s.gain
	}
	scale := lr * gain / float64(s.cfg.NumWorkers)
	for i := range s.params {
		s.params[i] -= scale * s.sum[i]
	}
	clear(s.sum)
	clear(s.pushed)
	s.npushed, s.sqrSum, s.micro, s.gain = 0, 0, 0, 0
	s.step++
	s.advance()
	return nil
}

// Checkpoint writes the server's slice as it is now under args.Tag. In
// sync mode the server must be at args.Step: the chief asks at a step
// boundary, before it pushes, so no update can be applied meanwhile.
func (s *paramServer) Checkpoint(args CheckpointArgs, reply *CheckpointReply) error {
	s.mu.Lock()
	s.lastCall = time.Now()
	sh := shard{Step: s.step, Offset: s.offset, Len: len(s.params), Params: append([]float64(nil), s.params...)}
	s.mu.Unlock()
	reply.Incarnation = s.incarnation
	if s.cfg.Mode == structs.ModeSync && sh.Step != args.Step {
		return fmt.Errorf("asked to checkpoint step %d, but this parameter server is at step %d", args.Step, sh.Step)
	}
	ref, err := writeShard(s.root, args.Tag, s.cfg.Rank, sh)
	if err != nil {
		s.log.Error("checkpoint failed", "tag", args.Tag, "error", err)
		return err
	}
	s.log.Info("shard written", "step", sh.Step, "file", ref.File)
	reply.Shard = ref
	return nil
}

// Finish ends training: pending and later pulls and pushes answer Done.
func (s *paramServer) Finish(_ FinishArgs, reply *FinishReply) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	reply.Incarnation = s.incarnation
	s.lastCall = time.Now()
	if !s.done {
		s.done = true
		s.log.Info("chief says training is done", "step", s.step)
		if err := markDone(s.cfg.CheckpointDir, s.cfg.Generation); err != nil {
			s.log.Warn("could not write the done marker", "error", err)
		}
		s.advance()
		s.tell(0) // the chief asks, so it knows
	}
	return nil
}

// errDone is returned by a worker's calls once a parameter server says
// that training is done.
var errDone = errors.New("training is done")
