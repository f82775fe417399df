package drf

import (
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestDRF_CruiseSplit: by default a job grows one server per worker; with
// split = "cruise" a measured job grows the servers Cruise's cost model
// asks for, √(K/A) per worker (here K/A = 1/4: one per two workers), and
// an unmeasured one as by default.
func TestDRF_CruiseSplit(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 4, 64000, 262144, 0)
	measured := h.AddJob(planner.MockJob("measured", structs.Bounds{Min: 1, Max: 8}, structs.Bounds{Min: 1, Max: 8}), nil)
	measured.Subtasks = &planner.Subtasks{CPU: 4, Net: 1, PS: 1, Workers: 1}
	h.AddJob(planner.MockJob("fresh", structs.Bounds{Min: 1, Max: 8}, structs.Bounds{Min: 1, Max: 8}), nil)
	req := h.Request()

	ps := func(alg planner.Algorithm) map[string][2]int {
		dec, err := alg.Plan(req)
		must.NoError(t, err)
		must.NoError(t, planner.CheckDecision(req, dec))
		out := map[string][2]int{}
		for _, p := range dec.Placements {
			out[p.JobID] = [2]int{p.NumPS, p.NumWorkers}
		}
		return out
	}
	must.Eq(t, map[string][2]int{"measured": {8, 8}, "fresh": {8, 8}}, ps(New()))

	d := New().(*DRF)
	must.NoError(t, d.SetConfig(map[string]string{"split": "cruise"}))
	must.Eq(t, map[string][2]int{"measured": {4, 8}, "fresh": {8, 8}}, ps(d))

	must.ErrorContains(t, d.SetConfig(map[string]string{"split": "odd"}), `split = "odd": use "even" or "cruise"`)
	must.ErrorContains(t, d.SetConfig(map[string]string{"x": "1"}), `unknown option "x"`)
	must.True(t, d.cruise, must.Sprint("a refused configuration changes nothing"))
}
