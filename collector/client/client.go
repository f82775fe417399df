package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/cenkalti/backoff/v4"
	"github.com/hashicorp/go-hclog"
)

// EnvAddr is the environment variable that holds the collector addresses
// of a task (DESIGN.md §3), comma-separated.
const EnvAddr = "CARAVAN_COLLECTOR_ADDR"

// ReportPath is the path samples are posted to, below each address.
const ReportPath = "/v1/report"

// Defaults of Config.
const (
	DefaultFlushInterval = time.Second
	DefaultMaxBuffer     = 10000
	DefaultMaxBatch      = 500
	DefaultRetryBackoff  = 100 * time.Millisecond
	// DefaultRequestTimeout bounds one request when Config.HTTPClient is nil.
	DefaultRequestTimeout = 10 * time.Second
)

// maxRetryBackoff caps the wait between two rounds of Flush over all
// addresses.
const maxRetryBackoff = 5 * time.Second

// Config configures a Client. Zero values take the defaults.
type Config struct {
	// Addrs are the collectors, tried in order; "host:port" means
	// "http://host:port". At least one is required.
	Addrs []string
	// FlushInterval is how often the background goroutine sends what is
	// buffered.
	FlushInterval time.Duration
	// MaxBuffer bounds the samples waiting to be sent; beyond it the oldest
	// are dropped.
	MaxBuffer int
	// MaxBatch bounds the samples in one request. A buffer that reaches it
	// is sent before the next tick.
	MaxBatch int
	// RetryBackoff is Flush's first wait after every address failed; it
	// doubles on each failed round, up to 5s (or RetryBackoff if larger).
	RetryBackoff time.Duration
	// Token, when set, is sent as X-Caravan-Token: the secret of an ACL
	// token that may report samples, which Caravan servers with ACLs on
	// require (collectors ignore it). ConfigFromEnv reads EnvToken.
	Token string
	// Logger defaults to hclog.Default() named "collector-client".
	Logger hclog.Logger
	// HTTPClient defaults to a client with a DefaultRequestTimeout timeout.
	HTTPClient *http.Client
}

// ConfigFromEnv returns a Config whose Addrs come from EnvAddr.
func ConfigFromEnv() (Config, error) {
	addrs, err := ParseAddrs(os.Getenv(EnvAddr))
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", EnvAddr, err)
	}
	return Config{Addrs: addrs, Token: os.Getenv(EnvToken)}, nil
}

// EnvToken is the environment variable that holds the ACL token trainers
// report with, which Caravan gives tasks when the agent has an
// acl report_token.
const EnvToken = "CARAVAN_TOKEN"

// ParseAddrs splits a comma-separated list of collector addresses and
// normalises each to a base URL without a trailing slash: "host:port"
// becomes "http://host:port". Empty items are skipped; an empty list is
// ErrNoAddress.
func ParseAddrs(list string) ([]string, error) {
	var addrs []string
	var errs []error
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		addr, err := normalizeAddr(item)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		addrs = append(addrs, addr)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, ErrNoAddress
	}
	return addrs, nil
}

func normalizeAddr(addr string) (string, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return "", fmt.Errorf("collector address %q: %w", addr, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("collector address %q: scheme must be http or https", addr)
	}
	if u.Host == "" {
		return "", fmt.Errorf("collector address %q has no host", addr)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("collector address %q must not have a query or fragment", addr)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// Client buffers samples and sends them to the collectors. Create it with
// New or FromEnv and stop it with Close.
type Client struct {
	token    string
	addrs    []string
	interval time.Duration
	maxBuf   int
	maxBatch int
	backoff  time.Duration
	log      hclog.Logger
	http     *http.Client

	mu sync.Mutex
	// buf is the queue of samples not yet committed; head is the sequence
	// number of buf[0]. Sequence numbers let a sender acknowledge a batch
	// even when Report dropped some of its samples meanwhile.
	buf    []structs.Sample
	head   uint64
	closed bool
	// overflowing is set while Report drops samples, to log once per
	// episode.
	overflowing bool

	dropped atomic.Int64

	// sending is a one-slot semaphore: one sender at a time, so batches
	// go out in order. preferred, the index of the address that answered
	// last, is guarded by it.
	sending   chan struct{}
	preferred int
	// failing is whether the background flush failed last time, to log
	// an outage once rather than every tick. Guarded by sending.
	failing bool

	kick     chan struct{}
	bgCtx    context.Context
	bgCancel context.CancelFunc
	bgDone   chan struct{}
}

// New validates cfg and starts a Client's background goroutine.
func New(cfg Config) (*Client, error) {
	if len(cfg.Addrs) == 0 {
		return nil, ErrNoAddress
	}
	addrs, err := ParseAddrs(strings.Join(cfg.Addrs, ","))
	if err != nil {
		return nil, err
	}
	c := &Client{
		token:    cfg.Token,
		addrs:    addrs,
		interval: orDefault(cfg.FlushInterval, DefaultFlushInterval),
		maxBuf:   orDefault(cfg.MaxBuffer, DefaultMaxBuffer),
		maxBatch: orDefault(cfg.MaxBatch, DefaultMaxBatch),
		backoff:  orDefault(cfg.RetryBackoff, DefaultRetryBackoff),
		log:      cfg.Logger,
		http:     cfg.HTTPClient,
		sending:  make(chan struct{}, 1),
		kick:     make(chan struct{}, 1),
		bgDone:   make(chan struct{}),
	}
	if c.log == nil {
		c.log = hclog.Default().Named("collector-client")
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: DefaultRequestTimeout}
	}
	c.bgCtx, c.bgCancel = context.WithCancel(context.Background())
	go c.background()
	return c, nil
}

// orDefault returns v, or def when v is not positive.
func orDefault[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// FromEnv is New with the addresses of EnvAddr and the other defaults.
func FromEnv() (*Client, error) {
	cfg, err := ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	return New(cfg)
}

// Addrs returns the normalised collector addresses.
func (c *Client) Addrs() []string { return slices.Clone(c.addrs) }

// Report queues s to be sent and returns at once. It stamps s.Time with
// the current time when it is 0. An invalid sample (structs.Sample.Validate)
// is logged and dropped, since every collector would reject it. When the
// buffer is full the oldest sample is dropped.
func (c *Client) Report(s structs.Sample) {
	if s.Time == 0 {
		s.Time = time.Now().UnixNano()
	}
	if err := s.Validate(); err != nil {
		c.dropped.Add(1)
		c.log.Error("dropping invalid sample", "job_id", s.JobID, "step", s.Step, "error", err)
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.dropped.Add(1)
		c.log.Warn("dropping sample reported after close", "job_id", s.JobID, "step", s.Step)
		return
	}
	if len(c.buf) >= c.maxBuf {
		c.buf = c.buf[1:]
		c.head++
		c.dropped.Add(1)
		if !c.overflowing {
			c.overflowing = true
			c.log.Warn("sample buffer is full, dropping the oldest samples", "max_buffer", c.maxBuf)
		}
	}
	c.buf = append(c.buf, s)
	full := len(c.buf) >= c.maxBatch
	c.mu.Unlock()
	if full {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// Pending returns how many samples wait to be committed.
func (c *Client) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.buf)
}

// Dropped returns how many samples will never be delivered: dropped
// because the buffer was full, because they were invalid or rejected by a
// collector (4xx), or because they were reported after Close or still
// buffered when Close gave up.
func (c *Client) Dropped() int64 { return c.dropped.Load() }

// Flush sends every sample reported before the call and returns once all
// are committed, or dropped because a collector rejected them (the error
// then wraps ErrRejected). Failed rounds over the addresses are retried
// with backoff until ctx ends; the samples left then stay buffered for the
// background goroutine, and the error wraps ctx.Err().
func (c *Client) Flush(ctx context.Context) error {
	c.mu.Lock()
	closed := c.closed
	target := c.head + uint64(len(c.buf))
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return c.flush(ctx, target, true)
}

// Close stops the background goroutine and flushes what is buffered until
// ctx ends; samples still buffered then are dropped. Close is idempotent.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	wasClosed := c.closed
	c.closed = true
	target := c.head + uint64(len(c.buf))
	c.mu.Unlock()
	c.bgCancel()
	<-c.bgDone
	if wasClosed {
		return nil
	}
	err := c.flush(ctx, target, true)
	c.mu.Lock()
	if n := len(c.buf); n > 0 {
		c.dropped.Add(int64(n))
		c.log.Warn("dropping samples not delivered before close", "samples", n)
		c.buf, c.head = nil, c.head+uint64(n)
	}
	c.mu.Unlock()
	return err
}

// background sends the buffer every interval, or sooner when a batch is
// full, trying each address once per tick.
func (c *Client) background() {
	defer close(c.bgDone)
	ticker := time.NewTicker(c.interval)
	defer ticker.Stop()
	for {
		select {
		case <-c.bgCtx.Done():
			return
		case <-ticker.C:
		case <-c.kick:
		}
		c.mu.Lock()
		target := c.head + uint64(len(c.buf))
		c.mu.Unlock()
		err := c.flush(c.bgCtx, target, false)
		if err != nil && c.bgCtx.Err() == nil && !errors.Is(err, ErrRejected) {
			c.log.Debug("background flush failed; will retry", "error", err)
		}
	}
}

// flush sends the samples whose sequence numbers are below target. With
// retry it waits and tries again after a round in which every address
// failed, until ctx ends; without, it returns that round's error.
func (c *Client) flush(ctx context.Context, target uint64, retry bool) error {
	select {
	case c.sending <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("flush samples: %w", ctx.Err())
	}
	defer func() { <-c.sending }()

	rejected := 0
	again := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(c.backoff),
		backoff.WithMaxInterval(max(maxRetryBackoff, c.backoff)),
		backoff.WithRandomizationFactor(0),
		backoff.WithMaxElapsedTime(0))
	for {
		batch, first := c.peek(target)
		if len(batch) == 0 {
			break
		}
		err := c.sendRound(ctx, batch)
		switch {
		case err == nil:
			c.ack(first + uint64(len(batch)))
			again.Reset()
			if c.failing {
				c.failing = false
				c.log.Info("collector reachable again", "addr", c.addrs[c.preferred])
			}
		case errors.Is(err, ErrRejected):
			c.ack(first + uint64(len(batch)))
			c.dropped.Add(int64(len(batch)))
			rejected += len(batch)
		default:
			if ctx.Err() != nil {
				return fmt.Errorf("flush samples: %w (last error: %v)", ctx.Err(), err)
			}
			if !c.failing {
				c.failing = true
				c.log.Warn("no collector accepts samples; keeping them buffered", "pending", c.Pending(), "error", err)
			}
			if !retry {
				return err
			}
			t := time.NewTimer(again.NextBackOff())
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("flush samples: %w (last error: %v)", ctx.Err(), err)
			}
		}
	}
	if rejected > 0 {
		return fmt.Errorf("%d samples dropped: %w", rejected, ErrRejected)
	}
	return nil
}

// peek copies the first batch of the buffer with sequence numbers below
// target, and returns the sequence number of its first sample.
func (c *Client) peek(target uint64) ([]structs.Sample, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if target <= c.head {
		return nil, c.head
	}
	n := min(int(target-c.head), len(c.buf), c.maxBatch)
	return slices.Clone(c.buf[:n]), c.head
}

// ack removes the samples with sequence numbers below upTo from the
// buffer; those Report dropped meanwhile are gone already.
func (c *Client) ack(upTo uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if upTo <= c.head {
		return
	}
	n := min(int(upTo-c.head), len(c.buf))
	c.buf = c.buf[n:]
	c.head += uint64(n)
	if len(c.buf) == 0 {
		c.buf = nil
		c.overflowing = false
	}
}

// sendRound posts batch to each address once, starting with the one that
// answered last, until one commits or rejects it.
func (c *Client) sendRound(ctx context.Context, batch []structs.Sample) error {
	body, err := json.Marshal(reportRequest{Samples: batch})
	if err != nil {
		// Validate rules out what json cannot encode (NaN, ±Inf).
		return fmt.Errorf("encode samples: %w: %w", ErrRejected, err)
	}
	var errs []error
	for i := range c.addrs {
		idx := (c.preferred + i) % len(c.addrs)
		err := c.post(ctx, c.addrs[idx], body)
		if err == nil || errors.Is(err, ErrRejected) {
			c.preferred = idx
			if err != nil {
				c.log.Error("collector rejected samples; dropping them", "addr", c.addrs[idx], "samples", len(batch), "error", err)
			}
			return err
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// reportRequest is the body of POST /v1/report.
type reportRequest struct {
	Samples []structs.Sample
}

// post sends one request. It returns nil on 2xx, an error wrapping
// ErrRejected on a 4xx that retrying cannot fix, and another error
// otherwise.
func (c *Client) post(ctx context.Context, addr string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, addr+ReportPath, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("X-Caravan-Token", c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err // names the URL already
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return nil
	case code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests:
		return fmt.Errorf("%s answered %s: %s: %w", addr, resp.Status, strings.TrimSpace(string(msg)), ErrRejected)
	default:
		return fmt.Errorf("%s answered %s: %s", addr, resp.Status, strings.TrimSpace(string(msg)))
	}
}
