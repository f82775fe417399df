package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// EnvCoordinatorAddr is the environment variable that holds the address
// of the node's subtask coordinator (package collector/coord),
// "host:port" or "http://host:port". Unset means no coordination.
const EnvCoordinatorAddr = "CARAVAN_COORDINATOR_ADDR"

// The resources a subtask asks the coordinator for.
const (
	ResourceCPU = "cpu"
	ResourceNet = "net"
)

// Defaults of CoordinatorConfig.
const (
	// DefaultPhaseTTL is the lease asked for each phase: a trainer that
	// dies inside a phase blocks the other jobs for this long at most.
	DefaultPhaseTTL = 30 * time.Second
	// DefaultCoordinatorWait is the long-poll of one acquire request.
	DefaultCoordinatorWait = 30 * time.Second
	// DefaultCoordinatorBackoff is how long phases run uncoordinated
	// after the coordinator failed to answer, before it is tried again.
	DefaultCoordinatorBackoff = 5 * time.Second
)

// CoordinatorConfig configures a Coordinator. Zero values take the
// defaults.
type CoordinatorConfig struct {
	// Addr is the coordinator, "host:port" or "http://host:port".
	Addr string
	// Holder names this task in the coordinator's status, e.g.
	// "job-a/worker-0" (at most 256 bytes).
	Holder string
	// TTL is the lease of each phase; it must exceed the longest phase,
	// or the phase loses its slot when the TTL passes.
	TTL time.Duration
	// Wait is the long-poll of one acquire request; the client asks again
	// until it is granted or its context ends.
	Wait time.Duration
	// Backoff is how long phases run uncoordinated after a failure.
	Backoff    time.Duration
	Logger     hclog.Logger
	HTTPClient *http.Client
}

// Coordinator is a task's client of the node's subtask coordinator. A nil
// *Coordinator is valid and coordinates nothing: its phases run at once.
// It fails open: when the coordinator cannot be reached or refuses a
// request (a full queue), the phase runs uncoordinated, a warning is
// logged once per outage, and the coordinator is tried again after
// Backoff. It is safe for concurrent use.
type Coordinator struct {
	cfg  CoordinatorConfig
	base string
	log  hclog.Logger
	http *http.Client

	mu      sync.Mutex
	failing bool
	retryAt time.Time

	granted, uncoordinated atomic.Uint64
	waited                 atomic.Int64
}

// CoordinatorFromEnv returns a Coordinator of the address in
// EnvCoordinatorAddr, or nil (coordinate nothing) when it is unset.
func CoordinatorFromEnv(holder string, log hclog.Logger) (*Coordinator, error) {
	addr := os.Getenv(EnvCoordinatorAddr)
	if addr == "" {
		return nil, nil
	}
	c, err := NewCoordinator(CoordinatorConfig{Addr: addr, Holder: holder, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvCoordinatorAddr, err)
	}
	return c, nil
}

// NewCoordinator checks cfg and returns a client; it does not contact the
// coordinator.
func NewCoordinator(cfg CoordinatorConfig) (*Coordinator, error) {
	base, err := normalizeAddr(cfg.Addr)
	if err != nil {
		return nil, err
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultPhaseTTL
	}
	if cfg.Wait == 0 {
		cfg.Wait = DefaultCoordinatorWait
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = DefaultCoordinatorBackoff
	}
	if cfg.TTL < 0 || cfg.Wait < 0 || cfg.Backoff < 0 {
		return nil, errors.New("coordinator durations must not be negative")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.Default()
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{} // requests are bounded by their contexts
	}
	return &Coordinator{cfg: cfg, base: base, log: cfg.Logger.Named("coordinator"), http: cfg.HTTPClient}, nil
}

// Compute runs fn as a computation (COMP) subtask: once the coordinator
// grants the CPU, and releases it when fn returns. It returns fn's error,
// or ctx's when ctx ends while waiting (fn then does not run).
func (c *Coordinator) Compute(ctx context.Context, fn func() error) error {
	return c.run(ctx, ResourceCPU, fn)
}

// Communicate runs fn as a communication (COMM: pull or push) subtask,
// once the coordinator grants the network; see Compute.
func (c *Coordinator) Communicate(ctx context.Context, fn func() error) error {
	return c.run(ctx, ResourceNet, fn)
}

func (c *Coordinator) run(ctx context.Context, resource string, fn func() error) error {
	l, err := c.Acquire(ctx, resource)
	if err != nil {
		return err
	}
	defer l.Release()
	return fn()
}

// Lease is a granted slot; a nil *Lease (nothing to release) is valid.
type Lease struct {
	c  *Coordinator
	id string
	// Role is "cpu", "primary" or "secondary".
	Role string
}

// Acquire waits until the coordinator grants resource (ResourceCPU or
// ResourceNet) and returns the lease, to Release when the phase ends. It
// returns a nil lease at once when c is nil or the coordinator fails
// (fail open), and an error only when ctx ends.
func (c *Coordinator) Acquire(ctx context.Context, resource string) (*Lease, error) {
	if c == nil {
		return nil, nil
	}
	c.mu.Lock()
	skip := time.Now().Before(c.retryAt)
	c.mu.Unlock()
	if skip {
		c.uncoordinated.Add(1)
		return nil, nil
	}
	start := time.Now()
	q := url.Values{"resource": {resource}, "holder": {c.cfg.Holder}, "ttl": {c.cfg.TTL.String()}, "wait": {c.cfg.Wait.String()}}
	for {
		var ans struct {
			Granted bool
			Lease   string
			Role    string
		}
		err := c.post(ctx, "/v1/coord/acquire?"+q.Encode(), c.cfg.Wait+10*time.Second, &ans)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			c.fail(err)
			c.uncoordinated.Add(1)
			return nil, nil
		}
		if ans.Granted {
			c.ok()
			c.granted.Add(1)
			c.waited.Add(int64(time.Since(start)))
			return &Lease{c: c, id: ans.Lease, Role: ans.Role}, nil
		}
	}
}

// Release ends the lease. A lease that expired meanwhile is ignored, as
// is a coordinator that cannot be reached: the lease then expires there.
func (l *Lease) Release() {
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var ans struct{}
	if err := l.c.post(ctx, "/v1/coord/release?"+url.Values{"lease": {l.id}}.Encode(), 5*time.Second, &ans); err != nil {
		l.c.log.Debug("could not release a lease; it will expire", "error", err)
	}
}

// CoordinatorStats counts a client's phases.
type CoordinatorStats struct {
	// Granted counts phases the coordinator admitted, Uncoordinated those
	// that ran without it (it failed or refused).
	Granted, Uncoordinated uint64
	// Waited sums the time granted phases waited for their slot.
	Waited time.Duration
}

// Stats returns the client's counters; zero for a nil client.
func (c *Coordinator) Stats() CoordinatorStats {
	if c == nil {
		return CoordinatorStats{}
	}
	return CoordinatorStats{Granted: c.granted.Load(), Uncoordinated: c.uncoordinated.Load(), Waited: time.Duration(c.waited.Load())}
}

func (c *Coordinator) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.failing {
		c.log.Warn("subtask coordinator failed; running phases uncoordinated", "addr", c.base, "retry_in", c.cfg.Backoff, "error", err)
	}
	c.failing = true
	c.retryAt = time.Now().Add(c.cfg.Backoff)
}

func (c *Coordinator) ok() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failing {
		c.log.Info("subtask coordinator answers again", "addr", c.base)
	}
	c.failing = false
}

// post sends a request without a body and decodes the JSON answer.
func (c *Coordinator) post(ctx context.Context, path string, timeout time.Duration, out any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", path, strconv.Itoa(resp.StatusCode), truncateBody(body))
	}
	return json.Unmarshal(body, out)
}

func truncateBody(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}
