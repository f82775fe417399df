package server

import (
	"context"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
)

// Driver enacts committed plans on a cluster and reports what runs there.
// drivers/sim and drivers/nomad satisfy it without importing this package.
// Only the leader calls a driver, from one goroutine at a time.
type Driver interface {
	// Nodes returns the cluster's nodes as they are now.
	Nodes(ctx context.Context) ([]*structs.Node, error)

	// Enact makes the cluster run exactly plan. jobs holds the spec of every
	// job the plan names. A job the driver runs that the plan does not name
	// is stopped. Enacting the same plan twice changes nothing, so a new
	// leader reconciles by enacting the last committed plan. An error means
	// the plan was not (entirely) applied; what runs is then whatever Status
	// reports.
	Enact(ctx context.Context, plan *structs.Plan, jobs []*structs.Job) error

	// Status reports every job the driver runs or ran since it started.
	Status(ctx context.Context) ([]*structs.JobReport, error)
}

// MetricsSource delivers trainers' samples. Samples returns the samples
// reported after cursor and the cursor to pass next time; cursor 0 means
// from the oldest sample still held. A source may drop samples older than
// the last cursor passed to it. A source with a method Run(ctx) gathers in
// the background: the server runs it while it leads.
type MetricsSource interface {
	Samples(ctx context.Context, cursor uint64) ([]structs.Sample, uint64, error)
}

// Algorithms resolves the algorithm a scheduler configuration names;
// plugins/loader's Loader is one.
type Algorithms interface {
	// Algorithm returns the algorithm called name, configured with
	// options, or an error naming what is wrong.
	Algorithm(name string, options map[string]string) (planner.Algorithm, error)
	// Plugins describes every algorithm.
	Plugins() []*structs.PluginStatus
}

// Profiler is implemented by drivers that can measure a new job's speed at
// a few (ps, workers) configurations before it runs, as Optimus profiles
// jobs. The leader uses it when the driver has it.
type Profiler interface {
	Profile(ctx context.Context, namespace, jobID string, configs [][2]int) error
}

// hosted is implemented by drivers that need the server as a
// structs.DriverHost.
type hosted interface {
	SetHost(structs.DriverHost)
}

// LastSample returns the newest committed sample of a job; it makes the
// Server a structs.DriverHost.
func (s *Server) LastSample(namespace, jobID string) (structs.Sample, bool) {
	js, err := state.Samples(s.State().Txn(), nil, namespace, jobID)
	if err != nil || js == nil || len(js.Samples) == 0 {
		return structs.Sample{}, false
	}
	return js.Samples[len(js.Samples)-1], true
}

// Event commits an event stamped now unless it has a time.
func (s *Server) Event(ctx context.Context, ev *structs.Event) error {
	if ev.Time == 0 {
		ev.Time = time.Now().UnixNano()
	}
	_, _, err := s.apply(ctx, fsm.EventAppendType, &fsm.EventAppendRequest{Event: ev})
	return err
}
