package simulate

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner"
)

// EarlyWindow is the span from the first arrival over which
// Summary.ResourceUtilEarly is averaged: the first 5 hours, over which
// Dorm's §V-B1 reports its utilisation gain.
const EarlyWindow = 5 * time.Hour

// resourceUtil averages Dorm's eq. 1 utilisation, the sum over CPU,
// memory and GPUs of the share of the cluster's capacity that jobs hold
// (0 to 3, or 2 without GPUs), over [from, to] and over [from, from +
// EarlyWindow] (clipped to to). allocs are in time order; capacity is
// capacityOf's.
func resourceUtil(allocs []sim.AllocChange, capacity []float64, from, to float64) (whole, early float64) {
	held := map[string]sim.AllocChange{}
	var cpu, mem, gpus float64
	util := func() float64 {
		u := 0.0
		for k, v := range []float64{cpu, mem, gpus} {
			if capacity[k] > 0 {
				u += v / capacity[k]
			}
		}
		return u
	}
	earlyEnd := min(to, from+EarlyWindow.Seconds())
	var area, earlyArea float64
	last := from
	advance := func(t float64) {
		t = min(max(t, from), to)
		if t <= last {
			return
		}
		u := util()
		area += u * (t - last)
		if last < earlyEnd {
			earlyArea += u * (min(t, earlyEnd) - last)
		}
		last = t
	}
	for _, a := range allocs {
		advance(a.Time)
		old := held[a.JobID]
		cpu += float64(a.CPU - old.CPU)
		mem += float64(a.MemoryMB - old.MemoryMB)
		gpus += float64(a.GPUs - old.GPUs)
		held[a.JobID] = a
	}
	advance(to)
	if to > from {
		whole = area / (to - from)
	}
	if earlyEnd > from {
		early = earlyArea / (earlyEnd - from)
	}
	return whole, early
}

// planTimes records the wall time of every Plan of the algorithm it
// wraps, which it otherwise passes through: name, options and capability.
type planTimes struct {
	alg planner.Algorithm
	// now is the clock the times are read on; nil is time.Now.
	now   func() time.Time
	mu    sync.Mutex
	times []time.Duration
}

var (
	_ planner.Algorithm    = (*planTimes)(nil)
	_ planner.Configurable = (*planTimes)(nil)
	_ planner.ModelDriven  = (*planTimes)(nil)
	_ planner.Describer    = (*planTimes)(nil)
)

func (p *planTimes) Name() string { return p.alg.Name() }

func (p *planTimes) Plan(req *planner.Request) (*planner.Decision, error) {
	now := p.now
	if now == nil {
		now = time.Now
	}
	start := now()
	dec, err := p.alg.Plan(req)
	took := now().Sub(start)
	p.mu.Lock()
	p.times = append(p.times, took)
	p.mu.Unlock()
	return dec, err
}

// SetConfig passes options on, and refuses them for an algorithm that
// takes none, as plugins/algorithm.FromPlanner does.
func (p *planTimes) SetConfig(options map[string]string) error { return passConfig(p.alg, options) }

// passConfig sets alg's options, or refuses them when alg takes none.
func passConfig(alg planner.Algorithm, options map[string]string) error {
	if c, ok := alg.(planner.Configurable); ok {
		return c.SetConfig(options)
	}
	if len(options) > 0 {
		return fmt.Errorf("algorithm %q takes no options", alg.Name())
	}
	return nil
}

// SpeedModels is the algorithm's, false when it does not say.
func (p *planTimes) SpeedModels() bool { return planner.CapabilitiesOf(p.alg).SpeedModels }

// Capabilities are the algorithm's (planner.CapabilitiesOf).
func (p *planTimes) Capabilities() planner.Capabilities { return planner.CapabilitiesOf(p.alg) }

// stats returns how many plans ran and their times: the median, the
// 95th percentile (nearest rank) and the longest.
func (p *planTimes) stats() (int, PlanTime) {
	p.mu.Lock()
	times := slices.Clone(p.times)
	p.mu.Unlock()
	n := len(times)
	if n == 0 {
		return 0, PlanTime{}
	}
	slices.Sort(times)
	return n, PlanTime{
		P50S: times[(n-1)/2].Seconds(),
		P95S: times[(95*n+99)/100-1].Seconds(),
		MaxS: times[n-1].Seconds(),
	}
}
