package coord

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Paths of the HTTP API, below the collector's address.
const (
	AcquirePath = "/v1/coord/acquire"
	ReleasePath = "/v1/coord/release"
	StatusPath  = "/v1/coord/status"
)

// Limits of the HTTP API.
const (
	// DefaultWait is how long POST /v1/coord/acquire waits for a slot
	// without ?wait=; MaxWait bounds any wait.
	DefaultWait = 30 * time.Second
	MaxWait     = time.Minute
	// maxQueryBytes bounds the query string of a request.
	maxQueryBytes = 1024
)

// AcquireResponse is the answer of POST /v1/coord/acquire. Granted is
// false when the wait passed before a slot was free: the request left the
// queue, and the caller asks again.
type AcquireResponse struct {
	Granted  bool
	Lease    string   `json:",omitempty"`
	Resource Resource `json:",omitempty"`
	Role     Role     `json:",omitempty"`
	TTLS     float64  `json:",omitempty"`
	WaitedS  float64  `json:",omitempty"`
}

// ReleaseResponse is the answer of POST /v1/coord/release.
type ReleaseResponse struct {
	Released bool
}

// Register adds the coordinator's routes to mux. log may be nil.
func (c *Coordinator) Register(mux *http.ServeMux, log hclog.Logger) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	h := &handler{c: c, log: log}
	mux.HandleFunc("POST "+AcquirePath, h.wrap(h.acquire))
	mux.HandleFunc("POST "+ReleasePath, h.wrap(h.release))
	mux.HandleFunc("GET "+StatusPath, h.wrap(h.status))
}

type handler struct {
	c   *Coordinator
	log hclog.Logger
}

type badRequestError struct{ err error }

func (e *badRequestError) Error() string { return e.err.Error() }
func (e *badRequestError) Unwrap() error { return e.err }

func badRequest(format string, args ...any) error {
	return &badRequestError{fmt.Errorf(format, args...)}
}

func errorCode(err error) int {
	var bad *badRequestError
	switch {
	case errors.As(err, &bad), errors.Is(err, ErrInvalidRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrQueueFull):
		return http.StatusTooManyRequests
	case errors.Is(err, ErrUnknownLease):
		return http.StatusNotFound
	case errors.Is(err, ErrClosed):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// wrap answers fn's value as JSON, or its error as text with its status.
// A body, which no route takes, is refused.
func (h *handler) wrap(fn func(*http.Request) (any, func(), error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var out any
		var undo func()
		var err error
		switch {
		case len(r.URL.RawQuery) > maxQueryBytes:
			err = badRequest("query is %d bytes long; the limit is %d", len(r.URL.RawQuery), maxQueryBytes)
		case r.ContentLength > 0:
			err = badRequest("the request takes no body; it has %d bytes", r.ContentLength)
		default:
			out, undo, err = fn(r)
		}
		if err != nil {
			code := errorCode(err)
			h.log.Debug("coordinator request failed", "path", r.URL.Path, "code", code, "error", err)
			if code == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			http.Error(w, err.Error(), code)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(out); err != nil && undo != nil {
			// The caller is gone: it will never release what it was given.
			h.log.Debug("cannot write a grant; releasing it", "error", err)
			undo()
		}
	}
}

// acquire answers POST /v1/coord/acquire?resource=cpu|net&holder=H&ttl=D&wait=D.
func (h *handler) acquire(r *http.Request) (any, func(), error) {
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "resource", "holder", "ttl", "wait":
		default:
			return nil, nil, badRequest("unknown parameter %q: use resource, holder, ttl and wait", truncate(k))
		}
	}
	req := Request{Resource: Resource(q.Get("resource")), Holder: q.Get("holder")}
	var err error
	if req.TTL, err = duration(q.Get("ttl"), 0); err != nil {
		return nil, nil, badRequest("ttl: %w", err)
	}
	wait, err := duration(q.Get("wait"), DefaultWait)
	if err != nil {
		return nil, nil, badRequest("wait: %w", err)
	}
	g, err := h.c.Acquire(r.Context(), req, min(wait, MaxWait))
	if err != nil || g == nil {
		return &AcquireResponse{}, nil, err
	}
	h.log.Trace("granted", "resource", g.Resource, "role", g.Role, "holder", req.Holder, "waited", g.Waited)
	return &AcquireResponse{
		Granted: true, Lease: g.Lease, Resource: g.Resource, Role: g.Role,
		TTLS: g.TTL.Seconds(), WaitedS: g.Waited.Seconds(),
	}, func() { _ = h.c.Release(g.Lease) }, nil
}

// duration parses a Go duration or a number of seconds; "" is def.
func duration(v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		s, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil || s < 0 || s > MaxLeaseTTL.Seconds() {
			return 0, fmt.Errorf("%q is not a duration such as 30s", truncate(v))
		}
		d = time.Duration(s * float64(time.Second))
	}
	if d < 0 {
		return 0, fmt.Errorf("%q must not be negative", truncate(v))
	}
	return d, nil
}

// release answers POST /v1/coord/release?lease=ID.
func (h *handler) release(r *http.Request) (any, func(), error) {
	id := r.URL.Query().Get("lease")
	if id == "" {
		return nil, nil, badRequest("lease is required")
	}
	if err := h.c.Release(id); err != nil {
		return nil, nil, err
	}
	return &ReleaseResponse{Released: true}, nil, nil
}

// status answers GET /v1/coord/status.
func (h *handler) status(r *http.Request) (any, func(), error) {
	return h.c.Status(), nil, nil
}
