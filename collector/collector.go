package collector

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caravan-sched/caravan/structs"
	consulapi "github.com/hashicorp/consul/api"
	"github.com/hashicorp/go-hclog"
)

// MaxIDLength bounds the bytes of a sample's job_id and namespace, so that
// a full window's memory stays bounded whatever trainers send.
const MaxIDLength = 256

// maxReportErrors bounds the problems a rejected report lists.
const maxReportErrors = 20

// Collector buffers the samples trainers report and serves them to Caravan
// servers. Create it with New, start it with Start (or Run), and stop it
// with Shutdown. Its methods are safe for concurrent use.
type Collector struct {
	cfg      Config
	log      hclog.Logger
	instance string
	win      *window

	received atomic.Uint64
	rejected atomic.Uint64
	badLines atomic.Uint64
	// waiting counts the reads blocked until a sample comes; tailChecks
	// the times the tailer looked at the file for news.
	waiting    atomic.Int64
	tailChecks atomic.Uint64

	mu        sync.Mutex
	started   bool
	addr      string
	serviceID string
	http      *http.Server
	// stopCtx ends the background goroutines and the blocking reads in
	// flight when Shutdown starts.
	stopCtx  context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	stopErr  error
	// registered is the service ID while the collector is registered in
	// Consul.
	registered atomic.Pointer[string]
}

// New validates cfg and returns a Collector that is not started yet.
func New(cfg Config) (*Collector, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid collector configuration: %w", err)
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id) // never fails (crypto/rand)
	c := &Collector{
		cfg:      cfg,
		log:      cfg.Logger,
		instance: hex.EncodeToString(id),
		win:      newWindow(cfg.Window),
	}
	c.stopCtx, c.stop = context.WithCancel(context.Background())
	return c, nil
}

// Start listens on Config.Addr, serves the HTTP API, follows Config.File
// and registers the collector in Consul, in the background. It fails when
// the address cannot be bound; registration is retried until it succeeds
// or Shutdown is called, the file waited for until it exists.
func (c *Collector) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("collector already started")
	}
	if c.stopCtx.Err() != nil {
		return errors.New("collector is shut down")
	}
	l, err := net.Listen("tcp", c.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.cfg.Addr, err)
	}
	c.addr = l.Addr().String()
	var reg *consulapi.AgentServiceRegistration
	if c.cfg.Consul != nil {
		if reg, err = c.registration(); err != nil {
			l.Close()
			c.addr = ""
			return err
		}
		c.serviceID = reg.ID
	}
	c.started = true
	mux := http.NewServeMux()
	c.routes(mux)
	c.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          c.log.Named("http").StandardLogger(nil),
		// Blocking reads end when the collector shuts down.
		BaseContext: func(net.Listener) context.Context { return c.stopCtx },
	}
	go func() {
		if err := c.http.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.log.Error("http server stopped", "error", err)
		}
	}()
	c.log.Info("collector started", "addr", c.addr, "window", c.cfg.Window, "instance", c.instance)
	if c.cfg.File != "" {
		t := &tailer{path: c.cfg.File, interval: c.cfg.TailInterval, c: c, log: c.log.Named("tail").With("file", c.cfg.File)}
		c.wg.Go(func() { t.run(c.stopCtx) })
	}
	if reg != nil {
		c.wg.Go(func() { c.registerLoop(c.stopCtx, reg) })
	}
	return nil
}

// Addr returns the address the HTTP API listens on, host:port, once
// Start has returned; "" before.
func (c *Collector) Addr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addr
}

// ServiceID returns the collector's service instance in Consul once Start
// has returned, whether registered yet or not; "" without Consul.
func (c *Collector) ServiceID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serviceID
}

// Instance identifies this collector process: it is random, changes at
// each start, and is in every Page and in the service's meta in Consul.
func (c *Collector) Instance() string { return c.instance }

// Shutdown stops the collector gracefully: it stops following the file,
// ends blocking reads, deregisters the service from Consul, then waits for
// the requests in flight until ctx ends. Samples held are lost. Shutdown
// is idempotent; the error is that of the first call.
func (c *Collector) Shutdown(ctx context.Context) error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		srv := c.http
		c.mu.Unlock()
		c.stop()
		if c.cfg.Coordinator != nil {
			c.cfg.Coordinator.Close()
		}
		c.wg.Wait()
		var errs []error
		if err := c.deregister(ctx); err != nil {
			errs = append(errs, err)
		}
		if srv != nil {
			if err := srv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("stop the HTTP API: %w", err))
				srv.Close()
			}
		}
		c.stopErr = errors.Join(errs...)
		c.log.Info("collector stopped")
	})
	return c.stopErr
}

// Run starts the collector, and shuts it down, allowing shutdownTimeout
// for it, when ctx ends.
func (c *Collector) Run(ctx context.Context, shutdownTimeout time.Duration) error {
	if err := c.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return c.Shutdown(sctx)
}

// Report checks every sample, then keeps them all and returns the sequence
// number of the last; when any is invalid it keeps none and returns an
// error wrapping ErrInvalidReport that lists the problems as
// "samples[i]: field: problem". A sample whose time is more than
// structs.MaxSampleSkew ahead of the collector's clock is invalid: the
// server, which drops samples older than a job's newest, would otherwise
// ignore the job's later samples. Samples without a time are stamped now,
// and those without a namespace are in the default one. The collector
// holds no jobs: samples of jobs the server does not hold are kept here
// and dropped by the server.
func (c *Collector) Report(samples []structs.Sample) (uint64, error) {
	if len(samples) == 0 {
		return 0, fmt.Errorf("%w: it has no samples", ErrInvalidReport)
	}
	var problems []string
	invalid := 0
	now := time.Now()
	for i := range samples {
		s := &samples[i]
		if s.Namespace == "" {
			s.Namespace = structs.DefaultNamespace
		}
		if s.Time == 0 {
			s.Time = now.UnixNano()
		}
		errs := structs.FieldErrors(errors.Join(s.Validate(), s.ValidateTime(now)))
		for _, f := range []struct{ name, val string }{{"Namespace", s.Namespace}, {"JobID", s.JobID}} {
			if len(f.val) > MaxIDLength {
				errs = append(errs, &structs.FieldError{Path: f.name, Err: fmt.Errorf("is %d bytes long; the limit is %d", len(f.val), MaxIDLength)})
			}
		}
		if len(errs) > 0 {
			invalid++
		}
		for _, e := range errs {
			problems = append(problems, fmt.Sprintf("samples[%d]: %v", i, e))
		}
	}
	if invalid > 0 {
		if n := len(problems); n > maxReportErrors {
			problems = append(problems[:maxReportErrors], fmt.Sprintf("and %d more problems", n-maxReportErrors))
		}
		return 0, fmt.Errorf("%w: %d of %d samples are invalid, none was kept:\n%s",
			ErrInvalidReport, invalid, len(samples), strings.Join(problems, "\n"))
	}
	c.received.Add(uint64(len(samples)))
	return c.win.add(samples), nil
}

// Samples returns up to limit samples numbered after since, oldest first.
// When there is none it waits up to wait, or until ctx ends, for one to be
// kept; it then returns an empty page whose Next is since.
func (c *Collector) Samples(ctx context.Context, since uint64, limit int, wait time.Duration) *Page {
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		p, changed := c.win.read(since, limit)
		p.Instance = c.instance
		if len(p.Samples) > 0 || p.Reset || timeout == nil {
			return p
		}
		c.waiting.Add(1)
		select {
		case <-changed:
			c.waiting.Add(-1)
		case <-timeout:
			c.waiting.Add(-1)
			return p
		case <-ctx.Done():
			c.waiting.Add(-1)
			return p
		}
	}
}

// Stats counts what the collector received and holds; GET /v1/health
// returns them.
type Stats struct {
	Status   string
	Instance string
	// Held is how many samples the window holds; Last is the sequence
	// number of the newest.
	Held int
	Last uint64
	// Received counts the samples kept since the start, Dropped those the
	// window dropped since.
	Received uint64
	Dropped  uint64
	// Rejected counts the reports the HTTP API refused (400 and 413),
	// BadLines the lines of the file that were not valid samples.
	Rejected uint64
	BadLines uint64
	// Waiting is how many reads are blocked until a sample comes;
	// TailChecks how many times the file (-file) was looked at for news.
	Waiting    int
	TailChecks uint64
}

// Stats returns the collector's counters.
func (c *Collector) Stats() Stats {
	held, last, dropped := c.win.stats()
	return Stats{
		Status: "ok", Instance: c.instance, Held: held, Last: last,
		Received: c.received.Load(), Dropped: dropped,
		Rejected: c.rejected.Load(), BadLines: c.badLines.Load(),
		Waiting: int(c.waiting.Load()), TailChecks: c.tailChecks.Load(),
	}
}
