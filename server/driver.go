package server

import (
	"context"

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
// the last cursor passed to it.
type MetricsSource interface {
	Samples(ctx context.Context, cursor uint64) ([]structs.Sample, uint64, error)
}

// Profiler is implemented by drivers that can measure a new job's speed at
// a few (ps, workers) configurations before it runs, as Optimus profiles
// jobs. The leader uses it when the driver has it.
type Profiler interface {
	Profile(ctx context.Context, namespace, jobID string, configs [][2]int) error
}
