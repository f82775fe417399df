package server

import (
	"context"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
)

// Driver enacts plans on a cluster and reports what runs there: the
// observed state the leader plans from. drivers/sim and drivers/nomad
// satisfy it without importing this package. Only the leader calls a
// driver, from one goroutine at a time, and no call may wait for a
// change to finish (a checkpoint, tasks starting): a change is a state
// the driver advances at each Status, so that the leader's loop keeps
// ingesting samples and answering requests meanwhile.
type Driver interface {
	// Nodes returns the cluster's nodes as they are now.
	Nodes(ctx context.Context) ([]*structs.Node, error)

	// Enact starts making the cluster run plan and returns without
	// waiting for any change to finish. jobs holds the spec of every job
	// the plan names, as the state holds it: the driver must not modify
	// them, and copies what it changes. A job the driver runs that the plan does not name
	// is stopped; a job whose change is in flight keeps working toward
	// its target, whatever the plan gives it. Enacting the same plan
	// twice changes nothing, so a new leader reconciles by enacting the
	// plan in force. It reports every job the plan names: what runs now
	// and its change (in flight, done or aborted, and why). An error
	// means the plan was not (entirely) started; what runs is then what
	// Status reports.
	Enact(ctx context.Context, plan *structs.Plan, jobs []*structs.Job) ([]*structs.JobReport, error)

	// Status advances the changes in flight (a checkpoint confirmed or
	// timed out, tasks running) and reports every job the driver runs or
	// ran since it started.
	Status(ctx context.Context) ([]*structs.JobReport, error)
}

// NodesVersioner is a Driver that says when its nodes change: the leader
// reads and compares them only when NodesVersion moved since they were
// last committed or found unchanged. Comparing every node at every step
// was half a simulated trace's CPU on a cluster of 313 nodes. The leader
// finds it on the Driver by a type assertion.
type NodesVersioner interface {
	// NodesVersion changes whenever what Nodes returns may have.
	NodesVersion() uint64
}

// Discoverer finds jobs declared in the cluster itself rather than
// submitted to Caravan: Nomad jobs whose groups carry a caravan scaling
// policy (drivers/nomad). The leader registers, updates, stops and hands
// back jobs by what it declares (see leader.syncDeclared).
type Discoverer interface {
	// Declared returns a declaration per job of the cluster, and the
	// cluster's index of that view, which moves when it changes. It fails
	// rather than answer from a view it knows is stale.
	Declared(ctx context.Context) (map[structs.JobKey]*structs.Declaration, uint64, error)
}

// Rejecter is a Discoverer that can stop a declared job the leader
// rejected, so that the cluster does not run it as written, and tell the
// cluster's users why (drivers/nomad writes it on the Nomad job). The
// leader finds it on the Discoverer by a type assertion.
type Rejecter interface {
	// Reject stops the cluster's job at the declared version (never a
	// newer one), with why written on it, and returns without waiting
	// for the cluster. What it writes must read as a stopped job, never
	// as a new declaration.
	Reject(ctx context.Context, decl *structs.Declaration, why string) error
}

// MetricsSource delivers trainers' samples. Samples returns the samples
// reported after cursor and the cursor to pass next time; cursor 0 means
// from the oldest sample still held. A source may drop samples older than
// the last cursor passed to it. A source with a method Run(ctx) gathers in
// the background: the server runs it while it leads.
type MetricsSource interface {
	Samples(ctx context.Context, cursor uint64) ([]structs.Sample, uint64, error)
}

// Gatherer gathers samples in the background, as the collectors found in
// Consul are scraped: the server runs it while it leads.
type Gatherer interface {
	Run(ctx context.Context)
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
// a few configurations before it runs, as Optimus profiles jobs. The
// server finds it on its driver when it starts (see Config.Profiler).
type Profiler interface {
	Profile(ctx context.Context, job structs.JobKey, configs []structs.Shape) error
}

// TypeProfiler is implemented by drivers that can measure a new job on
// one GPU of each GPU type of the cluster, at the per-GPU batches that fit
// it, before it runs: Sia's bootstrap (§3.1). The samples it reports name
// their GPU type (structs.Sample.GPUType); the job pays for the time.
type TypeProfiler interface {
	ProfileTypes(ctx context.Context, job *structs.Job) error
}

// TypeProfileHolder is implemented by a TypeProfiler whose measurements
// take time, running beside the jobs (the nomad driver's): a new job it
// profiles waits, unplaced, up to TypeProfileHold for its first model of
// a GPU type (models.Set.HoldForTypes); 0 for a job it does not profile.
type TypeProfileHolder interface {
	TypeProfileHold(job *structs.Job) time.Duration
}

// typeProfiler is the Profiler that is also a TypeProfiler, else the
// driver if it is one; nil when there is none.
func (s *Server) typeProfiler() TypeProfiler {
	if tp, ok := s.cfg.Profiler.(TypeProfiler); ok {
		return tp
	}
	tp, _ := s.cfg.Driver.(TypeProfiler)
	return tp
}

// The server is the host of the drivers that take part in the rescale
// protocol.
var _ structs.DriverHost = (*Server)(nil)

// LastSample returns the newest committed sample of a job's own tasks,
// not a profiling run's (Sample.Profile); it makes the Server a
// structs.DriverHost.
func (s *Server) LastSample(job structs.JobKey) (structs.Sample, bool) {
	js, err := state.Samples(s.State().Txn(), nil, job.Namespace, job.ID)
	if err != nil {
		return structs.Sample{}, false
	}
	return lastOwn(js)
}

// lastOwn returns the newest of a job's samples (nil: none) that is not
// a profiling run's.
func lastOwn(js *structs.JobSamples) (structs.Sample, bool) {
	if js == nil {
		return structs.Sample{}, false
	}
	for i := len(js.Samples) - 1; i >= 0; i-- {
		if !js.Samples[i].Profile {
			return js.Samples[i], true
		}
	}
	return structs.Sample{}, false
}

// Event commits an event stamped now unless it has a time.
func (s *Server) Event(ctx context.Context, ev *structs.Event) error {
	if ev.Time == 0 {
		ev.Time = s.now().UnixNano()
	}
	_, _, err := s.apply(ctx, fsm.EventAppendType, &fsm.EventAppendRequest{Event: ev})
	return err
}
