//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/plugins/loader"
	"github.com/shoenig/test/must"
)

// TestCaravanNomad_SwapAlgorithms swaps the scheduling algorithm of a
// running caravan agent while a trainer job runs on Nomad: drf → the
// example plugin (an external process the agent launched) → optimus. Each
// takes over at the next round, nothing restarts, and the job completes.
func TestCaravanNomad_SwapAlgorithms(t *testing.T) {
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{})
	dumpOnFailure(t, nc)
	trainer := buildTrainer(t)
	random := loader.BuildPlugin(t, "examples/plugin-random")
	body := nomadAgentBody(nc, t.TempDir(), "drf") + fmt.Sprintf(`
plugin_dir = %q
plugin "random" {
  path   = "plugin-random"
  config = { seed = 3 }
}
`, filepath.Dir(random))
	cl := startCaravans(t, agent.BuildCaravan(t), 1, body)
	c := cl.clients[cl.waitLeader(t, "")]
	waitNodes(t, c, 3, 4)

	plugins, _, err := c.Plugins(nil)
	must.NoError(t, err)
	var ext *api.PluginStatus
	for _, p := range plugins {
		if p.Name == "random" {
			ext = p
		}
	}
	must.NotNil(t, ext)
	must.Eq(t, api.PluginHealthy, ext.Health)
	must.Eq(t, random, ext.Path)
	t.Logf("plugin start on the agent: %.1f ms", ext.StartSeconds*1000)

	_, _, err = c.Jobs().Register(trainerJob("a", trainer), nil)
	must.NoError(t, err)
	waitEvent(t, c, "a", api.EventTasksRunning, 1, 2*time.Minute)
	waitStep(t, c, "a", 10)
	for _, name := range []string{"random", "optimus"} {
		_, err := c.Operator().SetSchedulerConfig(&api.SchedulerConfigRequest{Algorithm: name}, nil)
		must.NoError(t, err)
		cfg, _, err := c.Operator().SchedulerConfig(nil)
		must.NoError(t, err)
		agent.WaitFor(t, time.Minute, "a plan by "+name, func() error {
			p, _, err := c.LatestPlan(nil)
			switch {
			case err != nil:
				return err
			case p.Index <= cfg.ModifyIndex || p.Algorithm != name:
				return fmt.Errorf("latest plan %d by %s", p.Index, p.Algorithm)
			}
			return nil
		})
		// A swap may rescale the job: it runs, or is being rescaled.
		if err := jobIs(c, "a", api.JobStatusRunning)(); err != nil {
			must.NoError(t, jobIs(c, "a", api.JobStatusRescaling)())
		}
	}
	agent.WaitFor(t, 4*time.Minute, "job a complete", jobIs(c, "a", api.JobStatusComplete))
	must.SliceEmpty(t, events(t, c, "", api.EventAlgorithmFallback))
}
