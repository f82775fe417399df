package server

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/plugins/loader"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// pluginServer runs a server on the simulator with the example plugin
// ("random") and the misbehaving test plugin ("misbehave"), with three
// demo jobs running. (A binary that does not match its checksum never
// loads: plugins/loader's tests.)
func pluginServer(t *testing.T) *api.Client {
	random := loader.BuildPlugin(t, "examples/plugin-random")
	l, err := loader.New(loader.Config{
		Builtins: builtin.Algorithms, Logger: testLogger(t),
		Plugins: []*loader.PluginConfig{
			{Name: "random", Path: random},
			{Name: "misbehave", Path: loader.BuildPlugin(t, "plugins/loader/internal/misbehave")},
		},
		PlanTimeout: time.Second, Backoff: 100 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	})
	must.NoError(t, err)
	t.Cleanup(l.Shutdown)
	cfg := TestConfig(t, simDriver(t, 20))
	cfg.Algorithms = l
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)
	for i := range 3 {
		_, _, err := c.Jobs().Register(demoJob(t, fmt.Sprintf("demo-%d", i)), nil)
		must.NoError(t, err)
	}
	return c
}

// setAlgorithm commits a scheduler configuration and returns its index.
func setAlgorithm(t *testing.T, c *api.Client, name string, options map[string]string) uint64 {
	t.Helper()
	must.NoError(t, errOf(c.Operator().SetSchedulerConfig(&api.SchedulerConfigRequest{Algorithm: name, Options: options}, nil)))
	cfg, _, err := c.Operator().SchedulerConfig(nil)
	must.NoError(t, err)
	must.Eq(t, name, cfg.Algorithm)
	return cfg.ModifyIndex
}

// waitPlan waits for a plan committed after index by algorithm, checks it
// against the nodes and jobs, and returns it.
func waitPlan(t *testing.T, c *api.Client, after uint64, algorithm string) *structs.Plan {
	t.Helper()
	var plan *structs.Plan
	agent.WaitFor(t, 20*time.Second, "a plan by "+algorithm, func() error {
		p, _, err := c.LatestPlan(nil)
		switch {
		case err != nil:
			return err
		case p.Index <= after || p.Algorithm != algorithm:
			return fmt.Errorf("latest plan %d by %s", p.Index, p.Algorithm)
		}
		plan = recode[*structs.Plan](t, p)
		return nil
	})
	nodes, _, err := c.Nodes(nil)
	must.NoError(t, err)
	req := &planner.Request{Nodes: recode[[]*structs.Node](t, nodes)}
	for _, p := range plan.Placements {
		j, _, err := c.Jobs().Info(p.JobID, nil)
		must.NoError(t, err)
		req.Jobs = append(req.Jobs, &planner.Job{Job: recode[*structs.Job](t, j)})
	}
	must.NoError(t, planner.CheckDecision(req, &planner.Decision{Placements: plan.Placements}))
	return plan
}

// TestLeader_SwapAlgorithms swaps algorithms at run time while jobs run
// in the simulator: optimus → drf → an external plugin → optimus. Each
// takes over at the next round, and every plan after a swap is made by
// the algorithm in force and is valid.
func TestLeader_SwapAlgorithms(t *testing.T) {
	c := pluginServer(t)
	waitPlan(t, c, 0, "optimus")
	for _, name := range []string{"drf", "random", "optimus"} {
		waitPlan(t, c, setAlgorithm(t, c, name, nil), name)
	}
	jobs, _, err := c.Jobs().List(nil)
	must.NoError(t, err)
	for _, j := range jobs {
		must.NotEq(t, structs.JobStatusFailed, j.Status)
	}
	plugins, _, err := c.Plugins(nil)
	must.NoError(t, err)
	must.SliceLen(t, len(builtin.Algorithms)+2, plugins)
}

// TestLeader_PluginFailures: a plugin that over-allocates, places a job
// that does not exist, panics or hangs is not applied: the round plans
// with the last algorithm that worked, an event says why, and the jobs
// keep running. Options a plugin refuses are refused.
func TestLeader_PluginFailures(t *testing.T) {
	c := pluginServer(t)
	waitPlan(t, c, 0, "optimus")

	_, err := c.Operator().SetSchedulerConfig(&api.SchedulerConfigRequest{Algorithm: "misbehave", Options: map[string]string{"mode": "sideways"}}, nil)
	must.ErrorContains(t, err, `mode "sideways" is not one of`)

	for _, tc := range []struct{ mode, why string }{
		{"overallocate", "invalid decision"},
		{"unknown-job", `job "ghost" in namespace "default" is not in the request`},
		{"panic", "plugin connection lost"},
		{"hang", "no answer within 1s"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			before, _, err := c.Events("", nil)
			must.NoError(t, err)
			index := setAlgorithm(t, c, "misbehave", map[string]string{"mode": tc.mode})
			waitPlan(t, c, index, "optimus")
			// The plugin may still be down after the previous mode made it
			// crash: rounds in its backoff fall back saying so, and the
			// mode's own failure follows once it has restarted.
			agent.WaitFor(t, 10*time.Second, "a fallback event saying "+tc.why, func() error {
				events, _, err := c.Events("", nil)
				if err != nil {
					return err
				}
				for _, e := range events[len(before):] {
					if e.Type != structs.EventAlgorithmFallback {
						continue
					}
					must.StrContains(t, e.Message, "algorithm misbehave failed, planned with optimus")
					if strings.Contains(e.Message, tc.why) {
						return nil
					}
					must.StrContains(t, e.Message, "plugin unavailable")
				}
				return fmt.Errorf("no fallback event saying %q", tc.why)
			})
		})
	}
	jobs, _, err := c.Jobs().List(nil)
	must.NoError(t, err)
	for _, j := range jobs {
		must.NotEq(t, structs.JobStatusFailed, j.Status)
	}
}

// panicking is a built-in whose Plan always panics.
type panicking struct{}

func (panicking) Name() string { return "panicking" }
func (panicking) Plan(*planner.Request) (*planner.Decision, error) {
	panic("panicking: as asked")
}

// TestLeader_BuiltinPanics: a built-in that panics does not take the
// server down: the round plans with the last algorithm that worked, and
// an event names the algorithm and the panic.
func TestLeader_BuiltinPanics(t *testing.T) {
	builtins := maps.Clone(builtin.Algorithms)
	builtins["panicking"] = func() planner.Algorithm { return panicking{} }
	l, err := loader.New(loader.Config{Builtins: builtins, Logger: testLogger(t)})
	must.NoError(t, err)
	cfg := TestConfig(t, simDriver(t, 20))
	cfg.Algorithms = l
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)
	_, _, err = c.Jobs().Register(demoJob(t, "demo"), nil)
	must.NoError(t, err)
	waitPlan(t, c, 0, "optimus")

	waitPlan(t, c, setAlgorithm(t, c, "panicking", nil), "optimus")
	var fallback *api.Event
	agent.WaitFor(t, 10*time.Second, "a fallback event", func() error {
		events, _, err := c.Events("", nil)
		if err != nil {
			return err
		}
		for _, e := range events {
			if e.Type == structs.EventAlgorithmFallback {
				fallback = e
				return nil
			}
		}
		return fmt.Errorf("no fallback event")
	})
	must.StrContains(t, fallback.Message, "algorithm panicking failed, planned with optimus")
	must.StrContains(t, fallback.Message, `algorithm "panicking" panicked in Plan: panicking: as asked`)
}
