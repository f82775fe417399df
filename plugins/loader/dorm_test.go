package loader

import (
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/dorm"
	"github.com/shoenig/test/must"
)

// TestLoader_DormPlugin: the dorm plugin binary, which runs glpsol itself,
// plans as the built-in does in-process, takes the paper's presets, and
// reports a missing solver when it is configured, not at a round.
func TestLoader_DormPlugin(t *testing.T) {
	bin := BuildPlugin(t, "plugins/builtin/algorithm/dorm")
	l := newLoader(t, &syncBuffer{}, &PluginConfig{Name: "ext-dorm", Path: bin})
	options := map[string]string{"preset": "dorm-1"}
	ext, err := l.Algorithm("ext-dorm", options)
	must.NoError(t, err)
	in, err := l.Algorithm(dorm.Name, options)
	must.NoError(t, err)

	req := request(t)
	want, err := in.Plan(req)
	must.NoError(t, err)
	must.NoError(t, planner.CheckDecision(req, want))
	got, err := ext.Plan(req)
	must.NoError(t, err)
	must.Eq(t, want, got)
	for _, p := range got.Placements {
		must.StrHasPrefix(t, "dorm: ", p.Reason)
	}

	_, err = l.Algorithm("ext-dorm", map[string]string{"glpsol": "/nonexistent/glpsol"})
	must.ErrorContains(t, err, "install glpk-utils (make tools)")
	_, err = l.Algorithm(dorm.Name, map[string]string{"glpsol": "/nonexistent/glpsol"})
	must.ErrorContains(t, err, "install glpk-utils (make tools)")
}
