package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/caravan-sched/caravan/server/state"
	"github.com/hashicorp/go-memdb"
)

// Tokens on followers.
//
// A server that is not the leader answers some requests itself: ?stale
// reads and the endpoints each server answers about itself. It resolves
// their tokens from its own replicated state, which lags the leader's by
// the time it takes to hear of a commit (tens of milliseconds, more when
// the follower is slow or cut off). A token the leader has deleted would
// still work on it in that time, and for as long as it stays cut off.
//
// So a follower does not trust its own ACL state alone: before it acts on
// a token it finds there, it asks the leader for the index of the
// leader's ACL state (GET /v1/internal/acl/index, a consistent read: the
// leader confirms with a quorum that it still leads) and waits, up to
// aclCatchUpHold, until it has applied that index itself; then it
// resolves the token again. A token deleted, or a policy narrowed, before
// the request reached the follower is then refused or narrowed as on the
// leader. Nothing is cached between requests: each one asks again.
//
// During a rolling upgrade, a leader before 0.2.0 has no index to give
// (its endpoint answers 404): its followers resolve tokens from their own
// state, as that version's do, until a new leader takes over.
//
// The price: a follower answers a request with a token only while it can
// reach a leader and keep up with it. Without one it answers 503, and the
// data of a ?stale read stays as stale as it was (only the token is
// checked against the leader). Anonymous requests, the server token and
// per-job report tokens, which no delete revokes, are resolved locally as
// before. Resolving against the leader instead (forwarding the token)
// would need the same round trip and still compile the policies from the
// follower's state; catching up gives the follower the leader's tokens
// and policies both.

// aclCatchUpHold bounds how long a follower waits to apply the leader's
// ACL state before it refuses a request with a token.
const aclCatchUpHold = 2 * time.Second

// aclTables are the tables a token's resolution reads.
var aclTables = []string{state.TableACLTokens, state.TableACLPolicies, state.TableACLBootstrap}

// aclIndex answers the index of this server's ACL state: on the leader,
// after a consistent read, the index a follower must reach before it
// resolves a token (see above).
func (s *Server) aclIndex(w http.ResponseWriter, r *http.Request) (any, error) {
	return map[string]uint64{"Index": state.IndexOf(s.State().Txn(), aclTables...)}, nil
}

// errBehindLeader answers a request a follower cannot check against the
// leader's ACL state.
func errBehindLeader(err error) error {
	return &CodedError{Code: http.StatusServiceUnavailable, Err: fmt.Errorf("this server cannot confirm the token with the leader's ACL state, retry or send the request to the leader: %w", err)}
}

// catchUpACL returns once this server has applied the ACL state of the
// leader as it is now, or a 503 error when it cannot learn the leader's
// index or reach it within aclCatchUpHold.
func (s *Server) catchUpACL(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, aclCatchUpHold)
	defer cancel()
	want, err := s.leaderACLIndex(ctx)
	if errors.Is(err, errLeaderTooOld) {
		// A leader before 0.2.0, during a rolling upgrade: the token is
		// resolved from this server's state, as that leader's followers
		// resolve it.
		return nil
	}
	if err != nil {
		return errBehindLeader(err)
	}
	if want == 0 {
		return nil
	}
	_, have, err := state.BlockingQuery(ctx, s.State, want-1, aclCatchUpHold, func(txn *memdb.Txn, ws memdb.WatchSet) (any, uint64, error) {
		if _, err := state.ACLTokens(txn, ws); err != nil {
			return nil, 0, err
		}
		if _, err := state.ACLPolicies(txn, ws); err != nil {
			return nil, 0, err
		}
		return nil, state.IndexOf(txn, aclTables...), nil
	})
	if err != nil {
		return errBehindLeader(err)
	}
	if have < want {
		return errBehindLeader(fmt.Errorf("the leader's ACL state is at index %d, this server's at %d", want, have))
	}
	return nil
}

// errLeaderTooOld is leaderACLIndex's error for a leader of a version
// before 0.2.0 (its member record has no Version), which has no ACL index
// endpoint (404).
var errLeaderTooOld = errors.New("the leader predates the ACL index")

// leaderACLIndex asks the leader for the index of its ACL state, with
// the server token.
func (s *Server) leaderACLIndex(ctx context.Context) (uint64, error) {
	leader, err := s.leaderMember()
	if err != nil {
		return 0, err
	}
	addr := leader.HTTPAddr
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.peerScheme()+"://"+addr+"/v1/internal/acl/index", nil)
	if err != nil {
		return 0, err
	}
	if t := s.cfg.ACL.ServerToken; t != "" {
		req.Header.Set("X-Caravan-Token", t)
	}
	resp, err := s.forwardReads.RoundTrip(req)
	if err != nil {
		return 0, fmt.Errorf("ask the leader at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound && leader.Version == "" {
		// Only a leader whose record says it predates 0.2.0 is believed:
		// from any other, a 404 fails closed with the other errors.
		return 0, fmt.Errorf("%w: the leader at %s has no ACL index endpoint", errLeaderTooOld, addr)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("the leader at %s answered %s: %s", addr, resp.Status, msg)
	}
	var out struct{ Index uint64 }
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&out); err != nil {
		return 0, fmt.Errorf("the leader's answer at %s: %w", addr, err)
	}
	return out.Index, nil
}
