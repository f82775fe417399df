package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
)

// Request body limits.
const (
	maxBodyBytes     = 1 << 20 // jobs and other JSON bodies
	maxSnapshotBytes = 1 << 30 // snapshot restores
	maxWait          = 10 * time.Minute
	defaultWait      = 5 * time.Minute
)

// bodyLimits holds the routes, by pattern, whose bodies may be larger
// than maxBodyBytes, and their limits. Every other route takes at most
// maxBodyBytes, as the handlers' MaxBytesReaders enforce.
var bodyLimits = map[string]int64{
	"PUT /v1/operator/snapshot": maxSnapshotBytes,
}

// refuseDeclaredTooLarge answers 413 to a request whose Content-Length
// declares a body larger than its route takes, before anything reads the
// body. It is the one place the declared size is checked, for every
// route: net/http sends "100 Continue" at the body's first read, so a
// client that sent "Expect: 100-continue" learns at once that its body is
// refused instead of sending it, or waiting bodyReadTimeout for a 400. A
// body of unknown length (chunked) is bounded while it is read, by the
// MaxBytesReaders of the handlers.
func refuseDeclaredTooLarge(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxBodyBytes {
			limit := int64(maxBodyBytes)
			if _, pattern := mux.Handler(r); bodyLimits[pattern] > 0 {
				limit = bodyLimits[pattern]
			}
			if r.ContentLength > limit {
				// The unread body makes net/http close the connection
				// after the answer.
				http.Error(w, fmt.Sprintf("request body of %d bytes is larger than %d bytes", r.ContentLength, limit), http.StatusRequestEntityTooLarge)
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// CodedError is an error with the HTTP status it maps to.
type CodedError struct {
	Code int
	Err  error
}

func (e *CodedError) Error() string { return e.Err.Error() }
func (e *CodedError) Unwrap() error { return e.Err }

// badRequest returns a 400 error.
func badRequest(format string, args ...any) error {
	return &CodedError{Code: http.StatusBadRequest, Err: fmt.Errorf(format, args...)}
}

// notFound returns a 404 error.
func notFound(format string, args ...any) error {
	return &CodedError{Code: http.StatusNotFound, Err: fmt.Errorf(format, args...)}
}

// orEmpty returns s, or an empty slice for nil, so that lists encode as []
// rather than null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// endpoint handles one route. It returns the value to encode as JSON (nil
// for no body) or an error.
type endpoint func(w http.ResponseWriter, r *http.Request) (any, error)

func (s *Server) setupHTTP() error {
	l, err := listen(s.cfg.HTTPAddr)
	if err != nil {
		return err
	}
	s.httpAddr = l.Addr().String()
	if s.cfg.TLS != nil && s.cfg.TLS.HTTP {
		l = tls.NewListener(l, s.tls.IncomingHTTP())
	}
	mux := http.NewServeMux()
	s.routes(mux)
	s.http = &http.Server{
		Handler:           instrument(refuseDeclaredTooLarge(mux)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       idleTimeout,
		ErrorLog:          s.log.Named("http").StandardLogger(nil),
		// Requests end when the server shuts down, blocking queries too.
		BaseContext: func(net.Listener) context.Context { return s.shutdownCtx },
	}
	go func() {
		if err := s.http.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "error", err)
		}
	}()
	return nil
}

// read wraps an endpoint that reads the replicated state: consistently by
// default, answered by the leader once it confirmed it leads (followers
// forward the request); with ?stale, by any server from its own state (see
// reads.go).
func (s *Server) read(fn endpoint) http.HandlerFunc { return s.handle(fn, kindRead) }

// write wraps an endpoint that only the leader answers; followers forward
// the request to it.
func (s *Server) write(fn endpoint) http.HandlerFunc { return s.handle(fn, kindWrite) }

// local wraps an endpoint that each server answers about itself.
func (s *Server) local(fn endpoint) http.HandlerFunc { return s.handle(fn, kindLocal) }

// localKey marks, in a request's context, an endpoint each server answers
// about itself: it is never answered by another server.
type localKey struct{}

// Kinds of endpoints.
const (
	kindLocal = iota
	kindRead
	kindWrite
)

func (s *Server) handle(fn endpoint, kind int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if kind == kindLocal {
			r = r.WithContext(context.WithValue(r.Context(), localKey{}, true))
		}
		bodyDeadline(w, r)
		stale := kind == kindRead && staleParam(r)
		if kind != kindLocal && !stale && !s.IsLeader() {
			s.forwardRetry(w, r, kind == kindRead)
			return
		}
		if kind == kindRead && !stale {
			if err := s.consistentRead(r.Context()); err != nil {
				if errors.Is(err, ErrNotLeader) {
					w.Header().Set(notLeaderHeader, "true")
				}
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		if kind == kindRead {
			s.setQueryMeta(w)
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		out, err := fn(w, r)
		if err != nil {
			code := errorCode(err)
			if notActedOn(err, kind == kindRead) {
				w.Header().Set(notLeaderHeader, "true")
			}
			s.log.Debug("request failed", "method", r.Method, "path", r.URL.Path, "code", code, "error", err)
			http.Error(w, err.Error(), code)
			return
		}
		s.log.Trace("request", "method", r.Method, "path", r.URL.Path, "duration", time.Since(start))
		if out == nil {
			return
		}
		if idx := writeIndex(out); kind == kindWrite && idx > 0 {
			w.Header().Set("X-Caravan-Index", strconv.FormatUint(idx, 10))
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		if _, ok := r.URL.Query()["pretty"]; ok {
			enc.SetIndent("", "    ")
		}
		enc.Encode(out)
	}
}

// writeIndex is the Raft index a write's answer carries, its Index or
// the ModifyIndex of what it wrote, as Nomad answers a write's index in
// X-Nomad-Index; 0 when it carries none.
func writeIndex(out any) uint64 {
	if m, ok := out.(map[string]uint64); ok {
		return m["Index"]
	}
	v := reflect.Indirect(reflect.ValueOf(out))
	if v.Kind() != reflect.Struct {
		return 0
	}
	for _, name := range []string{"Index", "ModifyIndex"} {
		if f := v.FieldByName(name); f.IsValid() && f.Kind() == reflect.Uint64 {
			return f.Uint()
		}
	}
	return 0
}

func errorCode(err error) int {
	var coded *CodedError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &coded):
		return coded.Code
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, fsm.ErrTooComplex):
		return http.StatusBadRequest
	case errors.Is(err, state.ErrJobNotFound), errors.Is(err, state.ErrQueueNotFound):
		return http.StatusNotFound
	case errors.Is(err, state.ErrJobExists), errors.Is(err, state.ErrJobElsewhere), errors.Is(err, state.ErrQueueConflict):
		return http.StatusConflict
	case errors.Is(err, state.ErrQueueInvalid), errors.Is(err, state.ErrTooManyQueues):
		return http.StatusBadRequest
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrNoLeader), errors.Is(err, ErrUpgradeInProgress):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// forward proxies a request to the leader.
func (s *Server) forward(w http.ResponseWriter, r *http.Request) {
	// During an election, or just after one while the new leader's
	// address replicates, the request waits a little, as Nomad holds RPCs
	// (rpc_hold_timeout) rather than failing them at once.
	addr, err := s.leaderHTTP()
	for hold := time.Now().Add(leaderHold); err != nil && time.Now().Before(hold); {
		select {
		case <-r.Context().Done():
			s.abandoned(w, r)
			return
		case <-time.After(50 * time.Millisecond):
		}
		addr, err = s.leaderHTTP()
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	if r.Header.Get(forwardedHeader) != "" {
		http.Error(w, "request forwarded to a server that does not lead: leadership is changing, retry", http.StatusServiceUnavailable)
		return
	}
	r.Header.Set(forwardedHeader, s.cfg.NodeID)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: s.peerScheme(), Host: addr})
	proxy.Transport = s.peerTransport
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		http.Error(w, "forward to leader: "+err.Error(), http.StatusBadGateway)
	}
	proxy.ServeHTTP(w, r)
}

// leaderHold bounds how long a request to a follower waits for a leader
// it can forward to.
const leaderHold = 5 * time.Second

// maxBodyDepth bounds how deeply a JSON body's objects and arrays nest. No
// request needs more (a jobspec nests at most jobspec.MaxNestingDepth
// levels), and it is far below the msgpack decoder's limit (1024): a job
// the API accepts must decode from the Raft log, or every server would
// refuse the entry the leader committed.
const maxBodyDepth = 2 * jobspec.MaxNestingDepth

// decode reads a JSON body into v, rejecting bodies that nest over
// maxBodyDepth levels, unknown fields and trailing data.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("request body is larger than %d bytes: %w", tooBig.Limit, err)
		}
		return badRequest("read request body: %v", err)
	}
	if jsonDepthOver(body, maxBodyDepth) {
		return badRequest("request body nests objects and arrays more than %d levels deep", maxBodyDepth)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("request body is not valid JSON for this endpoint: %v", err)
	}
	// More would miss a stray '}' or ']': only the end of the body will do.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("request body has data after its JSON value")
	}
	return nil
}

// jsonDepthOver reports whether b's objects and arrays nest more than max
// levels deep, counting brackets outside strings. It does not check that b
// is JSON: a decoder does that after it.
func jsonDepthOver(b []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// namespace returns the ?namespace= parameter, default "default".
func namespace(r *http.Request) string {
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	return structs.DefaultNamespace
}

// blocking answers a read with Nomad's blocking-query semantics: with
// ?index=N it waits (up to ?wait=, default 5m) until the result's index
// exceeds N, a result that is not found (404) included: a blocking read of
// a job about to be registered answers once it is. The index is returned
// in X-Caravan-Index.
func (s *Server) blocking(w http.ResponseWriter, r *http.Request, query state.QueryFunc) (any, error) {
	q := r.URL.Query()
	var minIndex uint64
	if v := q.Get("index"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, badRequest("index %q is not a non-negative integer", v)
		}
		minIndex = n
	}
	wait := defaultWait
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, badRequest("wait %q is not a duration such as 30s", v)
		}
		wait = min(d, maxWait)
	}
	res, idx, err := state.BlockingQuery(r.Context(), s.State, minIndex, wait, waitingNotFound(query))
	if err == nil {
		if nf, ok := res.(notFoundResult); ok {
			err = nf.err
		}
	}
	if err != nil {
		return nil, err
	}
	w.Header().Set("X-Caravan-Index", strconv.FormatUint(max(idx, 1), 10))
	return res, nil
}

// queryOf adapts a read of one value to a QueryFunc whose index is that of
// tables.
func queryOf(read func(txn *memdb.Txn, ws memdb.WatchSet) (any, error), tables ...string) state.QueryFunc {
	return func(txn *memdb.Txn, ws memdb.WatchSet) (any, uint64, error) {
		v, err := read(txn, ws)
		return v, state.IndexOf(txn, tables...), err
	}
}

// context of a request bounded for Raft applies.
func applyContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 30*time.Second)
}

// boolParam parses a boolean query parameter.
func boolParam(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(strings.ToLower(v))
	if err != nil {
		return false, badRequest("%s=%q is not a boolean", name, v)
	}
	return b, nil
}
