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
	// AssumeSia is the Sia artifact's simulator (SOSP'23,
	// sia-simulator/), for comparisons with its published numbers: its
	// Heterogeneous cluster when the user names none (AssumedClusters),
	// rounds only at multiples of the interval (the caller's: SiaInterval
	// for Sia and Pollux, 360 s for Gavel), profiling free (its jobs are seeded with
	// the traces' profiles), each model's checkpoint-restore delay on
	// every (re)allocation (SiaRestartDelays) and each model's measured
	// step slowed by its calibration factor (SiaSlowdowns). Its per-type
	// batch limits are part of the truth under any assumptions
	// (sim.TypeMaxLocalBatch).
	AssumeSia = "sia-artifact"
)

// SiaCluster is the Sia artifact's Heterogeneous setting: 6 t4 nodes of
// 4 GPUs, 3 rtx and 2 a100 nodes of 8, 64 GPUs
// (sia-simulator/simulator_config.py, cluster_nnodes {"aws": 6,
// "dgx-ext": 2, "rtx": 3}; cluster_ngpus_per_node).
const SiaCluster = "6xt4,3xrtx,2xa100"

// SiaInterval is the Sia artifact's scheduling interval for Sia and
// Pollux (sia-simulator/run_experiment.sh and multi_simulator.py's
// --interval default: 60 s; Gavel runs at 360 s).
const SiaInterval = time.Minute

// SiaRestartDelays are the Sia artifact's checkpoint-restore delays per
// model, charged on every allocation that changes a job's GPUs, its
// first included (sia-simulator/applications.py, Application.__init__'s
// rescale_time; job.py reallocate and migrate). gpt_pmp, in no embedded
// workload, takes the file's default, 30 s.
var SiaRestartDelays = map[string]time.Duration{
	"cifar10":     50 * time.Second,
	"deepspeech2": 25 * time.Second,
	"bert":        120 * time.Second,
	"yolov3":      80 * time.Second,
	"imagenet":    250 * time.Second,
	"ncf":         15 * time.Second,
	"gpt_pmp":     30 * time.Second,
}

// SiaSlowdowns are the Sia artifact's calibration factors: each model's
// measured step is this many times slower in its simulator than the
// traces say, fitted to its real runs (sia-simulator/simulator_config.py
// SLOWDOWNS; job.py divides goodput by it).
var SiaSlowdowns = map[string]float64{
	"cifar10": 1.8, "imagenet": 1.2, "yolov3": 1.2, "bert": 1.2, "deepspeech2": 1.2, "ncf": 1.5, "gpt_pmp": 1.0,
}

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
	AssumeSia: func(o *Options, wl *sim.Workload) {
		o.Cluster.ProfileTime, o.Cluster.TypeProfileSteps = 0, 0
		o.Cluster.ModelRestartPenalty = SiaRestartDelays
		o.PeriodicRounds = true
		wl.Calibrate(SiaSlowdowns)
	},
}

// AssumedClusters are the clusters of the assumptions that bring one,
// used when the user names no cluster (Setup.Cluster "").
var AssumedClusters = map[string]string{AssumeSia: SiaCluster}

// Assume applies the named assumptions to opts and wl.
func Assume(name string, opts *Options, wl *sim.Workload) error {
	f, ok := Assumptions[name]
	if !ok {
		return fmt.Errorf("unknown assumptions %q; the assumptions are %s", name, strings.Join(slices.Sorted(maps.Keys(Assumptions)), ", "))
	}
	f(opts, wl)
	return nil
}
