package simulate

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/drivers/sim"
)

// Assumption names of `caravan sim -assume`.
const (
	// AssumeCaravan is Caravan's own simulator: jobs pay for their
	// profiling (sim.Config.ProfileTime per configuration) and for every
	// start, rescale or move (the -restart-penalty), the server plans at
	// every arrival and completion as well as every interval, and Pollux
	// jobs are bounded as LoadPolluxWorkload says.
	AssumeCaravan = "caravan"
	// AssumePollux is the Pollux artifact's simulator (OSDI'21,
	// simulator.py), for comparisons with its published numbers:
	// profiling is free, every (re)allocation costs a fixed 30 s, the
	// server plans only every 60 s (a job that arrives waits for the next
	// round, and GPUs a job frees idle until it), and Pollux jobs are
	// bounded as its Optimus and Tiresias run them (sim.Workload.
	// ArtifactBounds). The job model is the same under both
	// (sim.PolluxTruth).
	AssumePollux = "pollux-artifact"
)

// PolluxRestartDelay is the delay the Pollux artifact charges a job on
// every allocation that changes its GPUs, its first included
// (Job.reallocate's rescale_time).
const PolluxRestartDelay = 30 * time.Second

// PolluxInterval is the Pollux artifact's scheduling interval.
const PolluxInterval = time.Minute

// Assumptions maps each -assume name to what it sets: it adjusts the
// run's options and the workload, once, before the policies run.
var Assumptions = map[string]func(*Options, *sim.Workload){
	AssumeCaravan: func(*Options, *sim.Workload) {},
	AssumePollux: func(o *Options, wl *sim.Workload) {
		o.Cluster.ProfileTime = 0
		o.Cluster.RestartPenalty = PolluxRestartDelay
		o.Interval = PolluxInterval
		o.PeriodicRounds = true
		wl.ArtifactBounds()
	},
}

// AssumedClusters are the clusters of the assumptions that bring one,
// used when the user names no cluster (Setup.Cluster "").
var AssumedClusters = map[string]string{}

// Assume applies the named assumptions to opts and wl.
func Assume(name string, opts *Options, wl *sim.Workload) error {
	f, ok := Assumptions[name]
	if !ok {
		return fmt.Errorf("unknown assumptions %q; the assumptions are %s", name, strings.Join(slices.Sorted(maps.Keys(Assumptions)), ", "))
	}
	f(opts, wl)
	return nil
}
