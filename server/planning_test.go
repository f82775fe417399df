package server

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/planner/fifo"
	"github.com/caravan-sched/caravan/plugins/loader"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// gated is a built-in whose Plan waits for the test: it hands each
// request to entered, then plans as FIFO once release lets it (or fails,
// while fail is set). Closing release lets every plan through.
type gated struct {
	entered chan *planner.Request
	release chan struct{}
	fail    atomic.Bool
	panics  atomic.Bool
	opened  sync.Once
}

// letAll lets every plan through from now on.
func (g *gated) letAll() { g.opened.Do(func() { close(g.release) }) }

func (g *gated) Name() string { return "gated" }

func (g *gated) Plan(req *planner.Request) (*planner.Decision, error) {
	select {
	case g.entered <- req:
	default: // the test stopped listening
	}
	<-g.release
	if g.fail.Load() {
		return nil, errors.New("gated: failing as asked")
	}
	if g.panics.Load() {
		panic("gated: panicking as asked")
	}
	return fifo.New().Plan(req)
}

// next returns the next request the gated algorithm is planning.
func (g *gated) next(t *testing.T) *planner.Request {
	t.Helper()
	select {
	case req := <-g.entered:
		return req
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for a round to plan")
		return nil
	}
}

// until lets through the plans of other rounds until one plans the jobs
// want, at the versions given, and returns with that plan held.
func (g *gated) until(t *testing.T, want map[string]uint64) {
	t.Helper()
	for {
		got := requestJobs(g.next(t))
		if maps.Equal(got, want) {
			return
		}
		t.Logf("let through a round of %v", got)
		g.release <- struct{}{}
	}
}

// gatedConfig is the config of a server on driver that plans with a new
// gated algorithm.
func gatedConfig(t *testing.T, driver Driver) (Config, *gated) {
	g := &gated{entered: make(chan *planner.Request, 16), release: make(chan struct{})}
	t.Cleanup(g.letAll)
	builtins := maps.Clone(builtin.Algorithms)
	builtins["gated"] = func() planner.Algorithm { return g }
	l, err := loader.New(loader.Config{Builtins: builtins, Logger: testLogger(t)})
	must.NoError(t, err)
	cfg := TestConfig(t, driver)
	cfg.Algorithms = l
	cfg.Algorithm = "gated"
	return cfg, g
}

// gatedServer runs a server on the simulator that plans with a gated
// algorithm, and the metrics source it reads.
func gatedServer(t *testing.T) (*Server, *gated, *feedSource) {
	cfg, g := gatedConfig(t, simDriver(t, 1))
	src := &feedSource{}
	cfg.Metrics = src
	return leaderOf(t, TestServer(t, cfg)), g, src
}

func requestJobs(req *planner.Request) map[string]uint64 {
	out := map[string]uint64{}
	for _, j := range req.Jobs {
		out[j.Job.ID] = j.Job.Version
	}
	return out
}

// latestPlan returns the latest committed plan, nil when none is.
func latestPlan(t *testing.T, s *Server) *structs.Plan {
	t.Helper()
	p, err := state.LatestPlan(s.State().Txn(), nil)
	must.NoError(t, err)
	return p
}

// TestLeader_PlansOffTheLoop: while the algorithm plans, the leader loop
// goes on: it takes a job registered meanwhile and commits samples from
// its metrics source and from reports. The plan in flight, made before
// the job came, is dropped; the next round plans the job.
func TestLeader_PlansOffTheLoop(t *testing.T) {
	s, g, src := gatedServer(t)
	c := client(t, s)
	must.MapEmpty(t, requestJobs(g.next(t)), must.Sprint("the first round has no job"))

	_, _, err := c.Jobs().Register(demoJob(t, "while"), nil)
	must.NoError(t, err)
	// The metrics source's samples of a job are committed once the loop
	// has taken the job: both happen while the first plan is held. (The
	// report comes after: the leader drops a source's samples older than
	// the newest committed.)
	steps := func() []int64 { return committedSteps(t, s, "while") }
	src.add(structs.Sample{JobID: "while", Step: 1, Loss: 1, StepTimeS: 0.1, NumPS: 1, NumWorkers: 1, Time: time.Now().UnixNano()})
	agent.WaitFor(t, 10*time.Second, "the source's sample committed while planning", func() error {
		if got := steps(); !slices.Equal(got, []int64{1}) {
			return fmt.Errorf("steps so far %v", got)
		}
		return nil
	})
	code, out := postReport(t, s, `{"samples": [{"job_id": "while", "step": 2, "loss": 0.9}]}`)
	must.Eq(t, 200, code, must.Sprint(out))
	must.Eq(t, []int64{1, 2}, steps())
	must.Nil(t, latestPlan(t, s), must.Sprint("no plan is committed while the algorithm plans"))

	g.release <- struct{}{}
	must.Eq(t, map[string]uint64{"while": 0}, requestJobs(g.next(t)), must.Sprint("the stale plan was dropped and the job planned"))
	g.release <- struct{}{}
	agent.WaitFor(t, 20*time.Second, "job placed", jobStatus(t, c, "while", structs.JobStatusRunning))
}

// TestLeader_DropsStalePlan: a plan made before a job was stopped or
// updated is not committed; the round is planned again on what changed.
func TestLeader_DropsStalePlan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, c *api.Client)
		want   map[string]uint64
	}{
		{"stopped", func(t *testing.T, c *api.Client) {
			must.NoError(t, errOf(c.Jobs().Stop("a", false, nil)))
		}, map[string]uint64{"b": 0}},
		{"updated", func(t *testing.T, c *api.Client) {
			_, _, err := c.Jobs().Update("a", changedDemoJob(t, "a"), nil)
			must.NoError(t, err)
		}, map[string]uint64{"a": 1, "b": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, g, _ := gatedServer(t)
			c := client(t, s)
			g.next(t)
			_, _, err := c.Jobs().Register(demoJob(t, "a"), nil)
			must.NoError(t, err)
			g.release <- struct{}{} // the first round's plan, stale
			must.Eq(t, map[string]uint64{"a": 0}, requestJobs(g.next(t)))
			g.release <- struct{}{}
			agent.WaitFor(t, 20*time.Second, "a placed", jobStatus(t, c, "a", structs.JobStatusRunning))

			_, _, err = c.Jobs().Register(demoJob(t, "b"), nil)
			must.NoError(t, err)
			g.until(t, map[string]uint64{"a": 0, "b": 0})
			before := latestPlan(t, s)
			tc.change(t, c)
			g.release <- struct{}{}
			must.Eq(t, tc.want, requestJobs(g.next(t)), must.Sprint("planned again on what changed"))
			must.Eq(t, before.Index, latestPlan(t, s).Index, must.Sprint("the stale plan was not committed"))
			g.letAll()
			agent.WaitFor(t, 20*time.Second, "b placed", jobStatus(t, c, "b", structs.JobStatusRunning))
		})
	}
}

// TestLeader_ShutdownWithPlanInFlight: neither Shutdown nor the end of
// the leader loop waits for an algorithm that has not answered.
func TestLeader_ShutdownWithPlanInFlight(t *testing.T) {
	s, g, _ := gatedServer(t)
	g.next(t)
	var done atomic.Bool
	go func() {
		s.Shutdown()
		done.Store(true)
	}()
	agent.WaitFor(t, 10*time.Second, "shutdown", func() error {
		if !done.Load() {
			return errors.New("Shutdown has not returned")
		}
		return nil
	})
}

// TestLeader_FallbackOffTheLoop: an algorithm that fails or panics,
// planning off the loop, is replaced for the round by the fallback, and
// an event says so once; the server lives on.
func TestLeader_FallbackOffTheLoop(t *testing.T) {
	for _, tc := range []struct {
		name, why string
		set       func(*gated)
	}{
		{"error", "gated: failing as asked", func(g *gated) { g.fail.Store(true) }},
		{"panic", `algorithm "gated" panicked in Plan: gated: panicking as asked`, func(g *gated) { g.panics.Store(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, g, _ := gatedServer(t)
			c := client(t, s)
			tc.set(g)
			g.next(t)
			_, _, err := c.Jobs().Register(demoJob(t, "demo"), nil)
			must.NoError(t, err)
			g.release <- struct{}{} // stale: the job came
			g.until(t, map[string]uint64{"demo": 0})
			g.release <- struct{}{}
			agent.WaitFor(t, 20*time.Second, "a plan by the fallback", func() error {
				if p := latestPlan(t, s); p == nil || p.Algorithm != "optimus" {
					return fmt.Errorf("latest plan %+v", p)
				}
				return nil
			})
			events, _, err := c.Events("", nil)
			must.NoError(t, err)
			var fallbacks []string
			for _, e := range events {
				if e.Type == structs.EventAlgorithmFallback {
					fallbacks = append(fallbacks, e.Message)
				}
			}
			must.SliceLen(t, 1, fallbacks)
			must.StrContains(t, fallbacks[0], "algorithm gated failed, planned with optimus")
			must.StrContains(t, fallbacks[0], tc.why)
		})
	}
}
