package api

// Event types (Event.Type).
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
	// why, and Caravan stops it in the cluster with the diagnostic on it.
	EventJobRejected = "JobRejected"
	// EventTaskResized, EventHotPSReplaced, EventStragglerReplaced: an
	// algorithm's TaskAction on single tasks of a job was committed;
	// EventTaskOOMKilled: a driver saw a task killed for memory.
	EventTaskResized       = "TaskResized"
	EventHotPSReplaced     = "HotPSReplaced"
	EventStragglerReplaced = "StragglerReplaced"
	EventTaskOOMKilled     = "TaskOOMKilled"
	// EventPlacementFailed: the cluster reported a new failure to place
	// or run a job's tasks (Observed.Failures); once per distinct failure.
	EventPlacementFailed = "PlacementFailed"
	// EventJobProfiling: a driver submitted a run measuring the job on
	// one GPU of a type (Sia §3.1); its details name the gpu_type and
	// the nomad_job.
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
