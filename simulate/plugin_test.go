package simulate

import (
	"testing"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/plugins/loader"
	"github.com/shoenig/test/must"
)

// undeclared is an algorithm that hides what the one it wraps declares.
type undeclared struct{ planner.Algorithm }

// TestRun_PluginLikeBuiltin: an external go-plugin algorithm runs in the
// simulator as the built-in with the same declaration does, whatever its
// name: the plugin binaries of fifo (FixedSize) and pollux (ChoosesBatch)
// under other names run the same jobs, job by job, as the built-ins. The
// declaration is what makes the difference: the same built-in declaring
// nothing runs other jobs on the same workload.
func TestRun_PluginLikeBuiltin(t *testing.T) {
	wl := workload6(t, 12)
	l, err := loader.New(loader.Config{Plugins: []*loader.PluginConfig{
		{Name: "ext-fifo", Path: loader.BuildPlugin(t, "plugins/builtin/algorithm/fifo")},
		{Name: "ext-pollux", Path: loader.BuildPlugin(t, "plugins/builtin/algorithm/pollux")},
	}})
	must.NoError(t, err)
	t.Cleanup(l.Shutdown)

	cases := []struct {
		builtin, plugin string
		declares        func(planner.Capabilities) bool
	}{
		{"fifo", "ext-fifo", func(c planner.Capabilities) bool { return c.FixedSize }},
		{"pollux", "ext-pollux", func(c planner.Capabilities) bool { return c.ChoosesBatch }},
	}
	for _, tc := range cases {
		t.Run(tc.plugin, func(t *testing.T) {
			ext, err := l.Algorithm(tc.plugin, nil)
			must.NoError(t, err)
			must.Eq(t, tc.plugin, ext.Name())
			must.True(t, tc.declares(planner.CapabilitiesOf(ext)))

			opts := Options{Cluster: sim.DefaultConfig()}
			want, err := Run(wl, builtin.Algorithms[tc.builtin](), opts)
			must.NoError(t, err)
			got, err := Run(wl, ext, opts)
			must.NoError(t, err)
			must.Eq(t, tc.plugin, got.Policy)
			must.Eq(t, want.Jobs, got.Jobs)
			must.Eq(t, want.Summary, got.Summary)

			bare, err := Run(wl, undeclared{builtin.Algorithms[tc.builtin]()}, opts)
			must.NoError(t, err)
			must.NotEq(t, want.Jobs, bare.Jobs, must.Sprint("the workload runs other jobs without the declaration"))
		})
	}
}
