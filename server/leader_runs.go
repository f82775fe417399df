package server

import (
	"time"

	"github.com/caravan-sched/caravan/structs"
)

// run is the leader's state of one run of an active job: the job between
// its registration and its stop or purge, identified by the index that
// started it (Job.CreateIndex). A job stopped or purged and registered
// again is a new run, which starts from nothing: startRun creates a
// run's state and endRun deletes it, with the scheduler's entry of it,
// and nothing else holds any.
type run struct {
	key structs.JobKey
	// create is the index that started the run; version is the job's
	// version the scheduler plans with.
	create, version uint64
	// ingested counts the run's committed samples (JobSamples.Received)
	// the models have seen.
	ingested int64
	// desired, observed and model are what the leader last committed of
	// the run: its desired placement, what runs of it and its models;
	// only changes to them are committed.
	desired  *structs.Placement
	observed *structs.Observed
	model    *structs.JobModel
	// usage is the run's usage as last committed, at usageAt.
	usage   *structs.JobUsage
	usageAt time.Time
	// replan is set while the driver reports lost tasks (Replan), so
	// that only the first report makes a plan in flight stale.
	replan bool
	// updated is set when the run has a new version since the last
	// decision committed: the next round commits its placement, changed
	// or not, so that the version's round shows.
	updated bool
}

// runOf returns the run of an active job the leader schedules, nil when
// it schedules none.
func (l *leader) runOf(key structs.JobKey) *run { return l.runs[key] }

// startRun schedules a run of a job; the run of an earlier registration
// under the same ID, if the leader still holds one, ends first.
func (l *leader) startRun(j *structs.Job) (*run, error) {
	key := j.Key()
	if l.runs[key] != nil {
		l.endRun(key)
	}
	if err := l.models.Register(j); err != nil {
		return nil, err
	}
	r := &run{key: key, create: j.CreateIndex, version: j.Version}
	l.runs[key] = r
	l.samplesIndex = 0 // its samples may be in already
	l.urgent = true
	return r, nil
}

// endRun forgets a run that ended: the scheduler's entry and the
// leader's state of it.
func (l *leader) endRun(key structs.JobKey) {
	l.models.Complete(key)
	delete(l.runs, key)
	l.urgent = true
}
