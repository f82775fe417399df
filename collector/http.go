package collector

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/caravan-sched/caravan/collector/coord"
	"github.com/caravan-sched/caravan/structs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Limits of the HTTP API.
const (
	// MaxBodyBytes bounds a report; a larger one is answered 413.
	MaxBodyBytes = 1 << 20
	// MaxWait bounds the wait of GET /v1/samples.
	MaxWait = time.Minute
	// DefaultLimit is how many samples GET /v1/samples returns at most
	// without ?limit=.
	DefaultLimit = 1000
)

// codedError is an error with the HTTP status it maps to.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

func badRequest(format string, args ...any) error {
	return &codedError{code: http.StatusBadRequest, err: fmt.Errorf(format, args...)}
}

// endpoint handles one route. It returns the value to encode as JSON or an
// error.
type endpoint func(w http.ResponseWriter, r *http.Request) (any, error)

func (c *Collector) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/report", c.handle(c.report))
	mux.HandleFunc("GET /v1/samples", c.handle(c.samples))
	mux.HandleFunc("GET /v1/health", c.handle(c.health))
	mux.Handle("GET /v1/metrics", c.metricsHandler())
	if c.cfg.Coordinator != nil {
		c.cfg.Coordinator.Register(mux, c.log.Named("coord"))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path), http.StatusNotFound)
	})
}

func (c *Collector) handle(fn endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		out, err := fn(w, r)
		if err != nil {
			code := errorCode(err)
			c.log.Debug("request failed", "method", r.Method, "path", r.URL.Path, "code", code, "error", err)
			http.Error(w, err.Error(), code)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		if _, ok := r.URL.Query()["pretty"]; ok {
			enc.SetIndent("", "    ")
		}
		if err := enc.Encode(out); err != nil {
			c.log.Debug("cannot write a response", "path", r.URL.Path, "error", err)
		}
	}
}

func errorCode(err error) int {
	var coded *codedError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge
	case errors.As(err, &coded):
		return coded.code
	case errors.Is(err, ErrInvalidReport):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// report keeps the samples of a report, all or none: the body has the
// schema of the Caravan server's POST /v1/report, so trainers can report to
// either, and answers alike.
func (c *Collector) report(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.ContentLength > MaxBodyBytes {
		c.rejected.Add(1)
		return nil, fmt.Errorf("request body of %d bytes is larger than %d bytes: %w", r.ContentLength, MaxBodyBytes, &http.MaxBytesError{Limit: MaxBodyBytes})
	}
	var req structs.ReportRequest // strict: ReportRequest.UnmarshalJSON
	dec := json.NewDecoder(r.Body)
	err := dec.Decode(&req)
	switch {
	case err != nil:
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			err = fmt.Errorf("request body is larger than %d bytes: %w", tooBig.Limit, err)
		} else {
			err = badRequest("request body is not a JSON report {\"Samples\": [...]}: %v", err)
		}
	case !atEOF(dec):
		err = badRequest("request body has data after its JSON value")
	default:
		var last uint64
		if last, err = c.Report(req.Samples); err == nil {
			return &structs.ReportResponse{Accepted: len(req.Samples), Index: last}, nil
		}
	}
	c.rejected.Add(1)
	return nil, err
}

// atEOF reports whether nothing but white space follows dec's last value;
// dec.More would miss a stray '}' or ']'.
func atEOF(dec *json.Decoder) bool {
	_, err := dec.Token()
	return errors.Is(err, io.EOF)
}

// samples answers GET /v1/samples?since=N&wait=D&limit=L: the samples
// numbered after N, waiting up to D (at most MaxWait) for one.
func (c *Collector) samples(w http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	var since uint64
	if v := q.Get("since"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, badRequest("since=%q is not a non-negative integer", v)
		}
		since = n
	}
	var wait time.Duration
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, badRequest("wait=%q is not a duration such as 30s", v)
		}
		wait = min(d, MaxWait)
	}
	limit := DefaultLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, badRequest("limit=%q is not a positive integer", v)
		}
		limit = n
	}
	return c.Samples(r.Context(), since, limit, wait), nil
}

func (c *Collector) health(w http.ResponseWriter, r *http.Request) (any, error) {
	return c.Stats(), nil
}

// metricsHandler serves the counters of Stats in Prometheus' text format.
func (c *Collector) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	counter := func(name, help string, v func(Stats) uint64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "caravan_collector_" + name, Help: help},
			func() float64 { return float64(v(c.Stats())) }))
	}
	counter("samples_received_total", "Samples kept.", func(s Stats) uint64 { return s.Received })
	counter("samples_dropped_total", "Samples the window dropped to stay bounded.", func(s Stats) uint64 { return s.Dropped })
	counter("reports_rejected_total", "Reports refused with 400 or 413.", func(s Stats) uint64 { return s.Rejected })
	counter("file_bad_lines_total", "Lines of the followed file that were not valid samples.", func(s Stats) uint64 { return s.BadLines })
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "caravan_collector_samples_held", Help: "Samples the window holds."},
		func() float64 { return float64(c.Stats().Held) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "caravan_collector_reads_waiting", Help: "Reads blocked until a sample comes."},
		func() float64 { return float64(c.Stats().Waiting) }))
	if co := c.cfg.Coordinator; co != nil {
		registerCoordinatorMetrics(reg, co)
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// registerCoordinatorMetrics serves the subtask coordinator's counters,
// labelled by resource (cpu, net).
func registerCoordinatorMetrics(reg *prometheus.Registry, co *coord.Coordinator) {
	for _, r := range []coord.Resource{coord.CPU, coord.Net} {
		labels := prometheus.Labels{"resource": string(r)}
		stat := func(v func(coord.ResourceStats) float64) func() float64 {
			return func() float64 { return v(co.Status().Resources[r]) }
		}
		for _, m := range []struct {
			name, help string
			v          func(coord.ResourceStats) float64
		}{
			{"granted_total", "Leases granted.", func(s coord.ResourceStats) float64 { return float64(s.Granted) }},
			{"expired_total", "Leases that outlived their TTL: a holder died or overran.", func(s coord.ResourceStats) float64 { return float64(s.Expired) }},
			{"abandoned_total", "Requests that left the queue unserved.", func(s coord.ResourceStats) float64 { return float64(s.Abandoned) }},
			{"rejected_total", "Requests refused because the queue was full.", func(s coord.ResourceStats) float64 { return float64(s.Rejected) }},
			{"busy_seconds_total", "Time leases were held.", func(s coord.ResourceStats) float64 { return s.BusySeconds }},
		} {
			reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "caravan_coord_" + m.name, Help: m.help, ConstLabels: labels}, stat(m.v)))
		}
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "caravan_coord_holders", Help: "Leases held now.", ConstLabels: labels},
			stat(func(s coord.ResourceStats) float64 { return float64(s.Holders) })))
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "caravan_coord_queued", Help: "Requests waiting now.", ConstLabels: labels},
			stat(func(s coord.ResourceStats) float64 { return float64(s.Queued) })))
	}
}
