package server

import (
	"context"
	"fmt"
	"time"

	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/hashicorp/raft"
)

// apply commits a request through Raft on the leader and returns the
// FSM's response and the entry's index. An error of the FSM (a rejected
// request) is returned as the error.
//
// A message type that a server of the configuration cannot apply yet is
// refused with ErrUpgradeInProgress (supports), so that no server meets an
// entry it does not know.
func (s *Server) apply(ctx context.Context, t fsm.MessageType, req any) (any, uint64, error) {
	if err := s.supportsErr(t); err != nil {
		return nil, 0, err
	}
	buf, err := fsm.Encode(t, req)
	if err != nil {
		return nil, 0, err
	}
	timeout := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	f := s.raft.Apply(buf, timeout)
	if err := s.await(f); err != nil {
		if err == raft.ErrNotLeader || err == raft.ErrLeadershipLost {
			return nil, 0, fmt.Errorf("%w: %w", ErrNotLeader, err)
		}
		return nil, 0, fmt.Errorf("commit %s: %w", t, err)
	}
	if err, ok := f.Response().(error); ok {
		return nil, f.Index(), err
	}
	return f.Response(), f.Index(), nil
}

// await waits for f unless the server shuts down first. Raft answers no
// future still queued when it shuts down (Apply's queue is buffered), so
// waiting on Error alone could block the leader loop, and Shutdown behind
// it, forever; the waiting goroutine is left to end with the process.
func (s *Server) await(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-s.shutdownCtx.Done():
		return raft.ErrRaftShutdown
	}
}
