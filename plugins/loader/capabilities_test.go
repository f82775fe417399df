package loader

import (
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/specon"
	"github.com/shoenig/test/must"
)

// TestLoader_PluginCapabilities: the specon plugin binary declares, under
// each handle's options, what the built-in declares in-process under the
// same options, also when two handles with different options share its
// process; the status shows the declaration last made.
func TestLoader_PluginCapabilities(t *testing.T) {
	bin := BuildPlugin(t, "plugins/builtin/algorithm/specon")
	l := newLoader(t, &syncBuffer{}, &PluginConfig{Name: "ext-specon", Path: bin})
	for _, options := range []map[string]string{nil, {"base": "pollux"}, {"base": "optimus"}, {"base": "tetris"}} {
		ext, err := l.Algorithm("ext-specon", options)
		must.NoError(t, err)
		in, err := l.Algorithm(specon.Name, options)
		must.NoError(t, err)
		must.Eq(t, planner.CapabilitiesOf(in), planner.CapabilitiesOf(ext), must.Sprintf("options %v", options))
	}

	fixed, err := l.Algorithm("ext-specon", nil)
	must.NoError(t, err)
	batch, err := l.Algorithm("ext-specon", map[string]string{"base": "pollux"})
	must.NoError(t, err)
	must.True(t, planner.CapabilitiesOf(fixed).FixedSize)
	must.True(t, planner.CapabilitiesOf(batch).ChoosesBatch)
	must.False(t, planner.CapabilitiesOf(batch).FixedSize)

	// A plan under the first handle's options sets them again; each
	// handle keeps its own declaration, and the status follows the
	// options last set.
	_, err = fixed.Plan(request(t))
	must.NoError(t, err)
	must.True(t, planner.CapabilitiesOf(fixed).FixedSize)
	must.True(t, planner.CapabilitiesOf(batch).ChoosesBatch)
	optimus, err := l.Algorithm("ext-specon", map[string]string{"base": "optimus"})
	must.NoError(t, err)
	must.True(t, optimus.(planner.ModelDriven).SpeedModels())
	must.True(t, status(l, "ext-specon").SpeedModels)
	_, err = fixed.Plan(request(t))
	must.NoError(t, err)
	must.False(t, status(l, "ext-specon").SpeedModels)
}
