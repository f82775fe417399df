package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

// receiver is a collector's POST /v1/report: it checks each body the way
// a server does and records the batches it commits. status, when set,
// chooses the answer to the n-th request (from 1); 2xx commits.
type receiver struct {
	srv    *httptest.Server
	status func(n int) int

	mu       sync.Mutex
	requests int
	batches  [][]structs.Sample
}

func newReceiver(t *testing.T, status func(n int) int) *receiver {
	t.Helper()
	r := &receiver{status: status}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != ReportPath {
		http.Error(w, "no such endpoint", http.StatusNotFound)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if r.status != nil {
		if code := r.status(r.requests); code/100 != 2 {
			http.Error(w, http.StatusText(code), code)
			return
		}
	}
	var body struct {
		Samples []structs.Sample `json:"samples"`
	}
	dec := json.NewDecoder(req.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for i := range body.Samples {
		if err := body.Samples[i].Validate(); err != nil {
			http.Error(w, fmt.Sprintf("samples[%d]: %v", i, err), http.StatusBadRequest)
			return
		}
	}
	r.batches = append(r.batches, body.Samples)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"Accepted": %d}`, len(body.Samples))
}

// steps returns the steps of the committed samples in order, and the
// size of each batch.
func (r *receiver) steps() (steps []int64, sizes []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.batches {
		sizes = append(sizes, len(b))
		for _, s := range b {
			steps = append(steps, s.Step)
		}
	}
	return steps, sizes
}

func (r *receiver) requestCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

func testLogger(t *testing.T) hclog.Logger {
	level := hclog.LevelFromString(os.Getenv("CARAVAN_TEST_LOG_LEVEL"))
	if level == hclog.NoLevel {
		level = hclog.Off
	}
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: level, Output: os.Stderr})
}

// testClient returns a Client whose background goroutine never ticks
// unless cfg says otherwise, closed when the test ends.
func testClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	if cfg.FlushInterval == 0 {
		cfg.FlushInterval = time.Hour
	}
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = time.Millisecond
	}
	cfg.Logger = testLogger(t)
	c, err := New(cfg)
	must.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

func sample(step int64) structs.Sample {
	return structs.Sample{JobID: "j", Role: structs.RoleWorker, Step: step, Loss: 0.5, NumPS: 1, NumWorkers: 1}
}

func steps(from, to int64) []int64 {
	var out []int64
	for s := from; s < to; s++ {
		out = append(out, s)
	}
	return out
}

func flushCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestParseAddrs(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string
		err      string
	}{
		{"one with scheme", "http://127.0.0.1:4646", []string{"http://127.0.0.1:4646"}, ""},
		{"no scheme", "127.0.0.1:4646", []string{"http://127.0.0.1:4646"}, ""},
		{"list with spaces and empties", " http://a:1/ , b:2,,https://c:3/base", []string{"http://a:1", "http://b:2", "https://c:3/base"}, ""},
		{"empty", " , ", nil, "no collector address"},
		{"bad scheme", "ftp://a:1", nil, "scheme must be http or https"},
		{"query", "http://a:1?x=1", nil, "query"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAddrs(tc.in)
			if tc.err != "" {
				must.ErrorContains(t, err, tc.err)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv(EnvAddr, "127.0.0.1:1,127.0.0.1:2")
	cfg, err := ConfigFromEnv()
	must.NoError(t, err)
	must.Eq(t, []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, cfg.Addrs)

	t.Setenv(EnvAddr, "")
	_, err = FromEnv()
	must.ErrorIs(t, err, ErrNoAddress)
	must.ErrorContains(t, err, EnvAddr)
}

func TestFlushSendsInBatches(t *testing.T) {
	r := newReceiver(t, nil)
	c := testClient(t, Config{Addrs: []string{r.srv.URL}, MaxBatch: 3})
	for s := range int64(7) {
		c.Report(sample(s))
	}
	must.NoError(t, c.Flush(flushCtx(t)))

	got, sizes := r.steps()
	must.Eq(t, steps(0, 7), got)
	// The background goroutine sends a full batch as soon as it wakes,
	// which may be after more samples came: batches are at most 3, in
	// order, however the sends fell.
	must.GreaterEq(t, 3, len(sizes))
	for _, n := range sizes {
		must.Between(t, 1, n, 3)
	}
	must.Eq(t, 0, c.Pending())
	must.Eq(t, 0, c.Dropped())
	for _, b := range r.batches {
		for _, s := range b {
			must.Positive(t, s.Time, must.Sprint("Report stamps the time"))
		}
	}
}

func TestBackgroundFlush(t *testing.T) {
	t.Run("every interval", func(t *testing.T) {
		r := newReceiver(t, nil)
		c := testClient(t, Config{Addrs: []string{r.srv.URL}, FlushInterval: 20 * time.Millisecond})
		for s := range int64(5) {
			c.Report(sample(s))
		}
		agent.WaitFor(t, 5*time.Second, "samples sent by the background goroutine", func() error {
			if got, _ := r.steps(); len(got) != 5 {
				return fmt.Errorf("%d of 5 samples committed", len(got))
			}
			return nil
		})
		got, _ := r.steps()
		must.Eq(t, steps(0, 5), got)
	})
	t.Run("when a batch is full", func(t *testing.T) {
		r := newReceiver(t, nil)
		c := testClient(t, Config{Addrs: []string{r.srv.URL}, MaxBatch: 4})
		for s := range int64(4) {
			c.Report(sample(s))
		}
		agent.WaitFor(t, 5*time.Second, "a full batch sent before the tick", func() error {
			if got, _ := r.steps(); len(got) != 4 {
				return fmt.Errorf("%d of 4 samples committed", len(got))
			}
			return nil
		})
	})
}

func TestFailover(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		live := newReceiver(t, nil)
		// The live address has no scheme: http is assumed.
		c := testClient(t, Config{Addrs: []string{dead.URL, strings.TrimPrefix(live.srv.URL, "http://")}})
		c.Report(sample(1))
		must.NoError(t, c.Flush(flushCtx(t)))
		got, _ := live.steps()
		must.Eq(t, []int64{1}, got)
	})
	t.Run("server error sticks to the next address", func(t *testing.T) {
		down := newReceiver(t, func(int) int { return http.StatusServiceUnavailable })
		live := newReceiver(t, nil)
		c := testClient(t, Config{Addrs: []string{down.srv.URL, live.srv.URL}})
		c.Report(sample(1))
		must.NoError(t, c.Flush(flushCtx(t)))
		c.Report(sample(2))
		must.NoError(t, c.Flush(flushCtx(t)))

		got, _ := live.steps()
		must.Eq(t, []int64{1, 2}, got)
		must.Eq(t, 1, down.requestCount(), must.Sprint("the second flush starts with the address that answered"))
	})
}

func TestRejectedBatchIsDropped(t *testing.T) {
	r := newReceiver(t, func(int) int { return http.StatusBadRequest })
	c := testClient(t, Config{Addrs: []string{r.srv.URL}, FlushInterval: 10 * time.Millisecond})
	for s := range int64(3) {
		c.Report(sample(s))
	}
	// The background goroutine or Flush, whichever sends first, drops the
	// batch; either way it is sent exactly once.
	err := c.Flush(flushCtx(t))
	if err != nil {
		must.ErrorIs(t, err, ErrRejected)
	}
	agent.WaitFor(t, 5*time.Second, "the batch dropped", func() error {
		if n := c.Dropped(); n != 3 {
			return fmt.Errorf("%d of 3 samples dropped", n)
		}
		return nil
	})
	must.Eq(t, 0, c.Pending())
	must.Eq(t, 1, r.requestCount())

	// Flush reports the rejection it saw.
	c2 := testClient(t, Config{Addrs: []string{r.srv.URL}})
	c2.Report(sample(1))
	must.ErrorIs(t, c2.Flush(flushCtx(t)), ErrRejected)
	must.Eq(t, 1, c2.Dropped())
	must.Eq(t, 2, r.requestCount())
}

func TestInvalidSampleIsDropped(t *testing.T) {
	r := newReceiver(t, nil)
	c := testClient(t, Config{Addrs: []string{r.srv.URL}})
	bad := sample(3)
	bad.CheckpointStep = 4
	c.Report(bad)
	c.Report(structs.Sample{Step: 1}) // no job_id
	must.Eq(t, 2, c.Dropped())
	must.Eq(t, 0, c.Pending())
}

func TestBufferDropsOldest(t *testing.T) {
	r := newReceiver(t, nil)
	c := testClient(t, Config{Addrs: []string{r.srv.URL}, MaxBuffer: 5, MaxBatch: 100})
	for s := range int64(8) {
		c.Report(sample(s))
	}
	must.Eq(t, 3, c.Dropped())
	must.Eq(t, 5, c.Pending())
	must.NoError(t, c.Flush(flushCtx(t)))
	got, _ := r.steps()
	must.Eq(t, steps(3, 8), got)
}

// TestDropDuringSend drops samples of a batch while it is in flight: the
// acknowledgement must not remove the samples reported after them.
func TestDropDuringSend(t *testing.T) {
	inFlight, release := make(chan struct{}), make(chan struct{})
	var first sync.Once
	r := newReceiver(t, nil)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		block := false
		first.Do(func() { close(inFlight); block = true })
		if block {
			<-release
		}
		r.serve(w, req)
	}))
	t.Cleanup(slow.Close)
	c := testClient(t, Config{Addrs: []string{slow.URL}, MaxBuffer: 4, MaxBatch: 4})
	for s := range int64(4) {
		c.Report(sample(s)) // the fourth kicks the background goroutine
	}
	<-inFlight
	for s := int64(4); s < 7; s++ {
		c.Report(sample(s)) // drops 0, 1, 2 of the batch in flight
	}
	close(release)
	must.NoError(t, c.Flush(flushCtx(t)))
	got, _ := r.steps()
	must.Eq(t, steps(0, 7), got, must.Sprint("the batch in flight was copied; nothing after it is lost"))
	must.Eq(t, 3, c.Dropped(), must.Sprint("drops are counted even when the batch got through"))
	must.Eq(t, 0, c.Pending())
}

// TestFlushRetriesUntilDelivered: an answer that retrying can fix keeps
// the batch buffered and sends it again. 503 is what a Caravan server
// answers while it cannot yet tell an unknown job from one it has not
// replayed (after a restart): those samples must arrive, not be dropped.
func TestFlushRetriesUntilDelivered(t *testing.T) {
	for _, code := range []int{http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusRequestTimeout} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			r := newReceiver(t, func(n int) int {
				if n <= 3 {
					return code
				}
				return http.StatusOK
			})
			c := testClient(t, Config{Addrs: []string{r.srv.URL}})
			c.Report(sample(7))
			must.NoError(t, c.Flush(flushCtx(t)))
			got, _ := r.steps()
			must.Eq(t, []int64{7}, got)
			must.Eq(t, 4, r.requestCount())
			must.Eq(t, 0, c.Dropped())
		})
	}
}

func TestFlushStopsWithContext(t *testing.T) {
	r := newReceiver(t, func(int) int { return http.StatusServiceUnavailable })
	c := testClient(t, Config{Addrs: []string{r.srv.URL}})
	c.Report(sample(1))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := c.Flush(ctx)
	must.ErrorIs(t, err, context.DeadlineExceeded)
	must.ErrorContains(t, err, "503")
	must.Eq(t, 1, c.Pending(), must.Sprint("undelivered samples stay buffered"))
	must.Eq(t, 0, c.Dropped())
}

func TestClose(t *testing.T) {
	t.Run("flushes", func(t *testing.T) {
		r := newReceiver(t, nil)
		c := testClient(t, Config{Addrs: []string{r.srv.URL}})
		c.Report(sample(1))
		c.Report(sample(2))
		must.NoError(t, c.Close(flushCtx(t)))
		got, _ := r.steps()
		must.Eq(t, []int64{1, 2}, got)

		c.Report(sample(3))
		must.Eq(t, 1, c.Dropped())
		must.ErrorIs(t, c.Flush(flushCtx(t)), ErrClosed)
		must.NoError(t, c.Close(flushCtx(t)), must.Sprint("Close is idempotent"))
	})
	t.Run("drops what it cannot deliver", func(t *testing.T) {
		r := newReceiver(t, func(int) int { return http.StatusBadGateway })
		c := testClient(t, Config{Addrs: []string{r.srv.URL}})
		c.Report(sample(1))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		must.ErrorIs(t, c.Close(ctx), context.DeadlineExceeded)
		must.Eq(t, 1, c.Dropped())
		must.Eq(t, 0, c.Pending())
	})
}

func TestConcurrentReports(t *testing.T) {
	r := newReceiver(t, nil)
	c := testClient(t, Config{Addrs: []string{r.srv.URL}, FlushInterval: 5 * time.Millisecond, MaxBatch: 50})
	const goroutines, each = 8, 100
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				c.Report(sample(int64(g*each + i)))
				if i%25 == 0 {
					if err := c.Flush(flushCtx(t)); err != nil {
						t.Errorf("flush: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	must.NoError(t, c.Flush(flushCtx(t)))

	got, _ := r.steps()
	must.SliceLen(t, goroutines*each, got)
	seen := map[int64]bool{}
	for _, s := range got {
		must.False(t, seen[s], must.Sprintf("step %d committed twice", s))
		seen[s] = true
	}
	must.Eq(t, 0, c.Dropped())
}

func TestNewErrors(t *testing.T) {
	_, err := New(Config{})
	must.ErrorIs(t, err, ErrNoAddress)
	_, err = New(Config{Addrs: []string{"gopher://x:1"}})
	must.ErrorContains(t, err, "scheme")
	// Errors wrap: callers can test for them.
	must.True(t, errors.Is(fmt.Errorf("x: %w", ErrRejected), ErrRejected))
}
