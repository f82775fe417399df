package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/caravan-sched/caravan/server/state"
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
)

// Consistent reads.
//
// A read is consistent by default: a follower forwards it to the leader,
// and the leader answers only after it has applied every entry committed
// before its term (readyForReads, set after the Barrier of establish) and
// confirmed with a quorum that it still leads (raft.VerifyLeader). A read
// with ?stale is answered by whichever server receives it from its own
// state, with X-Caravan-KnownLeader and X-Caravan-LastContact saying how
// far behind it may be, as Nomad's AllowStale. Blocking queries wait where
// they are answered: on the leader for consistent ones, on the receiving
// server for stale ones.

// ErrNotReadyForReads is returned by a consistent read on a leader that has
// not yet applied the entries of the terms before its own.
var ErrNotReadyForReads = errors.New("the leader is not ready to serve consistent reads yet")

// readState is the server's part in consistent reads.
type readState struct {
	// ready is set once the leader applied every entry committed before
	// its term, and cleared at every change of leadership.
	ready atomic.Bool
}

// setReadyForReads marks whether the leader may serve consistent reads.
func (s *Server) setReadyForReads(ready bool) { s.reads.ready.Store(ready) }

// establishedState reports whether the server's state is whole enough to
// say that something is absent: it leads and has applied every entry
// committed before its term. A follower's is never, since it cannot tell
// how far behind the leader it is; the writes that need this are
// forwarded to the leader.
func (s *Server) establishedState() bool { return s.reads.ready.Load() && s.IsLeader() }

// staleParam reports whether a request asks for a stale read: ?stale, or
// ?stale=<true>. ?consistent, the default, is accepted and ignored.
func staleParam(r *http.Request) bool {
	q := r.URL.Query()
	if !q.Has("stale") {
		return false
	}
	v := q.Get("stale")
	if v == "" {
		return true
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b
}

// consistentRead returns nil when the server may answer a consistent read
// from its state: it leads, has applied the log of earlier terms, and a
// quorum confirms its leadership now. A leader elected a moment ago waits
// for its Barrier, within the request's context and leaderHold.
func (s *Server) consistentRead(ctx context.Context) error {
	if !s.reads.ready.Load() {
		hold, cancel := context.WithTimeout(ctx, leaderHold)
		defer cancel()
		for !s.reads.ready.Load() {
			if !s.IsLeader() {
				return ErrNotLeader
			}
			select {
			case <-hold.Done():
				return ErrNotReadyForReads
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	if err := s.await(s.raft.VerifyLeader()); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return fmt.Errorf("%w: %v", ErrNotLeader, err)
		}
		return fmt.Errorf("verify leadership: %w", err)
	}
	return nil
}

// setQueryMeta sets X-Caravan-KnownLeader and X-Caravan-LastContact (in
// milliseconds; 0 on the leader), as Nomad's setQueryMeta.
func (s *Server) setQueryMeta(w http.ResponseWriter) {
	known, last := true, time.Duration(0)
	if !s.IsLeader() {
		addr, _ := s.raft.LeaderWithID()
		known = addr != ""
		if lc := s.raft.LastContact(); !lc.IsZero() {
			last = max(time.Since(lc), 0)
		} else {
			// Never heard from a leader: as stale as can be.
			last = time.Duration(1<<63 - 1)
		}
	}
	w.Header().Set("X-Caravan-KnownLeader", strconv.FormatBool(known))
	w.Header().Set("X-Caravan-LastContact", strconv.FormatUint(uint64(last/time.Millisecond), 10))
}

// Headers of forwarding.
const (
	// forwardedHeader names the server that forwarded a request; a server
	// that does not lead refuses a forwarded request rather than forward
	// it again.
	forwardedHeader = "X-Caravan-Forwarded"
	// notLeaderHeader marks a 503 of a server that did not lead and did
	// not act on the request: the forwarder may try the leader again.
	notLeaderHeader = "X-Caravan-Not-Leader"
)

// Transports of forwarded requests, with a short dial timeout so that a
// dead leader is noticed and the request retried. Reads keep their
// connections. Writes take a new connection each: on a kept one, a leader
// that went away looks the same (EOF) as one that died after applying the
// write, which cannot be retried; a refused connection can.
// With TLS on HTTP they present the server's certificate (tls is the
// Configurator's outgoing config, nil without TLS).
func forwardTransports(tls *tls.Config) (reads, writes *http.Transport) {
	reads = &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		TLSClientConfig:     tls,
	}
	writes = &http.Transport{
		DialContext:       (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		DisableKeepAlives: true,
		TLSClientConfig:   tls,
	}
	return reads, writes
}

// forwardRetry forwards a request to the leader and relays its answer. The
// request waits, up to leaderHold after its first failure, while no leader
// is known, while the known leader cannot be reached (a dial error), and
// while the server it reaches says it does not lead; a read is also tried
// again after any other transport error, since reads change nothing. A
// write whose transport fails after it was sent is not retried (it may
// have been applied) and answers 502.
func (s *Server) forwardRetry(w http.ResponseWriter, r *http.Request, read bool) {
	if r.Header.Get(forwardedHeader) != "" {
		w.Header().Set(notLeaderHeader, "true")
		http.Error(w, "request forwarded to a server that does not lead: leadership is changing, retry", http.StatusServiceUnavailable)
		return
	}
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes)); err != nil {
			http.Error(w, "read request body: "+err.Error(), errorCode(err))
			return
		}
	}
	var (
		first   time.Time
		backoff = 20 * time.Millisecond
		lastErr error
	)
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if first.IsZero() {
				first = time.Now()
			}
			if time.Since(first) > leaderHold {
				break
			}
			select {
			case <-r.Context().Done():
				s.abandoned(w, r)
				return
			case <-time.After(backoff/2 + rand.N(backoff/2+1)):
			}
			backoff = min(2*backoff, 500*time.Millisecond)
		}
		addr, err := s.leaderHTTP()
		if err != nil {
			lastErr = err
			continue
		}
		resp, err := s.forwardOnce(r, addr, body, read)
		switch {
		case err == nil && resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(notLeaderHeader) != "":
			resp.Body.Close()
			lastErr = fmt.Errorf("%w: %s no longer leads", ErrNoLeader, addr)
			continue
		case err == nil:
			relay(w, resp)
			return
		case r.Context().Err() != nil:
			s.abandoned(w, r)
			return
		case read || isDialError(err):
			s.log.Debug("cannot reach the leader, retrying", "leader", addr, "error", err)
			lastErr = fmt.Errorf("forward to leader %s: %w", addr, err)
			continue
		default:
			http.Error(w, "forward to leader: "+err.Error(), http.StatusBadGateway)
			return
		}
	}
	http.Error(w, lastErr.Error(), http.StatusServiceUnavailable)
}

// abandoned answers a request whose context ended before the server could
// carry it out or hear the leader's answer: the client went away, or the
// server is shutting down (request contexts derive from its own). A
// handler that answers nothing gets 200 OK from net/http, which a client
// still reading would take for a write carried out; the chaos suite caught
// exactly that. The answer does not say "not the leader": a write sent on
// may have been carried out, so a server that forwarded it must not retry.
func (s *Server) abandoned(w http.ResponseWriter, r *http.Request) {
	msg := fmt.Sprintf("request ended before the leader answered (%v): a write may or may not have been carried out", context.Cause(r.Context()))
	if s.shutdownCtx.Err() != nil {
		msg = "server shutting down before the leader answered: a write may or may not have been carried out"
	}
	http.Error(w, msg, http.StatusServiceUnavailable)
}

// forwardOnce sends r with body to the server at addr.
func (s *Server) forwardOnce(r *http.Request, addr string, body []byte, read bool) (*http.Response, error) {
	u := url.URL{Scheme: s.peerScheme(), Host: addr, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Header.Set(forwardedHeader, s.cfg.NodeID)
	out.Header.Del("Connection")
	out.ContentLength = int64(len(body))
	if read {
		return s.forwardReads.RoundTrip(out)
	}
	return s.forwardWrites.RoundTrip(out)
}

// relay copies a response to w.
func relay(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if k == "Connection" || k == "Transfer-Encoding" || k == "Keep-Alive" {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// isDialError reports whether err happened before the request was sent:
// the connection could not be made.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// notActedOn reports whether err says the server did nothing with the
// request because it does not lead, so that the server that forwarded it
// may send it to the leader again: any ErrNotLeader of a read, and of a
// write only Raft's refusal to take the entry (ErrLeadershipLost may come
// after the entry was committed).
func notActedOn(err error, read bool) bool {
	if read {
		return errors.Is(err, ErrNotLeader)
	}
	return errors.Is(err, raft.ErrNotLeader)
}

// notFoundResult carries a query's not-found error as a result, so that a
// blocking query waits for the thing to appear rather than answer 404 at
// once.
type notFoundResult struct{ err error }

// waitingNotFound turns a query's not-found errors into notFoundResults.
func waitingNotFound(query state.QueryFunc) state.QueryFunc {
	return func(txn *memdb.Txn, ws memdb.WatchSet) (any, uint64, error) {
		res, idx, err := query(txn, ws)
		if err != nil && errorCode(err) == http.StatusNotFound {
			return notFoundResult{err}, idx, nil
		}
		return res, idx, err
	}
}
