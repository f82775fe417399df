package experiment

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/simulate"
	"github.com/shoenig/test/must"
)

// TestExperiments_Short runs every experiment's short version and checks
// that each metric lies on the side of its neutral value the experiment
// expects (Metric.Direction): the direction of each result, not its
// value. The race detector slows the simulations tenfold, so `make test`
// runs this test in a step of its own, without it.
func TestExperiments_Short(t *testing.T) {
	if raceDetector {
		t.Skip("run without -race: make test's experiments step")
	}
	all := All()
	must.SliceNotEmpty(t, all)
	for _, e := range all {
		t.Run(e.Name, func(t *testing.T) {
			for _, r := range e.Runs {
				must.True(t, r.Short != "" || r.ShortLimit > 0, must.Sprintf("run %s has no short version", r.Name))
			}
			o, err := Execute(e, Options{Short: true})
			must.NoError(t, err)
			must.SliceEmpty(t, o.Warnings, must.Sprint("every policy fits its run's workload"))
			t.Logf("\n%s", o.Format(""))
			for _, v := range o.Values {
				must.True(t, v.DirectionHolds(), must.Sprintf("%s: %s, expected on the %+d side of %g", v.Metric.Name, formatValue(v.Mean, v.Metric.Unit), v.Metric.direction(), v.Metric.neutral()))
			}
		})
	}
}

// TestExperiments_Wellformed checks what every experiment declares: a
// name, a paper, seeds, runs with known policies and metrics that name
// them.
func TestExperiments_Wellformed(t *testing.T) {
	for _, e := range All() {
		must.NotEq(t, "", e.Paper, must.Sprint(e.Name))
		must.Positive(t, e.Version, must.Sprint(e.Name))
		must.SliceNotEmpty(t, e.Seeds, must.Sprint(e.Name))
		must.SliceNotEmpty(t, e.Metrics, must.Sprint(e.Name))
		for _, r := range e.Runs {
			for _, p := range r.Policies {
				spec, err := simulate.ParsePolicy(p)
				must.NoError(t, err)
				_, ok := simulate.Policy(spec.Name)
				must.True(t, ok, must.Sprintf("%s: unknown policy %q", e.Name, p))
			}
		}
		for _, m := range e.Metrics {
			must.NotNil(t, m.Value, must.Sprint(e.Name, ": ", m.Name))
			must.SliceContains(t, []string{"×", "%", ""}, m.Unit)
		}
	}
}

// TestMetric_MetAndDirection pins the verdicts: met within a tenth of the
// paper's distance from the neutral value, in the better direction.
func TestMetric_MetAndDirection(t *testing.T) {
	speedup := &Metric{Paper: 2.39, Unit: "×", Higher: true}
	must.True(t, speedup.Met(2.5))
	must.True(t, speedup.Met(2.26))
	must.False(t, speedup.Met(2.2))
	must.Eq(t, 1, speedup.direction())
	must.True(t, Value{Metric: speedup, Mean: 1.1}.DirectionHolds())
	must.False(t, Value{Metric: speedup, Mean: 0.97}.DirectionHolds())

	change := &Metric{Paper: -14.7, Unit: "%"}
	must.True(t, change.Met(-14))
	must.False(t, change.Met(-12))
	must.Eq(t, -1, change.direction())
	must.False(t, Value{Metric: change, Mean: 1.5}.DirectionHolds())

	missed := &Metric{Paper: -42, Unit: "%", Direction: 1}
	must.True(t, Value{Metric: missed, Mean: 2}.DirectionHolds())
	must.False(t, Value{Metric: missed, Mean: -2}.DirectionHolds())

	level := &Metric{Paper: 93.2, Unit: "%", Higher: true, Level: true}
	must.True(t, level.Met(84))
	must.False(t, level.Met(83))

	// A fidelity target: within 15% either way, better or worse.
	within := &Metric{Paper: 0.7, Level: true, Within: 0.15}
	must.True(t, within.Met(0.8))
	must.True(t, within.Met(0.6))
	must.False(t, within.Met(0.81))
	must.False(t, within.Met(0.59), must.Sprint("better than the paper by more than 15% does not reproduce it"))

	// Caravan's own target, strictly below 1.
	target := &Metric{Paper: 1, Unit: "×", Target: true}
	must.True(t, target.Met(0.99))
	must.False(t, target.Met(1))
	must.True(t, Value{Metric: target, Mean: 1.2}.DirectionHolds(), must.Sprint("not checked in the short version"))
}

// TestTruthsIndependent fails if the simulator, where every workload's
// ground truth lives, depends on any scheduling algorithm, on the models
// the server fits, or on the server: a truth built from an algorithm's
// own model would score the algorithm against itself.
func TestTruthsIndependent(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/caravan-sched/caravan/drivers/sim").Output()
	must.NoError(t, err)
	deps := strings.Fields(string(out))
	must.SliceContains(t, deps, "github.com/caravan-sched/caravan/structs", must.Sprint("the list is of drivers/sim's dependencies"))
	for _, d := range deps {
		for _, banned := range []string{"/planner", "/plugins", "/server", "/simulate"} {
			must.False(t, strings.HasPrefix(d, "github.com/caravan-sched/caravan"+banned), must.Sprintf("drivers/sim depends on %s", d))
		}
	}
}
