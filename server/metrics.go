package server

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	prometheussink "github.com/hashicorp/go-metrics/compat/prometheus"
)

// The go-metrics series this server emits, with their help texts. They go
// through go-metrics' compat package, as Nomad's do, so that they share
// one global sink with Raft's own series (caravan_raft_*), which
// hashicorp/raft emits through the same package.
var (
	summaryDefs = []prometheussink.SummaryDefinition{
		{Name: []string{"caravan", "leader", "round"}, Help: "Time to commit a round's plan and start enacting it, in milliseconds, by algorithm."},
		{Name: []string{"caravan", "leader", "plan"}, Help: "Time the algorithm in force (and its fallbacks when it failed) took to plan a round, in milliseconds, by algorithm."},
		{Name: []string{"caravan", "http", "request"}, Help: "Time to answer an HTTP API request, in milliseconds, by method, route pattern and status code."},
	}
	counterDefs = []prometheussink.CounterDefinition{
		{Name: []string{"caravan", "leader", "plan", "discarded"}, Help: "Plans dropped because what they were made from changed while the algorithm ran."},
		{Name: []string{"caravan", "leader", "fallback"}, Help: "Rounds planned by a fallback algorithm because the one in force failed, by algorithm and fallback."},
		{Name: []string{"caravan", "samples", "committed"}, Help: "Trainers' samples the leader committed from its metrics source."},
		{Name: []string{"caravan", "jobs", "collected"}, Help: "Ended jobs the leader's job garbage collector purged, with everything kept about them."},
	}
)

var metricsOnce sync.Once

// setupMetrics makes go-metrics report to Prometheus' default registry,
// which /v1/metrics serves, once per process.
func setupMetrics(logger interface{ Warn(string, ...any) }) {
	metricsOnce.Do(func() {
		opts := prometheussink.DefaultPrometheusOpts
		opts.SummaryDefinitions, opts.CounterDefinitions = summaryDefs, counterDefs
		sink, err := prometheussink.NewPrometheusSinkFrom(opts)
		if err != nil {
			logger.Warn("metrics disabled", "error", err)
			return
		}
		cfg := metrics.DefaultConfig("caravan")
		cfg.EnableHostname = false
		cfg.EnableRuntimeMetrics = false
		if _, err := metrics.NewGlobal(cfg, sink); err != nil {
			logger.Warn("metrics disabled", "error", err)
		}
	})
}

// instrument measures every request h answers (caravan_http_request),
// labelled by method, the route's pattern (not the path, which would make
// a series per job) and status code.
func instrument(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		metrics.MeasureSinceWithLabels([]string{"http", "request"}, start, []metrics.Label{
			{Name: "method", Value: r.Method}, {Name: "route", Value: route}, {Name: "code", Value: strconv.Itoa(rec.code)}})
	})
}

// statusRecorder remembers the status code a handler wrote. It flushes
// and unwraps (http.ResponseController) as the writer it wraps does.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// Flush sends buffered data, for streamed answers.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the writer it wraps.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
