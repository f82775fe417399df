package server

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/shoenig/test/must"
	"gonum.org/v1/gonum/stat"
)

// raftLogBucket is how many registrations one row of the Raft log
// measurement covers.
const raftLogBucket = 100

// TestRaftLog_Growth measures how the Raft log grows with registrations
// (issue 14): one server with its log on disk and the leader loop running,
// so that every registration triggers a round as in production, registers
// CARAVAN_RAFTLOG_N jobs (default 200) one after another through POST
// /v1/jobs. Every raftLogBucket registrations it records the size of
// raft.db and the register latencies; after shutdown it reads the log back
// and adds up the bytes of its entries per bucket and per message type.
//
// Each registration waits, before the next, for GET /v1/plan to show a
// plan committed after it: one round per registration, as when
// registrations are spread out in production, and the same number of
// rounds on every machine. With CARAVAN_RAFTLOG_PACE=none registrations
// follow one another as fast as they return, and a round covers as many
// as arrived while the last one ran (the "decisions" column counts them).
//
// The test fails unless the log grows at most linearly: the log bytes per
// registration of the last bucket may not exceed 3× those of the first.
// Reproduce server/README.md's numbers with
//
//	CARAVAN_RAFTLOG_N=2000 go test ./server -run TestRaftLog_Growth -v -timeout 30m
func TestRaftLog_Growth(t *testing.T) {
	if testing.Short() {
		t.Skip("registers hundreds of jobs; skipped with -short")
	}
	n := envInt(t, "CARAVAN_RAFTLOG_N", 200)
	must.Positive(t, n)
	paced := os.Getenv("CARAVAN_RAFTLOG_PACE") != "none"

	// 16 nodes × 4 GPUs in real time: jobs run far longer than the test,
	// so the cluster fills up and later jobs wait, as they accumulate in
	// production.
	d := sim.NewDriver(sim.DriverConfig{Cluster: sim.DefaultConfig(), Speed: 1})
	d.Start()
	t.Cleanup(d.Stop)
	cfg := TestConfig(t, d)
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)
	dbPath := filepath.Join(cfg.DataDir, "raft", "raft.db")

	var rows []raftLogRow
	latencies := make([]time.Duration, 0, n)
	for i := range n {
		req := &api.JobRegisterRequest{Job: recode[*api.Job](t, raftLogJob(i))}
		start := time.Now()
		resp, _, err := c.Jobs().Register(req, nil)
		latencies = append(latencies, time.Since(start))
		must.NoError(t, err, must.Sprintf("register job %d", i))
		if paced {
			waitForRound(t, c, resp.Index)
		}
		if (i+1)%raftLogBucket == 0 || i+1 == n {
			fi, err := os.Stat(dbPath)
			must.NoError(t, err)
			last, _ := strconv.ParseUint(s.raft.Stats()["last_log_index"], 10, 64)
			from := i - i%raftLogBucket
			rows = append(rows, raftLogRow{
				registrations: i + 1,
				fileBytes:     fi.Size(),
				lastIndex:     last,
				latency:       latencies[from:],
			})
			r := rows[len(rows)-1]
			t.Logf("registered %d: raft.db %.1f MB, register p50 %.1f ms p95 %.1f ms",
				r.registrations, float64(r.fileBytes)/(1<<20), ms(percentile(r.latency, 0.5)), ms(percentile(r.latency, 0.95)))
		}
	}

	// The log store is closed with the server; read it back then.
	must.NoError(t, s.Shutdown())
	perType := readRaftLog(t, dbPath, rows)

	t.Logf("%6s %10s %9s %12s %9s %12s %9s %9s", "regs", "raft.db MB", "log index", "log bytes/reg", "decisions", "KB avg", "p50 ms", "p95 ms")
	for _, r := range rows {
		regs := r.registrations - rowStart(rows, r)
		planAvg := 0.0
		if r.plans > 0 {
			planAvg = float64(r.planBytes) / float64(r.plans) / 1024
		}
		t.Logf("%6d %10.1f %9d %12.0f %9d %12.1f %9.1f %9.1f",
			r.registrations, float64(r.fileBytes)/(1<<20), r.lastIndex,
			float64(r.logBytes)/float64(regs), r.plans, planAvg,
			ms(percentile(r.latency, 0.5)), ms(percentile(r.latency, 0.95)))
	}
	types := make([]fsm.MessageType, 0, len(perType))
	for typ := range perType {
		types = append(types, typ)
	}
	slices.Sort(types)
	var parts []string
	for _, typ := range types {
		parts = append(parts, fmt.Sprintf("%s %d entries %.1f MB", typ, perType[typ].entries, float64(perType[typ].bytes)/(1<<20)))
	}
	t.Logf("log by type: %s", strings.Join(parts, "; "))

	if len(rows) < 2 {
		t.Fatalf("the assertion needs CARAVAN_RAFTLOG_N >= %d", 2*raftLogBucket)
	}
	first, last := rows[0], rows[len(rows)-1]
	firstPer := float64(first.logBytes) / float64(first.registrations)
	lastPer := float64(last.logBytes) / float64(last.registrations-rowStart(rows, last))
	must.LessEq(t, 3*firstPer, lastPer, must.Sprintf(
		"log bytes per registration: %.0f in the first %d registrations, %.0f in the last; want at most 3×",
		firstPer, first.registrations, lastPer))
}

// waitForRound waits until GET /v1/plan shows a plan committed after
// index.
func waitForRound(t *testing.T, c *api.Client, index uint64) {
	agent.WaitFor(t, 30*time.Second, "a round after the registration", func() error {
		_, meta, err := c.LatestPlan(&api.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Second})
		if err != nil {
			return err
		}
		if meta.LastIndex <= index {
			return fmt.Errorf("the last plan is at index %d, the registration at %d", meta.LastIndex, index)
		}
		return nil
	})
}

// raftLogRow is the measurement of one bucket of registrations.
type raftLogRow struct {
	registrations int   // registered so far
	fileBytes     int64 // size of raft.db then
	lastIndex     uint64
	latency       []time.Duration // of this bucket's registrations
	// Read back from the log after shutdown: the bytes of the entries
	// committed from this bucket's first registration to the next
	// bucket's, and how many plans and plan bytes among them.
	logBytes  int64
	plans     int
	planBytes int64
}

type raftLogTypeTotal struct {
	entries int
	bytes   int64
}

// readRaftLog opens the Raft log at path, attributes each entry's bytes to
// the bucket of the registrations committed before it (the entries before
// the first registration go to the first bucket), and returns the totals
// per message type. It fails the test if the log was compacted, since the
// buckets would then be incomplete.
func readRaftLog(t *testing.T, path string, rows []raftLogRow) map[fsm.MessageType]raftLogTypeTotal {
	store, err := raftboltdb.NewBoltStore(path)
	must.NoError(t, err)
	defer store.Close()
	first, err := store.FirstIndex()
	must.NoError(t, err)
	last, err := store.LastIndex()
	must.NoError(t, err)
	must.Eq(t, uint64(1), first, must.Sprint("the log was compacted; raise the Raft TrailingLogs for this measurement"))

	perType := map[fsm.MessageType]raftLogTypeTotal{}
	registered, row := 0, 0
	var entry raft.Log
	for i := first; i <= last; i++ {
		must.NoError(t, store.GetLog(i, &entry))
		if entry.Type != raft.LogCommand || len(entry.Data) == 0 {
			continue
		}
		typ := fsm.MessageType(entry.Data[0]) &^ fsm.IgnoreUnknownTypeFlag
		if typ == fsm.JobRegisterType {
			registered++
			// The registration opens the next bucket when the last one
			// is full.
			if registered > rows[row].registrations && row+1 < len(rows) {
				row++
			}
		}
		size := int64(len(entry.Data))
		rows[row].logBytes += size
		if typ == fsm.DecisionApplyType {
			rows[row].plans++
			rows[row].planBytes += size
		}
		tot := perType[typ]
		tot.entries++
		tot.bytes += size
		perType[typ] = tot
	}
	must.Eq(t, rows[len(rows)-1].registrations, registered, must.Sprint("registrations in the log"))
	return perType
}

// raftLogJob returns the i-th job of the measurement: a parameter-server
// job of 1 to 4 workers with one GPU each.
func raftLogJob(i int) *structs.Job {
	j := structs.MockJob()
	j.ID = fmt.Sprintf("raftlog-%05d", i)
	j.Elastic.Workers = structs.Bounds{Min: 1, Max: 4}
	j.Elastic.ParameterServers = &structs.Bounds{Min: 1, Max: 2}
	j.Canonicalize()
	return j
}

// rowStart returns the registrations before row r.
func rowStart(rows []raftLogRow, r raftLogRow) int {
	i := slices.IndexFunc(rows, func(o raftLogRow) bool { return o.registrations == r.registrations })
	if i == 0 {
		return 0
	}
	return rows[i-1].registrations
}

// percentile returns the q-th quantile (the empirical one, nearest rank)
// of ds.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	slices.Sort(xs)
	return time.Duration(stat.Quantile(q, stat.Empirical, xs, nil))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// envInt reads a positive integer from the environment variable name, or
// returns def when it is unset.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}
