package structs

import "fmt"

// Job statuses. A job moves pending → running ⇄ rescaling and ends complete,
// failed or stopped; a running job whose placement is paused stays running.
// A job declared in the cluster that Caravan cannot run is rejected from
// the start.
const (
	// JobStatusPending: registered, not placed yet.
	JobStatusPending = "pending"
	// JobStatusRunning: placed and training.
	JobStatusRunning = "running"
	// JobStatusRescaling: checkpointing or restarting under a new placement.
	JobStatusRescaling = "rescaling"
	// JobStatusComplete: converged or reached its epoch cap.
	JobStatusComplete = "complete"
	// JobStatusFailed: cannot run (e.g. its tasks keep failing).
	JobStatusFailed = "failed"
	// JobStatusStopped: stopped by a user.
	JobStatusStopped = "stopped"
	// JobStatusRejected: declared in the cluster (a Nomad job with a
	// caravan scaling policy) at a version Caravan cannot run; the
	// status description says why. It never ran: a later valid version
	// of the declaration registers the job anew.
	JobStatusRejected = "rejected"
)

// Terminal reports whether status is one a job never leaves.
func Terminal(status string) bool {
	switch status {
	case JobStatusComplete, JobStatusFailed, JobStatusStopped, JobStatusRejected:
		return true
	}
	return false
}

// Event types.
const (
	EventJobRegistered = "JobRegistered"
	EventJobPlaced     = "JobPlaced"
	EventJobWaiting    = "JobWaiting"
	EventJobRescaled   = "JobRescaled"
	// EventTasksLost: fewer tasks of a job run than decided, with no
	// change on its way there: tasks ended or their nodes went away.
	EventTasksLost = "TasksLost"
	// EventTasksFinished: fewer tasks of a job run than decided because
	// the others finished their work (exited successfully): the job is
	// ending, nothing was lost.
	EventTasksFinished     = "TasksFinished"
	EventRescaleAborted    = "RescaleAborted"
	EventJobCompleted      = "JobCompleted"
	EventJobFailed         = "JobFailed"
	EventJobStopped        = "JobStopped"
	EventAlgorithmChanged  = "AlgorithmChanged"
	EventAlgorithmFallback = "AlgorithmFallback"
	// EventCheckpointRequested, EventCheckpointConfirmed: steps of the
	// rescale protocol; EventJobRestarted: a driver restarted a job's
	// failed tasks from its last checkpoint.
	EventCheckpointRequested = "CheckpointRequested"
	EventCheckpointConfirmed = "CheckpointConfirmed"
	EventJobRestarted        = "JobRestarted"
	// EventTasksRunning: every task of a job's new placement runs; its
	// details say how long the start or rescale took.
	EventTasksRunning = "TasksRunning"
	// EventDriverError: the cluster (Nomad) could not be reached or
	// refused a request; EventDriverRecovered: it answers again.
	EventDriverError     = "DriverError"
	EventDriverRecovered = "DriverRecovered"
	// EventJobRejected: a job declared in the cluster (a Nomad job with a
	// caravan scaling policy) cannot run under Caravan; the message says
	// why. A version not running under Caravan is stopped in the cluster
	// with the reason written on it (drivers/nomad's Reject).
	EventJobRejected = "JobRejected"
	// EventTaskResized, EventHotPSReplaced, EventStragglerReplaced: an
	// algorithm's TaskAction on single tasks of a job was committed;
	// EventTaskOOMKilled: a driver saw a task killed for memory.
	EventTaskResized       = "TaskResized"
	EventHotPSReplaced     = "HotPSReplaced"
	EventStragglerReplaced = "StragglerReplaced"
	EventTaskOOMKilled     = "TaskOOMKilled"
	// EventPlacementFailed: the cluster reported a new failure to place or
	// run a job's tasks (a Failure, which the message renders); recorded
	// once per distinct failure.
	EventPlacementFailed = "PlacementFailed"
	// EventEntrySkipped: a Raft log entry could not be applied (it did
	// not decode, or applying it failed) and was skipped on every server;
	// its details name the entry's Index and Type.
	EventEntrySkipped = "EntrySkipped"
	// EventJobProfiling: a driver submitted a run measuring the job on
	// one GPU of a type (Sia §3.1); its details name the gpu_type and,
	// on Nomad, the nomad_job.
	EventJobProfiling = "JobProfiling"
	// EventJobPreempted: a queue's quota shrank or paused the job against
	// its algorithm's decision (issue 32); its details name the Queue and
	// the shapes From and To ("0 ps, 0 workers" when paused).
	EventJobPreempted = "JobPreempted"
)

// Event is something that happened to a job or to the scheduler, kept in the
// replicated state so that every server shows the same history.
type Event struct {
	// Seq numbers events in the order they were committed, from 1.
	Seq uint64
	// Index is the Raft index the event was committed at.
	Index uint64
	// Time is stamped by the leader, Unix nanoseconds.
	Time      int64
	Type      string
	Namespace string
	// JobID is empty for scheduler-wide events.
	JobID   string
	Message string
	// Details are the event's facts for programs, as Nomad's task event
	// details are: a flat map of strings (a number in decimal, a change
	// as "4096→8192"), whose keys are spelt as the API's field names are
	// ("Step", "AllocID", "MemoryLimitMB").
	Details map[string]string
}

// JobReport is what a driver knows about one job it runs or ran.
type JobReport struct {
	Namespace string
	JobID     string
	// Status is JobStatusRunning, JobStatusComplete or JobStatusFailed.
	Status string
	// Message says why, for people: the last task error of a failed job,
	// the epoch a job converged at.
	Message string
	// Step is the last training step the driver saw.
	Step int64
	// Replan is set when the driver lost tasks of a running job (they
	// failed or their node went away): the leader plans again at once, and
	// the driver starts the job again from its checkpoint when it enacts
	// the plan.
	Replan bool
	// Placement is what runs now, as the driver sees it: the job's tasks
	// per node. Nil when no task runs (not started yet, paused, ended).
	Placement *Placement
	// Change is the driver's latest change of the job toward a new
	// placement: in flight, done or aborted. Nil when the driver made
	// none since it started.
	Change *Change
	// Usage is what the job's tasks use, as the driver measured it; nil
	// when it measured nothing (yet).
	Usage *JobUsage `json:",omitempty"`
	// Failures are the cluster's latest failures to place or run the
	// job's tasks while not all of them run (Failure); nil when there are
	// none, or once all run.
	Failures []*Failure `json:",omitempty"`
}

// Phases of a Change. A change moves checkpointing → starting → done, or
// ends aborted (before anything was submitted) or failed (after); a
// change with nothing to checkpoint starts at starting.
const (
	// ChangeCheckpointing: the job's checkpoint signal was sent; the
	// driver waits for a committed sample to confirm a newer checkpoint.
	ChangeCheckpointing = "checkpointing"
	// ChangeStarting: the new placement was submitted; the driver waits
	// for its tasks to run.
	ChangeStarting = "starting"
	// ChangeDone: every task of the new placement runs.
	ChangeDone = "done"
	// ChangeAborted: the change was not applied (its checkpoint was not
	// confirmed, or the cluster refused it); the job runs as it did.
	ChangeAborted = "aborted"
	// ChangeFailed: the change was applied but did not complete: tasks of
	// the new placement failed, or not all of them started in time. What
	// runs is in the report's Placement.
	ChangeFailed = "failed"
)

// Change is a driver's change of one job toward a new placement: a state
// machine that the leader's loop advances at every poll, never a call
// that holds the loop.
type Change struct {
	// Target is the placement the change works toward.
	Target *Placement
	// PlanIndex is the Raft index of the decision that asked for it.
	PlanIndex uint64
	Phase     string
	// Message says, for people, where the change stands and why.
	Message string
	// Since is when the phase began, Unix nanoseconds.
	Since int64
}

// InFlight reports whether the change is still under way: a job whose
// change is in flight gets no second change until it ends.
func (c *Change) InFlight() bool {
	return c != nil && (c.Phase == ChangeCheckpointing || c.Phase == ChangeStarting)
}

// Observed is what runs of a job, as the leader last committed it from
// its driver's reports: the placement whose tasks run and the state of
// the latest change. Algorithms plan from it; `job status` shows it beside
// the desired placement.
type Observed struct {
	Namespace string
	JobID     string
	// Placement is what runs now; nil when no task runs.
	Placement *Placement
	// Change is the latest change; nil when there was none.
	Change *Change
	// Failures are the cluster's latest failures to place or run the
	// job's tasks, from the driver's report; nil when there are none.
	// Committed only once every server applies them (0.2.0), as
	// Placement.Finished.
	Failures []*Failure `json:",omitempty"`
	// ModifyIndex is the Raft index of the last change of this record;
	// UpdateTime, stamped by the leader, is when it was committed.
	ModifyIndex uint64
	UpdateTime  int64
}

// Plural says n of noun for people: "1 node", "2 nodes". Nouns take an
// "s".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
