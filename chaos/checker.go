package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"gonum.org/v1/gonum/stat"
)

// Schedule is what a run does to the cluster while its clients write.
type Schedule struct {
	// Kills is how many times the leader is SIGKILLed; it comes back
	// after Down.
	Kills int
	Down  time.Duration
	// Partitions isolates the leader from the other servers, then a
	// follower (a split of 1 against 2), and heals each.
	Partitions bool
	// Writers is how many clients register jobs, read them back and
	// report samples at once, each against random servers.
	Writers int
	// Upgrade, when set, upgrades every server, after the kills and
	// partitions.
	Upgrade *Upgrade
}

// Upgrade is a rolling upgrade: each server's binary is replaced with To,
// one server at a time, followers first and the leader last (as
// deploy/README.md and Nomad's upgrade guide say), and each step waits
// until the server is back (it answers with Version, and the cluster has
// a leader and all its voters) and the clients' writes are acknowledged
// again.
type Upgrade struct {
	// To is the new binary; Version what its agents answer in
	// /v1/agent/self (agent.Version).
	To, Version string
	// Stops says how each step stops its server, in the order of the
	// steps; a step past its end stops with Leave.
	Stops []StopMode
}

// Report is what a run found. A run is correct when Lost, Duplicated,
// DuplicateSamples, EmptyAcks, StaleReads, MinorityWrites and MinorityReads
// are all zero.
type Report struct {
	// Acked writes (job registrations and samples) the cluster
	// acknowledged; Failed those it refused or left unanswered.
	AckedJobs, AckedSamples, FailedWrites int64
	// Lost is how many acknowledged writes some server does not hold at
	// the end; Duplicated how many acknowledged registrations made more
	// than one version; EmptyAcks how many registrations were answered 2xx
	// without the answer naming the job.
	Lost, Duplicated int
	EmptyAcks        int64
	// SampleRetries is how many sample reports were sent again, with the
	// same body (the same Time), after an answer that did not say whether
	// they were kept: a 5xx or no answer. DuplicateSamples is how many
	// jobs some server holds the clients' sample of more than once, which
	// such a retry makes when the first report was kept and the servers
	// store a repeated sample again. Servers from 0.2.0 on store it once,
	// once every server runs 0.2.0: during an upgrade from an earlier
	// release only the samples reported after every server recorded its
	// new version count here, and those reported before it in
	// DuplicateSamplesBefore (not a violation: the old servers' semantics).
	SampleRetries                            int64
	DuplicateSamples, DuplicateSamplesBefore int
	// Reads are the consistent reads of a job just acknowledged, from a
	// random server, that answered; StaleReads those that did not find
	// it; Unavailable those that failed (no leader, cut off).
	Reads, StaleReads, Unavailable int64
	// MinorityWrites and MinorityReads are writes acknowledged and
	// consistent reads answered by a server cut off from the majority.
	MinorityWrites, MinorityReads int
	// Failovers is, per disruption (a kill, the leader's isolation, the
	// leader's step of an upgrade), the time until a new leader had a
	// majority behind it; WriteGaps the time until the first write
	// acknowledged after it.
	Failovers, WriteGaps []time.Duration
	// Rejoins is, per step of an upgrade, the time from stopping the
	// server until it was back on its new binary with a leader and all
	// the voters.
	Rejoins []time.Duration
	// Versions is what each server's /v1/agent/self said at the end.
	Versions []string
	// Details names the violations.
	Details []string
}

// OK reports whether the run found no violation.
func (r *Report) OK() bool {
	return r.Lost == 0 && r.Duplicated == 0 && r.DuplicateSamples == 0 && r.EmptyAcks == 0 && r.StaleReads == 0 && r.MinorityWrites == 0 && r.MinorityReads == 0
}

// String summarises the report on a few lines.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "acknowledged: %d jobs, %d samples; failed or unanswered writes: %d\n", r.AckedJobs, r.AckedSamples, r.FailedWrites)
	fmt.Fprintf(&b, "lost: %d, duplicated: %d, empty acknowledgements: %d\n", r.Lost, r.Duplicated, r.EmptyAcks)
	fmt.Fprintf(&b, "sample reports retried: %d; jobs with a sample stored more than once: %d (%d before every server de-duplicated)\n", r.SampleRetries, r.DuplicateSamples, r.DuplicateSamplesBefore)
	fmt.Fprintf(&b, "reads of a write just acknowledged: %d answered, %d stale, %d unavailable\n", r.Reads, r.StaleReads, r.Unavailable)
	fmt.Fprintf(&b, "cut-off servers: %d writes acknowledged, %d consistent reads answered\n", r.MinorityWrites, r.MinorityReads)
	fmt.Fprintf(&b, "failover: %s; first write after: %s", quantiles(r.Failovers), quantiles(r.WriteGaps))
	if len(r.Rejoins) > 0 {
		fmt.Fprintf(&b, "\nupgrade steps, stop to rejoined: %s", quantiles(r.Rejoins))
	}
	fmt.Fprintf(&b, "\nversions: %s", strings.Join(r.Versions, "; "))
	for _, d := range r.Details {
		fmt.Fprintf(&b, "\n  %s", d)
	}
	return b.String()
}

func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	slices.Sort(xs)
	q := func(p float64) time.Duration {
		return time.Duration(stat.Quantile(p, stat.Empirical, xs, nil)).Round(time.Millisecond)
	}
	return fmt.Sprintf("n=%d min %s median %s p95 %s max %s", len(xs), q(0), q(0.5), q(0.95), q(1))
}

// checker runs the clients and records what the cluster acknowledged.
type checker struct {
	c   *Cluster
	log func(format string, args ...any)

	mu       sync.Mutex
	jobs     []string // acknowledged registrations
	samples  []string // acknowledged samples' jobs (one sample a job)
	reported []string // jobs whose sample was sent, acknowledged or not
	// dedupFrom is how many of reported were sent before every server
	// recorded a version that stores a repeated sample once (an upgrade
	// from an earlier release); 0 when they all did from the start.
	dedupFrom int
	acks      []time.Time
	details   []string

	failed, reads, stale, unavailable, emptyAcks, retries atomic.Int64
}

// checkerStep is the step of the sample a client reports for each job it
// registered, far beyond any the simulated trainers reach.
const checkerStep = 999_999_999

// jobHCL is a small job; the servers run the sim driver, so it never
// needs a real task.
const jobHCL = `
job %q {
  training {
    global_batch_size = 16
    steps_per_epoch   = 1000000
  }
  elastic {
    workers {
      min = 1
      max = 1
    }
  }
  worker {
    driver = "exec"
    config {
      command = "/bin/true"
    }
    resources {
      cpu    = 10
      memory = 16
    }
  }
}
`

// Run runs the clients against c while it carries out s, then checks
// what every server holds.
func Run(t testing.TB, c *Cluster, s Schedule) *Report {
	t.Helper()
	ck := &checker{c: c, log: t.Logf}
	r := &Report{}
	if s.Upgrade == nil {
		// A new cluster's leader de-duplicates samples only once every
		// server recorded its version (a server that has not could be
		// of a release before 0.2.0, which would store the repeat): a
		// report retried in the first second of the cluster may be
		// stored twice, as the old servers did. dedupFrom is 0, so the
		// clients start after that.
		ck.waitVersionsRecorded(t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range max(s.Writers, 1) {
		wg.Go(func() { ck.write(ctx, w) })
	}
	defer func() {
		cancel()
		wg.Wait()
	}()

	ck.waitAcks(t, 5, 30*time.Second)
	for k := range s.Kills {
		leader := c.WaitLeader(time.Minute, -1)
		t.Logf("kill %d of %d: server %d", k+1, s.Kills, leader)
		ck.disrupt(t, r, leader, func() { c.Kill(leader) })
		time.Sleep(s.Down) // the server stays down for a while, as a crashed one does
		c.Start(leader)
		ck.waitAcks(t, 3, 30*time.Second)
	}
	if s.Partitions {
		leader := c.WaitLeader(time.Minute, -1)
		t.Logf("isolating the leader, server %d", leader)
		ck.disrupt(t, r, leader, func() { c.nw.Isolate(leader) })
		ck.probeMinority(t, r, leader)
		c.nw.Heal()
		ck.waitAcks(t, 3, 30*time.Second)

		leader = c.WaitLeader(time.Minute, -1)
		follower := (leader + 1) % c.N()
		t.Logf("isolating a follower, server %d (the leader is server %d)", follower, leader)
		c.nw.Isolate(follower)
		ck.waitAcks(t, 3, 30*time.Second) // the majority goes on
		ck.probeMinority(t, r, follower)
		c.nw.Heal()
		ck.waitAcks(t, 3, 30*time.Second)
	}
	if s.Upgrade != nil {
		ck.upgrade(t, r, *s.Upgrade)
	}
	cancel()
	wg.Wait()

	ck.verify(t, r)
	r.FailedWrites, r.EmptyAcks, r.SampleRetries = ck.failed.Load(), ck.emptyAcks.Load(), ck.retries.Load()
	r.Reads, r.StaleReads, r.Unavailable = ck.reads.Load(), ck.stale.Load(), ck.unavailable.Load()
	r.Details = append(r.Details, ck.details...)
	return r
}

// write is one client: it registers jobs through random servers, reads
// each acknowledged one back from another random server, and reports a
// sample for it, until ctx ends.
func (ck *checker) write(ctx context.Context, w int) {
	for n := 0; ctx.Err() == nil; n++ {
		id := fmt.Sprintf("w%d-%d", w, n)
		i := rand.IntN(ck.c.N())
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var reg struct{ JobID string }
		_, err := ck.c.Do(wctx, i, http.MethodPost, "/v1/jobs", map[string]string{"JobHCL": fmt.Sprintf(jobHCL, id), "Filename": id + ".hcl"}, &reg)
		cancel()
		// An acknowledgement says what it registered; an empty 200 is what
		// net/http sends for a handler that answered nothing, and a client
		// would take it for done.
		var bad *BadAnswer
		if errors.As(err, &bad) || err == nil && reg.JobID != id {
			ck.emptyAcks.Add(1)
			ck.violation("job %s: server %d answered 2xx without saying it registered it (%v)", id, i, err)
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				ck.failed.Add(1)
				time.Sleep(50 * time.Millisecond) // no leader now: do not spin
			}
			continue
		}
		ck.ack(func() { ck.jobs = append(ck.jobs, id) })

		j := rand.IntN(ck.c.N())
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var got struct{ ID string }
		_, err = ck.c.Do(rctx, j, http.MethodGet, "/v1/job/"+id, nil, &got)
		cancel()
		var se *StatusError
		switch {
		case err == nil && got.ID == id:
			ck.reads.Add(1)
		case errors.As(err, &se) && se.Code == http.StatusNotFound, errors.As(err, new(*BadAnswer)), err == nil:
			ck.stale.Add(1)
			ck.violation("stale read: job %s, acknowledged through server %d, not found through server %d", id, i, j)
		case ctx.Err() == nil:
			ck.unavailable.Add(1)
		}

		if ck.report(ctx, id) {
			ck.ack(func() { ck.samples = append(ck.samples, id) })
		}
	}
}

// report reports the clients' sample of job id, stamped with its Time
// as a trainer stamps it, through random servers, and reports whether a
// server acknowledged it. An answer that does not say whether the sample
// was kept (a 5xx, or none) is followed by the same report again, as a
// trainer retries, until one does or ctx ends: the servers may then hold
// the sample twice (Report.DuplicateSamples).
func (ck *checker) report(ctx context.Context, id string) bool {
	smp := map[string]any{"samples": []map[string]any{{
		"job_id": id, "step": checkerStep, "loss": 1.0, "step_time_s": 0.1, "num_ps": 1, "num_workers": 1,
		"time": time.Now().UnixNano(),
	}}}
	ck.mu.Lock()
	ck.reported = append(ck.reported, id)
	ck.mu.Unlock()
	for try := 0; ; try++ {
		if try > 0 {
			ck.retries.Add(1)
		}
		var resp struct{ Accepted int }
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := ck.c.Do(sctx, rand.IntN(ck.c.N()), http.MethodPost, "/v1/report", smp, &resp)
		cancel()
		if err == nil {
			return resp.Accepted == 1
		}
		if ctx.Err() != nil {
			return false
		}
		ck.failed.Add(1)
		var se *StatusError
		if errors.As(err, &se) && se.Code < 500 || errors.As(err, new(*BadAnswer)) {
			return false // refused, or answered: not ambiguous
		}
		time.Sleep(50 * time.Millisecond) // no leader now: do not spin
	}
}

func (ck *checker) ack(record func()) {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	record()
	ck.acks = append(ck.acks, time.Now())
}

func (ck *checker) violation(format string, args ...any) {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	if len(ck.details) < 20 {
		ck.details = append(ck.details, fmt.Sprintf(format, args...))
	}
}

// acked returns how many writes were acknowledged, and the first
// acknowledged after since.
func (ck *checker) acked(since time.Time) (int, time.Time) {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	i := sort.Search(len(ck.acks), func(i int) bool { return ck.acks[i].After(since) })
	if i == len(ck.acks) {
		return len(ck.acks), time.Time{}
	}
	return len(ck.acks), ck.acks[i]
}

// waitAcks waits until n more writes are acknowledged.
func (ck *checker) waitAcks(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	from, _ := ck.acked(time.Now())
	agent.WaitFor(t, timeout, fmt.Sprintf("%d more acknowledged writes", n), func() error {
		if got, _ := ck.acked(time.Now()); got < from+n {
			return fmt.Errorf("%d so far", got-from)
		}
		return nil
	})
}

// disrupt takes the leader out with do, and records how long the cluster
// took to elect another and to acknowledge a write again.
func (ck *checker) disrupt(t testing.TB, r *Report, leader int, do func()) {
	t.Helper()
	start := time.Now()
	do()
	ck.c.WaitLeader(time.Minute, leader)
	r.Failovers = append(r.Failovers, time.Since(start))
	agent.WaitFor(t, time.Minute, "a write acknowledged after the disruption", func() error {
		if _, first := ck.acked(start); first.IsZero() {
			return errors.New("none yet")
		}
		return nil
	})
	_, first := ck.acked(start)
	r.WriteGaps = append(r.WriteGaps, first.Sub(start))
}

// upgrade carries out u: one server at a time, a follower while one is
// left on the old binary, the leader last.
func (ck *checker) upgrade(t testing.TB, r *Report, u Upgrade) {
	t.Helper()
	// As an operator does: start from a cluster with a leader and all
	// its voters (a server that just joined and leaves at once may miss
	// its own removal, and then does not ask to join again).
	ck.waitWhole(t, -1, "")
	ck.waitAcks(t, upgradeAcks, 30*time.Second)
	done := make([]bool, ck.c.N())
	for step := range ck.c.N() {
		leader := ck.c.WaitLeader(time.Minute, -1)
		i := leader
		for j := range ck.c.N() {
			if !done[j] && j != leader {
				i = j
				break
			}
		}
		mode := Leave
		if step < len(u.Stops) {
			mode = u.Stops[step]
		}
		role := "a follower"
		if i == leader {
			role = "the leader"
		}
		t.Logf("upgrade %d of %d: server %d, %s, stopped with %s", step+1, ck.c.N(), i, role, mode)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		old, err := ck.c.Self(ctx, i)
		cancel()
		if err != nil {
			t.Fatalf("upgrade: server %d before its step: %v", i, err)
		}
		start := time.Now()
		ck.c.Halt(i, mode)
		// A leader that leaves serves until it is out: the failover and
		// the gap in writes count from its exit.
		exited := time.Now()
		if i == leader {
			ck.c.WaitLeader(time.Minute, i)
			r.Failovers = append(r.Failovers, time.Since(exited))
		}
		if mode == Leave {
			ck.waitLeft(t, i, old.ID)
		}
		ck.c.SetBinary(i, u.To)
		ck.c.Start(i)
		ck.waitWhole(t, i, u.Version)
		r.Rejoins = append(r.Rejoins, time.Since(start))
		t.Logf("server %d back on %s, with a leader and %d voters, %s after it was stopped", i, u.Version, ck.c.N(), r.Rejoins[step].Round(time.Millisecond))
		done[i] = true
		// The mixed cluster (and at the end the new one) takes writes
		// before the next step.
		ck.waitAcks(t, upgradeAcks, 30*time.Second)
		if i == leader {
			_, first := ck.acked(exited)
			r.WriteGaps = append(r.WriteGaps, first.Sub(exited))
		}
	}
	from := ck.waitVersionsRecorded(t)
	ck.mu.Lock()
	ck.dedupFrom = from
	ck.mu.Unlock()
	// Samples reported from now on are stored once: have the clients
	// report some before the run ends, and repeat one report for sure.
	ck.repeatReport(t)
	ck.waitAcks(t, upgradeAcks, 30*time.Second)
}

// repeatReport registers a job and sends its sample's report twice, the
// same body through two servers, as a trainer does after an answer it
// could not read: verify then finds the sample stored once on every
// server, or counts a duplicate.
func (ck *checker) repeatReport(t testing.TB) {
	t.Helper()
	const id = "repeated-report"
	agent.WaitFor(t, 30*time.Second, "job "+id+" registered", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := ck.c.Do(ctx, 0, http.MethodPost, "/v1/jobs", map[string]string{"JobHCL": fmt.Sprintf(jobHCL, id), "Filename": id + ".hcl"}, nil)
		return err
	})
	body := map[string]any{"samples": []map[string]any{{
		"job_id": id, "step": checkerStep, "loss": 1.0, "step_time_s": 0.1, "num_ps": 1, "num_workers": 1,
		"time": time.Now().UnixNano(),
	}}}
	for i := range 2 {
		var resp struct{ Accepted int }
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := ck.c.Do(ctx, i%ck.c.N(), http.MethodPost, "/v1/report", body, &resp)
		cancel()
		if err != nil || resp.Accepted != 1 {
			t.Fatalf("report %d of job %s: accepted %d (%v), want 1", i+1, id, resp.Accepted, err)
		}
	}
	ck.ack(func() {
		ck.jobs = append(ck.jobs, id)
		ck.samples = append(ck.samples, id)
		ck.reported = append(ck.reported, id)
	})
}

// waitVersionsRecorded waits until every server of the Raft
// configuration has recorded a version in its member record, as servers
// from 0.2.0 on do: from then on the leader writes the message types
// 0.2.0 added (de-duplicated samples). It returns how many samples were
// reported by then.
func (ck *checker) waitVersionsRecorded(t testing.TB) int {
	t.Helper()
	agent.WaitFor(t, 30*time.Second, "every server's version recorded", func() error {
		var conf struct {
			Servers []struct{ ID, Version string }
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := ck.c.Do(ctx, ck.c.WaitLeader(time.Minute, -1), http.MethodGet, "/v1/operator/raft/configuration", nil, &conf); err != nil {
			return err
		}
		for _, sv := range conf.Servers {
			if sv.Version == "" {
				return fmt.Errorf("server %s has not recorded its version", short(sv.ID))
			}
		}
		if len(conf.Servers) != ck.c.N() {
			return fmt.Errorf("%d servers in the configuration", len(conf.Servers))
		}
		return nil
	})
	ck.mu.Lock()
	defer ck.mu.Unlock()
	return len(ck.reported)
}

// upgradeAcks is how many writes the cluster acknowledges after each
// step of an upgrade before the next.
const upgradeAcks = 50

// waitLeft waits until the servers other than i, which left, name a
// leader and no longer count i (whose ID is id) among the voters.
func (ck *checker) waitLeft(t testing.TB, i int, id string) {
	t.Helper()
	agent.WaitFor(t, 30*time.Second, fmt.Sprintf("server %d (%s) out of the Raft configuration after leaving", i, short(id)), func() error {
		for j := range ck.c.N() {
			if j == i {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			s, err := ck.c.Self(ctx, j)
			cancel()
			switch {
			case err != nil:
				return fmt.Errorf("server %d: %w", j, err)
			case s.LeaderID == "" || s.LeaderID == id:
				return fmt.Errorf("server %d follows %q", j, short(s.LeaderID))
			case s.Voters != ck.c.N()-1:
				return fmt.Errorf("server %d counts %d voters", j, s.Voters)
			}
		}
		return nil
	})
}

// waitWhole waits until every server names a leader with a majority
// behind it and counts all the servers as voters, and server i (none
// when -1) answers with version.
func (ck *checker) waitWhole(t testing.TB, i int, version string) {
	t.Helper()
	what := fmt.Sprintf("a leader and %d voters", ck.c.N())
	if i >= 0 {
		what = fmt.Sprintf("server %d back on %s, with %s", i, version, what)
	}
	agent.WaitFor(t, time.Minute, what, func() error {
		for j := range ck.c.N() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			s, err := ck.c.Self(ctx, j)
			cancel()
			switch {
			case err != nil:
				return fmt.Errorf("server %d: %w", j, err)
			case j == i && s.Version != version:
				return fmt.Errorf("server %d runs %q", j, s.Version)
			case s.LeaderID == "":
				return fmt.Errorf("server %d knows no leader", j)
			case s.Voters != ck.c.N():
				return fmt.Errorf("server %d counts %d voters", j, s.Voters)
			}
		}
		_, err := ck.c.Leader(context.Background())
		return err
	})
}

// probeMinority asks server i, cut off from the majority, to write and to
// read consistently: it must do neither.
func (ck *checker) probeMinority(t testing.TB, r *Report, i int) {
	t.Helper()
	ck.mu.Lock()
	known := ck.jobs[0] // on every server long since
	ck.mu.Unlock()
	for n := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		id := fmt.Sprintf("minority-%d-%d", i, n)
		if _, err := ck.c.Do(ctx, i, http.MethodPost, "/v1/jobs", map[string]string{"JobHCL": fmt.Sprintf(jobHCL, id), "Filename": id + ".hcl"}, nil); err == nil {
			r.MinorityWrites++
			ck.violation("server %d, cut off from the majority, acknowledged job %s", i, id)
		}
		if _, err := ck.c.Do(ctx, i, http.MethodGet, "/v1/job/"+known, nil, nil); err == nil {
			r.MinorityReads++
			ck.violation("server %d, cut off from the majority, answered a consistent read of job %s", i, known)
		}
		cancel()
	}
}

// storedSamples returns how many times server i holds the clients'
// sample of job id (its step is checkerStep; the simulated trainers'
// samples are not counted), and those copies as the server answers them,
// with their positions in the history, to say how a repeat got in.
func (ck *checker) storedSamples(i int, id string) (int, string, error) {
	var js struct {
		Received int64
		Samples  []json.RawMessage
	}
	_, err := ck.c.Do(context.Background(), i, http.MethodGet, "/v1/job/"+id+"/samples?stale=true", nil, &js)
	var copies []string
	for k, raw := range js.Samples {
		var smp struct {
			Step int64 `json:"step"`
		}
		if json.Unmarshal(raw, &smp) == nil && smp.Step == checkerStep {
			copies = append(copies, fmt.Sprintf("#%d of %d: %s", k, len(js.Samples), raw))
		}
	}
	return len(copies), fmt.Sprintf("received %d; %s", js.Received, strings.Join(copies, "; ")), err
}

// verify checks that every server holds every acknowledged write once.
func (ck *checker) verify(t testing.TB, r *Report) {
	t.Helper()
	ck.mu.Lock()
	jobs, samples, reported, dedupFrom := slices.Clone(ck.jobs), slices.Clone(ck.samples), slices.Clone(ck.reported), ck.dedupFrom
	ck.mu.Unlock()
	acked := map[string]bool{}
	for _, id := range samples {
		acked[id] = true
	}
	// stored is, per job reported, the most times a server holds its
	// sample.
	stored := map[string]int{}
	copies := map[string]string{} // of the server that holds the most
	r.AckedJobs, r.AckedSamples = int64(len(jobs)), int64(len(samples))
	ck.c.WaitLeader(time.Minute, -1)
	for i := range ck.c.N() {
		var held map[string]bool
		// A server that was down or cut off catches up from the leader.
		agent.WaitFor(t, time.Minute, fmt.Sprintf("server %d holding every acknowledged job", i), func() error {
			var list []struct{ ID string }
			if _, err := ck.c.Do(context.Background(), i, http.MethodGet, "/v1/jobs?stale=true", nil, &list); err != nil {
				return err
			}
			held = map[string]bool{}
			for _, j := range list {
				held[j.ID] = true
			}
			for _, id := range jobs {
				if !held[id] {
					return fmt.Errorf("job %s missing", id)
				}
			}
			return nil
		})
		for _, id := range jobs {
			if !held[id] {
				r.Lost++
				ck.violation("server %d lost job %s", i, id)
			}
		}
		// A sample may be acknowledged after the last job: the server
		// catches up with it too.
		pending := slices.Clone(samples)
		agent.WaitFor(t, time.Minute, fmt.Sprintf("server %d holding every acknowledged sample", i), func() error {
			var err error
			pending = slices.DeleteFunc(pending, func(id string) bool {
				n, _, e := ck.storedSamples(i, id)
				err = cmp.Or(err, e)
				return e == nil && n > 0
			})
			if len(pending) > 0 {
				return fmt.Errorf("%d missing, such as job %s's (%v)", len(pending), pending[0], err)
			}
			return nil
		})
		for _, id := range reported {
			n, held, err := ck.storedSamples(i, id)
			if n > stored[id] {
				stored[id], copies[id] = n, fmt.Sprintf("server %d: %s", i, held)
			}
			if acked[id] && (err != nil || n == 0) {
				r.Lost++
				ck.violation("server %d does not hold the acknowledged sample of job %s (%v)", i, id, err)
			}
		}
		var s self
		if _, err := ck.c.Do(context.Background(), i, http.MethodGet, "/v1/agent/self", nil, &s); err != nil {
			s.Version = err.Error()
		}
		r.Versions = append(r.Versions, s.Version)
	}
	for k, id := range reported {
		switch {
		case stored[id] <= 1:
		case k < dedupFrom:
			r.DuplicateSamplesBefore++
		default:
			r.DuplicateSamples++
			ck.violation("job %s: its sample is stored %d times (%s)", id, stored[id], copies[id])
		}
	}
	for _, id := range jobs {
		var versions []struct{ Version uint64 }
		if _, err := ck.c.Do(context.Background(), 0, http.MethodGet, "/v1/job/"+id+"/versions?stale=true", nil, &versions); err != nil || len(versions) != 1 {
			r.Duplicated++
			ck.violation("job %s has %d versions, want 1 (%v)", id, len(versions), err)
		}
	}
}
