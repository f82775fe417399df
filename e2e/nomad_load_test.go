//go:build e2e

package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// loadConfig is what TestNomadDriver_RequestRate measures, from the
// environment (see e2e/README.md).
type loadConfig struct {
	// Jobs is how many one-worker Caravan jobs run (CARAVAN_LOAD_JOBS,
	// default 20).
	Jobs int
	// RescaleWorkers is the workers of each job's second version
	// (CARAVAN_LOAD_RESCALE_WORKERS, default 2). 1 keeps the jobs'
	// size: the new version still changes their tasks' environment, so
	// every job goes through the same checkpoint and resubmission, with
	// half the tasks.
	RescaleWorkers int
	// Settle is the wait between the last job running and the idle
	// window (CARAVAN_LOAD_SETTLE, default 10s); Window is the length of
	// the idle window and the most the rescaling window lasts
	// (CARAVAN_LOAD_WINDOW, default 20s).
	Settle, Window time.Duration
	// MaxIdleRPS and MaxRescalingRPS bound the requests per second to
	// Nomad in each window (CARAVAN_LOAD_MAX_IDLE_RPS, default 8: the
	// driver's cap on stats calls, nomad.usage_rate's 4 a second, and its
	// three blocking queries, whatever the number of jobs;
	// CARAVAN_LOAD_MAX_RESCALING_RPS, default none); 0 asserts nothing.
	MaxIdleRPS, MaxRescalingRPS float64
}

// loadConfigFromEnv reads the environment; a value that does not parse
// fails the test.
func loadConfigFromEnv(t *testing.T) loadConfig {
	t.Helper()
	cfg := loadConfig{Jobs: 20, RescaleWorkers: 2, Settle: 10 * time.Second, Window: 20 * time.Second, MaxIdleRPS: 8}
	for env, n := range map[string]*int{"CARAVAN_LOAD_JOBS": &cfg.Jobs, "CARAVAN_LOAD_RESCALE_WORKERS": &cfg.RescaleWorkers} {
		if v := os.Getenv(env); v != "" {
			parsed, err := strconv.Atoi(v)
			if err != nil || parsed < 1 {
				t.Fatalf("%s=%q: want a number, 1 or more", env, v)
			}
			*n = parsed
		}
	}
	for env, d := range map[string]*time.Duration{"CARAVAN_LOAD_SETTLE": &cfg.Settle, "CARAVAN_LOAD_WINDOW": &cfg.Window} {
		if v := os.Getenv(env); v != "" {
			parsed, err := time.ParseDuration(v)
			if err != nil || parsed <= 0 {
				t.Fatalf("%s=%q: want a positive duration such as 60s", env, v)
			}
			*d = parsed
		}
	}
	for env, f := range map[string]*float64{"CARAVAN_LOAD_MAX_IDLE_RPS": &cfg.MaxIdleRPS, "CARAVAN_LOAD_MAX_RESCALING_RPS": &cfg.MaxRescalingRPS} {
		if v := os.Getenv(env); v != "" {
			parsed, err := strconv.ParseFloat(v, 64)
			if err != nil || parsed <= 0 {
				t.Fatalf("%s=%q: want a positive number of requests per second", env, v)
			}
			*f = parsed
		}
	}
	return cfg
}

// requestKind is a class of requests to Nomad: the method, the path with
// its IDs replaced by ":id", and whether it is a blocking query (it has
// an index to wait past).
type requestKind struct {
	Method   string
	Path     string
	Blocking bool
}

func (k requestKind) String() string {
	s := k.Method + " " + k.Path
	if k.Blocking {
		s += " (blocking)"
	}
	return s
}

// idAfter lists the path segments that Nomad's API follows with an ID:
// /v1/job/<id>, /v1/client/allocation/<id>/stats, /v1/client/fs/cat/<id>.
var idAfter = map[string]bool{
	"job": true, "allocation": true, "node": true, "evaluation": true, "deployment": true,
	"namespace": true, "cat": true, "ls": true, "stat": true, "readat": true, "stream": true, "logs": true,
}

// nomadRequestKind classifies a request to Nomad's HTTP API.
func nomadRequestKind(r *http.Request) requestKind {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	for i := 1; i < len(segs); i++ {
		if idAfter[segs[i-1]] {
			segs[i] = ":id"
			i++
		}
	}
	index, _ := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	return requestKind{Method: r.Method, Path: "/" + strings.Join(segs, "/"), Blocking: index > 0}
}

// TestNomadRequestKind checks how the counting proxy names requests: IDs
// replaced, blocking queries told apart.
func TestNomadRequestKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "/v1/jobs?meta=true&namespace=%2A", "GET /v1/jobs"},
		{"GET", "/v1/jobs?index=42&namespace=%2A&wait=60000ms", "GET /v1/jobs (blocking)"},
		{"GET", "/v1/job/caravan-load-007?namespace=default", "GET /v1/job/:id"},
		{"GET", "/v1/job/caravan-load-007/allocations?namespace=default", "GET /v1/job/:id/allocations"},
		{"PUT", "/v1/job/caravan-load-007", "PUT /v1/job/:id"},
		{"GET", "/v1/client/allocation/0b6c3b8e-1d7a-4e0c-9f67-0e7d2d3c1a55/stats", "GET /v1/client/allocation/:id/stats"},
		{"POST", "/v1/client/allocation/0b6c3b8e-1d7a-4e0c-9f67-0e7d2d3c1a55/signal", "POST /v1/client/allocation/:id/signal"},
		{"GET", "/v1/nodes?index=7", "GET /v1/nodes (blocking)"},
		{"GET", "/v1/node/5e2a", "GET /v1/node/:id"},
		{"GET", "/v1/allocations", "GET /v1/allocations"},
		{"GET", "/v1/client/fs/cat/5e2a?path=alloc/logs/worker.stdout.0", "GET /v1/client/fs/cat/:id"},
	} {
		r, err := http.NewRequest(tc.method, "http://nomad"+tc.url, nil)
		must.NoError(t, err)
		must.Eq(t, tc.want, nomadRequestKind(r).String(), must.Sprint(tc.url))
	}
}

// countingProxy is a reverse proxy on 127.0.0.1 in front of a Nomad
// agent that counts the requests through it by kind, and the answers
// that were errors (a status of 400 or more, or no answer). It is safe
// for concurrent use.
type countingProxy struct {
	// URL is the proxy's address, for Caravan's nomad.address.
	URL string

	mu       sync.Mutex
	requests map[requestKind]int
	errors   int
}

// startCountingProxy starts a proxy to the Nomad agent at target; it
// stops when the test ends.
func startCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	u, err := url.Parse(target)
	must.NoError(t, err)
	p := &countingProxy{requests: map[requestKind]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	// Keep connections to Nomad open: at hundreds of requests a second,
	// the default two idle connections would open a new one for most.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64
	rp.Transport = transport
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.StatusCode >= http.StatusBadRequest {
			p.mu.Lock()
			p.errors++
			p.mu.Unlock()
		}
		return nil
	}
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		p.mu.Lock()
		p.errors++
		p.mu.Unlock()
		w.WriteHeader(http.StatusBadGateway)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := nomadRequestKind(r)
		p.mu.Lock()
		p.requests[kind]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// proxyMark is the proxy's counts at a moment.
type proxyMark struct {
	at       time.Time
	requests map[requestKind]int
	errors   int
}

// mark returns the counts now.
func (p *countingProxy) mark() proxyMark {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := proxyMark{at: time.Now(), requests: make(map[requestKind]int, len(p.requests)), errors: p.errors}
	for k, n := range p.requests {
		m.requests[k] = n
	}
	return m
}

// loadWindow is what the proxy counted over one measurement window.
type loadWindow struct {
	Jobs     int
	Phase    string
	Duration time.Duration
	Requests map[requestKind]int
	Errors   int
	// LoadAvg is the machine's load average over the last minute at the
	// window's end, which slows Nomad and Caravan alike; "?" off Linux.
	LoadAvg string
}

// since returns what the proxy counted since m.
func (p *countingProxy) since(m proxyMark, jobs int, phase string) loadWindow {
	now := p.mark()
	w := loadWindow{Jobs: jobs, Phase: phase, Duration: now.at.Sub(m.at), Requests: map[requestKind]int{}, Errors: now.errors - m.errors, LoadAvg: "?"}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		w.LoadAvg = strings.Fields(string(b))[0]
	}
	for k, n := range now.requests {
		if d := n - m.requests[k]; d > 0 {
			w.Requests[k] = d
		}
	}
	return w
}

// total is the window's requests.
func (w loadWindow) total() int {
	n := 0
	for _, c := range w.Requests {
		n += c
	}
	return n
}

// rate is n requests per second of the window.
func (w loadWindow) rate(n int) float64 { return float64(n) / w.Duration.Seconds() }

// table is the window as lines of the test's log: its total, then each
// kind of request, most frequent first.
func (w loadWindow) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%5d jobs  %-10s  %6.1f s  %8.1f req/s  total (%d requests, %d errors; load average %s)\n",
		w.Jobs, w.Phase, w.Duration.Seconds(), w.rate(w.total()), w.total(), w.Errors, w.LoadAvg)
	kinds := make([]requestKind, 0, len(w.Requests))
	for k := range w.Requests {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b requestKind) int {
		return cmp.Or(cmp.Compare(w.Requests[b], w.Requests[a]), strings.Compare(a.String(), b.String()))
	})
	for _, k := range kinds {
		fmt.Fprintf(&b, "%5s       %-10s  %6s    %8.2f req/s  %s\n", "", "", "", w.rate(w.Requests[k]), k)
	}
	return b.String()
}

// waitWindow waits until d has passed since m, the measurement window
// itself, unless ctx ends first.
func waitWindow(ctx context.Context, m proxyMark, d time.Duration) {
	timer := time.NewTimer(time.Until(m.at.Add(d)))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// rescaledWithin follows Caravan's TasksRunning events committed after
// the Raft index after, once a second, and returns once every job has
// one (every task of its new placement runs), or once d has passed since
// m, whichever comes first; rescaled says which. It does not reach
// Nomad.
func rescaledWithin(ctx context.Context, c *api.Client, ids []string, after uint64, m proxyMark, d time.Duration) (rescaled bool, err error) {
	window := time.NewTimer(time.Until(m.at.Add(d)))
	defer window.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	cursor := after
	for {
		select {
		case <-window.C:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		case <-tick.C:
		}
		evs, meta, err := c.Events("", &api.QueryOptions{WaitIndex: cursor, WaitTime: 100 * time.Millisecond, Filter: `Type == "TasksRunning"`})
		if err != nil {
			return false, err
		}
		for _, ev := range evs {
			if ev.Index > after {
				delete(want, ev.JobID)
			}
		}
		cursor = max(cursor, meta.LastIndex)
		if len(want) == 0 {
			return true, nil
		}
	}
}

// loadJob is version version (0 or 1) of a Caravan job of workers
// workers (all-reduce, no parameter server), each a raw_exec task that
// sleeps, ignoring the checkpoint signal, and asks for little enough that
// hundreds fit on the dev agent's node. The version is in the tasks'
// environment, so that a new version restarts them whatever its size.
// Its checkpoint timeout outlasts any rescale of the test.
func loadJob(id string, version, workers int) string {
	return fmt.Sprintf(`
job %q {
  training {
    architecture      = "allreduce"
    global_batch_size = 64
    steps_per_epoch   = 10
  }
  elastic {
    workers {
      min = %d
      max = %d
    }
    checkpoint {
      timeout = "10m"
    }
  }
  worker {
    driver = "raw_exec"
    config {
      command = "/bin/sh"
      args    = ["-c", "trap '' USR1; exec sleep infinity"]
    }
    env {
      LOAD_VERSION = "%d"
    }
    resources {
      cpu    = 10
      memory = 16
    }
  }
}
`, id, workers, workers, version)
}

// caravanReports checks that Caravan reports every job running with
// workers workers (what runs, as the driver reported it) at version at
// least version. It does not reach Nomad.
func caravanReports(c *api.Client, ids []string, workers int, version uint64) error {
	stubs, _, err := c.Jobs().List(nil)
	if err != nil {
		return err
	}
	byID := map[string]*api.JobListStub{}
	for _, s := range stubs {
		byID[s.ID] = s
	}
	reported := 0
	for _, id := range ids {
		if s := byID[id]; s != nil && s.Status == api.JobStatusRunning && s.NumWorkers == workers && s.Version >= version {
			reported++
		}
	}
	if reported != len(ids) {
		return fmt.Errorf("Caravan reports %d of %d jobs running %d workers at version %d or later", reported, len(ids), workers, version)
	}
	return nil
}

// nomadVersion is what Nomad runs of a job: the newest job version among
// its allocations, and how many allocations of that version run.
type nomadVersion struct {
	Version uint64
	Running int
}

// nomadRuns returns what Nomad runs of each Caravan job of ids, after
// checking that it runs workers tasks of a version newer than in before
// (nil: any version). It reads Nomad directly, not through the proxy, so
// that the test's own reads are not counted.
func nomadRuns(n *agent.Nomad, ids []string, workers int, before map[string]nomadVersion) (map[string]nomadVersion, error) {
	allocs, _, err := n.Client.Allocations().List(nil)
	if err != nil {
		return nil, err
	}
	newest := map[string]nomadVersion{}
	for _, a := range allocs {
		if v, ok := newest[a.JobID]; !ok || a.JobVersion > v.Version {
			newest[a.JobID] = nomadVersion{Version: a.JobVersion}
		}
	}
	for _, a := range allocs {
		if v := newest[a.JobID]; a.JobVersion == v.Version && a.ClientStatus == nomadapi.AllocClientStatusRunning {
			v.Running++
			newest[a.JobID] = v
		}
	}
	out := map[string]nomadVersion{}
	ran := 0
	for _, id := range ids {
		v := newest["caravan-"+id]
		out[id] = v
		if old, ok := before[id]; v.Running == workers && (before == nil || ok && v.Version > old.Version) {
			ran++
		}
	}
	if ran != len(ids) {
		return nil, fmt.Errorf("Nomad runs %d tasks of a new version of %d of %d jobs", workers, ran, len(ids))
	}
	return out, nil
}

// reportCheckpoints plays the jobs' trainers until ctx ends: every second
// it reports to the Caravan agent at addr one sample per job with a
// newer checkpoint step, which confirms any checkpoint the driver asked
// for since the last.
func reportCheckpoints(ctx context.Context, t *testing.T, addr string, ids []string) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for step := int64(1); ; step++ {
		req := struct{ Samples []api.Sample }{}
		now := time.Now().UnixNano()
		for _, id := range ids {
			req.Samples = append(req.Samples, api.Sample{JobID: id, Role: "worker", Step: step, CheckpointStep: step, NumWorkers: 1, Time: now})
		}
		body, err := json.Marshal(req)
		if err != nil {
			t.Errorf("encode report: %v", err)
			return
		}
		hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/report", bytes.NewReader(body))
		if err != nil {
			t.Errorf("report: %v", err)
			return
		}
		resp, err := http.DefaultClient.Do(hreq)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			t.Errorf("report checkpoints: %v", err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("report checkpoints: %s", resp.Status)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// TestNomadDriver_RequestRate measures how many HTTP requests a second
// Caravan's nomad driver makes to Nomad (issue 27). A Caravan agent runs
// CARAVAN_LOAD_JOBS one-worker jobs (raw_exec sleeps) on a Nomad dev
// agent, through a proxy that counts the requests by method and path.
// Once they all run and a settle period has passed, it measures an idle
// window; then every job gets a new version of two workers
// (CARAVAN_LOAD_RESCALE_WORKERS), and a window is measured from the
// first registration while the rescales, each through a checkpoint the
// test confirms, are in flight: until Caravan reports all of them done,
// or the window's length. It logs a table of requests per second, in
// total and by path, and asserts the optional bounds
// CARAVAN_LOAD_MAX_IDLE_RPS and CARAVAN_LOAD_MAX_RESCALING_RPS, besides
// every job running and being rescaled, and Nomad answering no request
// with an error.
func TestNomadDriver_RequestRate(t *testing.T) {
	cfg := loadConfigFromEnv(t)
	t.Logf("%d jobs rescaled to %d workers, settle %v, windows of %v", cfg.Jobs, cfg.RescaleWorkers, cfg.Settle, cfg.Window)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	n := agent.StartNomad(t, agent.NomadOptions{})
	proxy := startCountingProxy(t, n.Address)
	cl := startCaravans(t, agent.BuildCaravan(t), 1, fmt.Sprintf(`
driver = "nomad"
nomad {
  address        = %q
  checkpoint_dir = %q
}
scheduler {
  algorithm = "drf"
}
`, proxy.URL, t.TempDir()))
	addr := cl.waitLeader(t, "")
	c := cl.clients[addr]
	// Waits scale with the jobs: a 2-core machine starts a few tasks a
	// second.
	timeout := 2*time.Minute + time.Duration(cfg.Jobs)*2*time.Second

	ids := make([]string, cfg.Jobs)
	start := time.Now()
	for i := range ids {
		ids[i] = fmt.Sprintf("load-%03d", i)
		_, _, err := c.Jobs().Register(&api.JobRegisterRequest{JobHCL: loadJob(ids[i], 0, 1), Filename: ids[i] + ".hcl"}, nil)
		must.NoError(t, err)
	}
	var ran map[string]nomadVersion
	agent.WaitFor(t, timeout, fmt.Sprintf("%d jobs running", cfg.Jobs), func() (err error) {
		if err := caravanReports(c, ids, 1, 0); err != nil {
			return err
		}
		ran, err = nomadRuns(n, ids, 1, nil)
		return err
	})
	t.Logf("%d jobs registered and running in %v", cfg.Jobs, time.Since(start).Round(time.Millisecond))

	settle := proxy.mark()
	waitWindow(ctx, settle, cfg.Settle)
	windows := []loadWindow{proxy.since(settle, cfg.Jobs, "settle")}
	idle := proxy.mark()
	waitWindow(ctx, idle, cfg.Window)
	windows = append(windows, proxy.since(idle, cfg.Jobs, "idle"))

	// Rescale every job: a new version of RescaleWorkers workers, each
	// through a checkpoint that the test's reports confirm. The window
	// lasts while rescales are in flight: until Caravan reports every
	// job rescaled, or Window.
	reporting, stopReporting := context.WithCancel(ctx)
	reporterDone := make(chan struct{})
	go func() {
		defer close(reporterDone)
		reportCheckpoints(reporting, t, addr, ids)
	}()
	t.Cleanup(func() {
		stopReporting()
		<-reporterDone
	})
	rescaling := proxy.mark()
	var first uint64
	for _, id := range ids {
		resp, _, err := c.Jobs().Update(id, &api.JobRegisterRequest{JobHCL: loadJob(id, 1, cfg.RescaleWorkers), Filename: id + ".hcl"}, nil)
		must.NoError(t, err)
		must.False(t, resp.Unchanged)
		if first == 0 {
			first = resp.Index
		}
	}
	registered := time.Since(rescaling.at)
	rescaled, err := rescaledWithin(ctx, c, ids, first, rescaling, cfg.Window)
	must.NoError(t, err)
	windows = append(windows, proxy.since(rescaling, cfg.Jobs, "rescaling"))
	// The table comes first, so that a run whose rescales do not all end
	// still reports what it measured.
	var table strings.Builder
	for _, w := range windows {
		table.WriteString(w.table())
	}
	t.Logf("requests to Nomad through the proxy:\n%s", table.String())
	agent.WaitFor(t, timeout, fmt.Sprintf("%d jobs rescaled to %d workers", cfg.Jobs, cfg.RescaleWorkers), func() error {
		if err := caravanReports(c, ids, cfg.RescaleWorkers, 1); err != nil {
			return err
		}
		_, err := nomadRuns(n, ids, cfg.RescaleWorkers, ran)
		return err
	})
	took := time.Since(rescaling.at)
	if rescaled {
		took = windows[len(windows)-1].Duration
	}
	t.Logf("new versions of %d workers registered in %v; all %d jobs rescaled %v after the first (within the window: %v)",
		cfg.RescaleWorkers, registered.Round(time.Millisecond), cfg.Jobs, took.Round(time.Second), rescaled)
	stopReporting()
	<-reporterDone

	for _, b := range []struct {
		phase, env string
		max        float64
	}{
		{"idle", "CARAVAN_LOAD_MAX_IDLE_RPS", cfg.MaxIdleRPS},
		{"rescaling", "CARAVAN_LOAD_MAX_RESCALING_RPS", cfg.MaxRescalingRPS},
	} {
		for _, w := range windows {
			if w.Phase == b.phase && b.max > 0 && w.rate(w.total()) > b.max {
				t.Errorf("%d jobs %s: %.1f requests a second to Nomad, more than %s=%g", w.Jobs, w.Phase, w.rate(w.total()), b.env, b.max)
			}
		}
	}
	for _, w := range windows {
		must.Zero(t, w.Errors, must.Sprintf("Nomad answered %d requests of the %s window with an error", w.Errors, w.Phase))
	}
}
