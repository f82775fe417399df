package server

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scaleSizesEnv lists the sizes BenchmarkScale runs, as nodes x jobs,
// comma-separated ("1000x1000,10000x100000"); unset, only the smallest,
// so that `make bench` stays short. `make bench-scale` sets it.
const scaleSizesEnv = "CARAVAN_SCALE_SIZES"

// scaleAlgorithmsEnv lists the algorithms whose rounds BenchmarkScale
// times, comma-separated; unset, defaultScaleAlgorithms.
const scaleAlgorithmsEnv = "CARAVAN_SCALE_ALGORITHMS"

// scaleRoundTimeoutEnv bounds one algorithm's rounds at a size (its
// untimed first round and the scaleRounds timed ones), as a Go duration
// (default 2m): an algorithm whose rounds take longer is reported as timed
// out, and no later algorithm of that size is timed (the late plan still
// runs, and would skew them).
const scaleRoundTimeoutEnv = "CARAVAN_SCALE_ROUND_TIMEOUT"

// scaleTableEnv, when set, names a file BenchmarkScale writes its table
// to after every size, so that a run stopped in a size that does not
// finish keeps the sizes before it.
const scaleTableEnv = "CARAVAN_SCALE_TABLE"

// defaultScaleAlgorithms are the algorithms issue 33 sets targets for,
// the cheap ones first: after a round that times out, the rest of a size
// is not timed.
var defaultScaleAlgorithms = []string{"fifo", "drf", "tiresias", "optimus", "goodput-las", "pollux"}

// scaleRounds is how many rounds BenchmarkScale times per algorithm,
// after one it does not.
const scaleRounds = 5

// scaleResult is what BenchmarkScale measured at one size; a zero
// duration or rate was not measured.
type scaleResult struct {
	size          scaleSize
	running       int
	registerRate  float64 // registrations per second through the HTTP API
	sampleRate    float64 // sample batches per second through Raft
	heap          uint64  // bytes in use after GC, after the rounds
	snapshotBytes int
	snapshot      time.Duration
	restore       time.Duration
	list, filter  time.Duration // GET /v1/jobs first page (p50), and filtered
	status        time.Duration // GET /v1/job/:id/summary (p50)
	rounds        map[string]roundTimes
}

// roundTimes are one algorithm's round times, or why there are none.
type roundTimes struct {
	p50, p95 time.Duration
	note     string
}

// BenchmarkScale is the scale harness of issue 33 (see scale_test.go):
// for each size of CARAVAN_SCALE_SIZES it registers the jobs, commits
// sample batches, times rounds of each algorithm, the job list and a
// job's status, then saves and restores a snapshot, and at the end prints
// one table of every size. Each size runs once whatever -benchtime says;
// `make bench-scale` runs it with -benchtime 1x.
func BenchmarkScale(b *testing.B) {
	sizes, err := parseScaleSizes(os.Getenv(scaleSizesEnv))
	if err != nil {
		b.Fatal(err)
	}
	algorithms := defaultScaleAlgorithms
	if v := os.Getenv(scaleAlgorithmsEnv); v != "" {
		algorithms = strings.Split(v, ",")
	}
	timeout := 2 * time.Minute
	if v := os.Getenv(scaleRoundTimeoutEnv); v != "" {
		if timeout, err = time.ParseDuration(v); err != nil {
			b.Fatalf("%s: %v", scaleRoundTimeoutEnv, err)
		}
	}
	var results []scaleResult
	for _, size := range sizes {
		b.Run(size.String(), func(b *testing.B) {
			r := runScale(b, size, algorithms, timeout)
			b.ReportMetric(r.registerRate, "registrations/s")
			b.ReportMetric(r.sampleRate, "sample-batches/s")
			b.ReportMetric(float64(r.heap)/(1<<20), "heap-MiB")
			results = append(results, r)
			if path := os.Getenv(scaleTableEnv); path != "" {
				if err := os.WriteFile(path, []byte(scaleTable(results, algorithms)), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	if len(results) > 0 {
		fmt.Print(scaleTable(results, algorithms))
	}
}

// runScale measures one size.
func runScale(b *testing.B, size scaleSize, algorithms []string, timeout time.Duration) scaleResult {
	ctx := context.Background()
	r := scaleResult{size: size, rounds: map[string]roundTimes{}}
	e := newScaleEnv(b, size, algorithms[0])

	// Registered a tenth at a time, with progress on stderr: the big
	// sizes take minutes.
	start := time.Now()
	for k := range 10 {
		if err := e.register(size.Jobs*k/10, size.Jobs*(k+1)/10); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "%s: registered %d jobs in %v\n", size, size.Jobs*(k+1)/10, time.Since(start).Round(time.Millisecond))
	}
	r.registerRate = float64(size.Jobs) / time.Since(start).Seconds()
	b.Logf("%s: registered in %v", size, time.Since(start))

	const batches = 1000
	start = time.Now()
	if err := e.sampleBatches(batches); err != nil {
		b.Fatal(err)
	}
	r.sampleRate = batches / time.Since(start).Seconds()

	// The first round places the jobs that fit.
	start = time.Now()
	if err := e.round(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: first round (%s) in %v", size, algorithms[0], time.Since(start))
	r.running = e.running()

	timedOut := ""
	for _, alg := range algorithms {
		if timedOut != "" {
			r.rounds[alg] = roundTimes{note: "not run: " + timedOut + " timed out"}
			continue
		}
		times, err := e.timeRounds(ctx, alg, timeout)
		if err != nil {
			b.Logf("%s: %s: %v", size, alg, err)
			r.rounds[alg] = roundTimes{note: err.Error()}
			if ctx.Err() == nil && strings.Contains(err.Error(), "deadline") {
				timedOut = alg
				r.rounds[alg] = roundTimes{note: fmt.Sprintf("timed out at %v", timeout)}
			}
			continue
		}
		r.rounds[alg] = roundTimes{p50: quantile(times, 0.5), p95: quantile(times, 0.95)}
		b.Logf("%s: %s rounds %v", size, alg, times)
	}

	r.heap = heapInUse()
	r.list = timeReads(b, 20, func(int) error { return e.listFirstPage("") })
	r.filter = timeReads(b, 20, func(int) error { return e.listFirstPage(`Status == "running"`) })
	r.status = timeReads(b, 50, func(i int) error { return e.jobStatus(i * 7919) })

	start = time.Now()
	snap, err := e.snapshot()
	if err != nil {
		b.Fatal(err)
	}
	r.snapshot, r.snapshotBytes = time.Since(start), len(snap)
	start = time.Now()
	if err := e.restore(snap); err != nil {
		b.Fatal(err)
	}
	r.restore = time.Since(start)
	return r
}

// timeRounds switches to alg and times scaleRounds rounds of it, each
// bounded by timeout.
func (e *scaleEnv) timeRounds(ctx context.Context, alg string, timeout time.Duration) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := e.setAlgorithm(ctx, alg); err != nil {
		return nil, err
	}
	var times []time.Duration
	for range scaleRounds {
		start := time.Now()
		if err := e.round(ctx); err != nil {
			return nil, err
		}
		times = append(times, time.Since(start))
	}
	return times, nil
}

// timeReads returns the median wall time of n calls of read.
func timeReads(b *testing.B, n int, read func(i int) error) time.Duration {
	times := make([]time.Duration, n)
	for i := range n {
		start := time.Now()
		if err := read(i); err != nil {
			b.Fatal(err)
		}
		times[i] = time.Since(start)
	}
	return quantile(times, 0.5)
}

// quantile is the q-quantile of times by nearest rank.
func quantile(times []time.Duration, q float64) time.Duration {
	s := slices.Sorted(slices.Values(times))
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// parseScaleSizes parses CARAVAN_SCALE_SIZES; empty is 1000x1000.
func parseScaleSizes(v string) ([]scaleSize, error) {
	if v == "" {
		v = "1000x1000"
	}
	var sizes []scaleSize
	for _, f := range strings.Split(v, ",") {
		nodes, jobs, ok := strings.Cut(strings.TrimSpace(f), "x")
		n, err1 := strconv.Atoi(nodes)
		j, err2 := strconv.Atoi(jobs)
		if !ok || err1 != nil || err2 != nil || n <= 0 || j <= 0 {
			return nil, fmt.Errorf("%s: %q is not nodes x jobs, such as 1000x10000", scaleSizesEnv, f)
		}
		sizes = append(sizes, scaleSize{Nodes: n, Jobs: j})
	}
	return sizes, nil
}

// scaleTable formats results as one Markdown table: a row per measure, a
// column per size.
func scaleTable(results []scaleResult, algorithms []string) string {
	var sb strings.Builder
	sb.WriteString("\n| measure |")
	for _, r := range results {
		fmt.Fprintf(&sb, " %d nodes, %d jobs |", r.size.Nodes, r.size.Jobs)
	}
	sb.WriteString("\n|---|")
	for range results {
		sb.WriteString("---:|")
	}
	sb.WriteString("\n")
	row := func(name string, cell func(r scaleResult) string) {
		fmt.Fprintf(&sb, "| %s |", name)
		for _, r := range results {
			fmt.Fprintf(&sb, " %s |", cell(r))
		}
		sb.WriteString("\n")
	}
	row("GPUs, GPUs per job", func(r scaleResult) string {
		return fmt.Sprintf("%d, %d", r.size.gpus(), r.size.jobGPUs())
	})
	row("jobs running after the first round", func(r scaleResult) string { return strconv.Itoa(r.running) })
	row("registrations/s (HTTP, 32 in flight)", func(r scaleResult) string { return fmt.Sprintf("%.0f", r.registerRate) })
	row("sample batches/s (Raft, 32 in flight)", func(r scaleResult) string { return fmt.Sprintf("%.0f", r.sampleRate) })
	for _, alg := range algorithms {
		row("round p50 / p95, "+alg, func(r scaleResult) string {
			t := r.rounds[alg]
			if t.note != "" {
				return t.note
			}
			return fmt.Sprintf("%s / %s", fmtDur(t.p50), fmtDur(t.p95))
		})
	}
	row("heap in use after GC", func(r scaleResult) string { return fmt.Sprintf("%.0f MiB", float64(r.heap)/(1<<20)) })
	row("snapshot size", func(r scaleResult) string { return fmt.Sprintf("%.1f MiB", float64(r.snapshotBytes)/(1<<20)) })
	row("snapshot save / restore", func(r scaleResult) string { return fmtDur(r.snapshot) + " / " + fmtDur(r.restore) })
	row("GET /v1/jobs first page (p50)", func(r scaleResult) string { return fmtDur(r.list) })
	row(`GET /v1/jobs?filter=Status=="running" first page (p50)`, func(r scaleResult) string { return fmtDur(r.filter) })
	row("GET /v1/job/:id/summary (p50)", func(r scaleResult) string { return fmtDur(r.status) })
	return sb.String()
}

// fmtDur formats d in milliseconds, or seconds from 10 s.
func fmtDur(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
