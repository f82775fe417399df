package simulate

import (
	"testing"
	"time"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/drf"
	"github.com/caravan-sched/caravan/planner/fifo"
	"github.com/caravan-sched/caravan/planner/optimus"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestResourceUtil: eq. 1 summed over CPU, memory and GPUs, weighted by
// time, over the makespan and its first 5 hours.
func TestResourceUtil(t *testing.T) {
	capacity := []float64{1000, 2000, 4}
	h := 3600.0
	allocs := []sim.AllocChange{
		// a holds half the CPU and a quarter of the memory for 2 h.
		{Time: 0, JobID: "a", CPU: 500, MemoryMB: 500},
		// b holds every GPU from 2 h to 10 h.
		{Time: 2 * h, JobID: "a"},
		{Time: 2 * h, JobID: "b", GPUs: 4},
		{Time: 10 * h, JobID: "b"},
	}
	whole, early := resourceUtil(allocs, capacity, 0, 10*h)
	must.InDelta(t, (0.75*2+1*8)/10, whole, 1e-12)
	must.InDelta(t, (0.75*2+1*3)/5, early, 1e-12)

	whole, early = resourceUtil(allocs, capacity, 0, 4*h)
	must.InDelta(t, (0.75*2+1*2)/4, whole, 1e-12)
	must.InDelta(t, whole, early, 1e-12, must.Sprint("a makespan under 5 hours is all early"))
}

// TestPlanTimes: the wrapper passes the name, options and capability
// through, refuses options to an algorithm that takes none, and times
// every plan.
func TestPlanTimes(t *testing.T) {
	p := &planTimes{alg: optimus.New()}
	must.Eq(t, "optimus", p.Name())
	must.True(t, p.SpeedModels())
	must.ErrorContains(t, (&planTimes{alg: fifo.New()}).SetConfig(map[string]string{"x": "1"}), `algorithm "fifo" takes no options`)
	must.ErrorContains(t, (&planTimes{alg: drf.New()}).SetConfig(map[string]string{"x": "1"}), `unknown option "x"`)
	must.NoError(t, (&planTimes{alg: drf.New()}).SetConfig(nil))
	must.False(t, (&planTimes{alg: drf.New()}).SpeedModels())

	n, _ := p.stats()
	must.Zero(t, n)
	// A clock on which the k-th plan takes k×100 ms, whatever the load:
	// each plan reads it twice.
	var reads int
	p.now = func() time.Time {
		reads++
		k := (reads + 1) / 2 // the plan this read is of
		if reads%2 == 1 {
			return time.Unix(0, 0)
		}
		return time.Unix(0, 0).Add(time.Duration(k) * 100 * time.Millisecond)
	}
	h := planner.NewHarness(t)
	h.AddNodes("n", 2, 8000, 16384, 2)
	h.AddJob(planner.MockJob("j", structs.Bounds{Min: 1, Max: 2}, structs.Bounds{Min: 1, Max: 4}), planner.MockSpeed())
	for range 20 {
		_, err := p.Plan(h.Request())
		must.NoError(t, err)
	}
	n, times := p.stats()
	must.Eq(t, 20, n)
	must.Eq(t, 40, reads, must.Sprint("two clock reads a plan"))
	must.Eq(t, PlanTime{P50S: 1.0, P95S: 1.9, MaxS: 2.0}, times,
		must.Sprint("seconds: the 10th, 19th and 20th of 20 plans of 0.1 to 2 s"))
}
