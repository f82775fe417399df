package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestJobGC_CollectsEndedJobs: on a real server, the collector's goroutine
// purges the jobs that ended more than the threshold ago, with their
// versions and history, and leaves the active job; the counter says how
// many it purged.
func TestJobGC_CollectsEndedJobs(t *testing.T) {
	cfg := TestConfig(t, simDriver(t, 1))
	cfg.JobGCThreshold = 200 * time.Millisecond
	cfg.JobGCInterval = 50 * time.Millisecond
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)
	before := collectedCounter(t, s)

	for _, id := range []string{"keep", "done-1", "done-2"} {
		_, _, err := c.Jobs().Register(TestQueueJob(id, structs.DefaultNamespace, 1, 2), nil)
		must.NoError(t, err)
	}
	agent.WaitFor(t, 20*time.Second, "keep placed", jobStatus(t, c, "keep", structs.JobStatusRunning))
	for _, id := range []string{"done-1", "done-2"} {
		_, err := c.Jobs().Stop(id, false, nil)
		must.NoError(t, err)
	}
	agent.WaitFor(t, 20*time.Second, "ended jobs collected", func() error {
		for _, id := range []string{"done-1", "done-2"} {
			if j, err := state.JobByID(s.State().Txn(), nil, structs.DefaultNamespace, id); err != nil || j != nil {
				return fmt.Errorf("job %s is still held (%v)", id, err)
			}
		}
		return nil
	})
	txn := s.State().Txn()
	for _, id := range []string{"done-1", "done-2"} {
		vs, err := state.JobVersions(txn, nil, structs.DefaultNamespace, id)
		must.NoError(t, err)
		must.SliceEmpty(t, vs, must.Sprintf("job %s's versions are purged with it", id))
		hist, err := state.Placements(txn, nil, structs.DefaultNamespace, id)
		must.NoError(t, err)
		must.SliceEmpty(t, hist)
	}
	_, _, err := c.Jobs().Info("done-1", nil)
	must.Error(t, err, must.Sprint("the API no longer knows it"))
	must.NoError(t, jobStatus(t, c, "keep", structs.JobStatusRunning)(), must.Sprint("an active job is never collected"))
	must.GreaterEq(t, before+2, collectedCounter(t, s))
}

// collectedCounter reads caravan_jobs_collected from the server's
// /v1/metrics; the registry is the process's, so tests compare it before
// and after.
func collectedCounter(t *testing.T, s *Server) float64 {
	t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr() + "/v1/metrics")
	must.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	m := regexp.MustCompile(`(?m)^caravan_jobs_collected(?:\{[^}]*\})? (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	must.NoError(t, err)
	return v
}

// gcClock is a virtual clock the test moves.
type gcClock struct{ ns atomic.Int64 }

var gcEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *gcClock) Now() time.Time { return gcEpoch.Add(time.Duration(c.ns.Load())) }

func (c *gcClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// manualGCServer starts a Manual-mode server on a virtual clock, as
// caravan sim runs one, with a threshold of an hour, and waits until it
// leads.
func manualGCServer(t *testing.T) (*Server, *gcClock, *api.Client) {
	clk := &gcClock{}
	cluster := sim.DefaultConfig()
	cluster.Nodes, cluster.GPUsPerNode = 2, 4
	driver := sim.NewDriver(sim.DriverConfig{Cluster: cluster, Clock: clk.Now})
	cfg := TestConfig(t, driver)
	cfg.Manual = true
	cfg.Clock = clk.Now
	cfg.JobGCThreshold = time.Hour
	cfg.JobGCInterval = time.Millisecond // no collector runs in Manual mode
	s := TestServer(t, cfg)
	agent.WaitFor(t, 10*time.Second, "the server leads", func() error { return s.Step(context.Background()) })
	return s, clk, client(t, s)
}

// TestJobGC_Manual: in Manual mode no collector runs on its own, and
// CollectGarbage ages jobs by the server's (virtual) clock: a job that
// ended is kept until the threshold has passed on that clock.
func TestJobGC_Manual(t *testing.T) {
	s, clk, c := manualGCServer(t)
	ctx := context.Background()
	for _, id := range []string{"keep", "done"} {
		_, _, err := c.Jobs().Register(TestQueueJob(id, structs.DefaultNamespace, 1, 2), nil)
		must.NoError(t, err)
	}
	must.NoError(t, s.Step(ctx))
	_, err := c.Jobs().Stop("done", false, nil)
	must.NoError(t, err)
	must.NoError(t, s.Step(ctx))

	clk.advance(59 * time.Minute)
	n, err := s.CollectGarbage(ctx)
	must.NoError(t, err)
	must.Eq(t, 0, n, must.Sprint("ended 59 minutes ago by the server's clock, under the hour"))
	must.NoError(t, jobErr(c, "done"))

	clk.advance(2 * time.Minute)
	n, err = s.CollectGarbage(ctx)
	must.NoError(t, err)
	must.Eq(t, 1, n)
	must.Error(t, jobErr(c, "done"))
	must.NoError(t, jobErr(c, "keep"), must.Sprint("an active job stays, whatever its age"))
	n, err = s.CollectGarbage(ctx)
	must.NoError(t, err)
	must.Eq(t, 0, n)
	must.NoError(t, s.Step(ctx), must.Sprint("the loop goes on after its job's purge"))
}

// jobErr is the API's error for job id, nil when it holds the job.
func jobErr(c *api.Client, id string) error {
	_, _, err := c.Jobs().Info(id, nil)
	return err
}

// TestJobGC_ReRegisteredBeforeApply: a job registered again between the
// collector's listing and its entry is a new run, and is not purged.
func TestJobGC_ReRegisteredBeforeApply(t *testing.T) {
	s, clk, c := manualGCServer(t)
	ctx := context.Background()
	_, _, err := c.Jobs().Register(TestQueueJob("again", structs.DefaultNamespace, 1, 2), nil)
	must.NoError(t, err)
	must.NoError(t, s.Step(ctx))
	_, err = c.Jobs().Stop("again", false, nil)
	must.NoError(t, err)
	must.NoError(t, s.Step(ctx))
	clk.advance(2 * time.Hour)

	called := false
	s.gc.beforeApply = func() {
		called = true
		_, _, err := c.Jobs().Register(TestQueueJob("again", structs.DefaultNamespace, 1, 2), nil)
		must.NoError(t, err)
	}
	n, err := s.CollectGarbage(ctx)
	must.NoError(t, err)
	must.True(t, called, must.Sprint("the pass found the job ended two hours ago"))
	must.Eq(t, 0, n)
	job, _, err := c.Jobs().Info("again", nil)
	must.NoError(t, err)
	must.Eq(t, structs.JobStatusPending, job.Status)
	must.Eq(t, 1, job.Version, must.Sprint("the new run, kept with its versions"))
}

// TestJobGC_Follower: CollectGarbage runs on the leader only.
func TestJobGC_Follower(t *testing.T) {
	servers := cluster(t, 3, simDriver(t, 1))
	leader := leaderOf(t, servers...)
	for _, s := range servers {
		if s == leader {
			continue
		}
		_, err := s.CollectGarbage(context.Background())
		must.True(t, errors.Is(err, ErrNotLeader))
	}
}

// TestRetention_CommittedByLeader: the leader commits the retention bounds
// of its configuration when it takes over, and the state keeps to them.
func TestRetention_CommittedByLeader(t *testing.T) {
	cfg := TestConfig(t, simDriver(t, 1))
	want := &structs.Retention{MaxJobSamples: 128, MaxJobPlacements: 8, MaxEvents: 100}
	cfg.Retention = want
	s := TestServer(t, cfg)
	leaderOf(t, s)
	agent.WaitFor(t, 10*time.Second, "bounds committed", func() error {
		r, err := state.Retention(s.State().Txn(), nil)
		if err != nil {
			return err
		}
		if !r.Same(want) || r.ModifyIndex == 0 {
			return fmt.Errorf("bounds in force: %+v", r)
		}
		return nil
	})
	for i := range 120 {
		must.NoError(t, s.Event(context.Background(), &structs.Event{Type: structs.EventAlgorithmFallback, Message: strconv.Itoa(i)}))
	}
	evs, err := state.Events(s.State().Txn(), nil, 0)
	must.NoError(t, err)
	must.SliceLen(t, 100, evs)

	bad := TestConfig(t, simDriver(t, 1))
	bad.Retention = &structs.Retention{MaxJobSamples: 1, MaxJobPlacements: 8, MaxEvents: 100}
	_, err = New(bad)
	must.ErrorContains(t, err, "retention")
}

// TestJobGC_Declared: an ended job declared in the cluster is kept while
// the cluster declares it; once its version is a plain one it is
// collected; and one the cluster's view holds no declaration of (purged,
// or a version the view could not read yet) only at the second pass in a
// row that finds none.
func TestJobGC_Declared(t *testing.T) {
	clk := &gcClock{}
	cluster := sim.DefaultConfig()
	cluster.Nodes, cluster.GPUsPerNode = 2, 4
	disc := &declarations{decls: map[structs.JobKey]*structs.Declaration{}}
	cfg := TestConfig(t, sim.NewDriver(sim.DriverConfig{Cluster: cluster, Clock: clk.Now}))
	cfg.Manual, cfg.Clock, cfg.Discoverer = true, clk.Now, disc
	cfg.JobGCThreshold = time.Hour
	s := TestServer(t, cfg)
	ctx := context.Background()
	agent.WaitFor(t, 10*time.Second, "the server leads", func() error { return s.Step(ctx) })
	c := client(t, s)

	for _, id := range []string{"kept", "plain", "gone"} {
		disc.set(id, declaredDemo(t, id, 10, 1))
	}
	must.NoError(t, s.Step(ctx))
	for _, id := range []string{"kept", "plain", "gone"} {
		_, err := c.Jobs().Stop(id, false, nil) // ended in Caravan, still declared
		must.NoError(t, err)
	}
	must.NoError(t, s.Step(ctx))
	disc.set("plain", &structs.Declaration{Kind: structs.DeclaredPlain, Index: 11})
	disc.set("gone", nil)
	clk.advance(2 * time.Hour)

	n, err := s.CollectGarbage(ctx)
	must.NoError(t, err)
	must.Eq(t, 1, n, must.Sprint("plain only: gone was found without a declaration once"))
	must.Error(t, jobErr(c, "plain"))
	must.NoError(t, jobErr(c, "gone"))
	n, err = s.CollectGarbage(ctx)
	must.NoError(t, err)
	must.Eq(t, 1, n, must.Sprint("gone, at the second pass in a row without a declaration"))
	must.Error(t, jobErr(c, "gone"))
	must.NoError(t, jobErr(c, "kept"), must.Sprint("still declared"))
}
