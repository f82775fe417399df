package api

import (
	"encoding/json"
	"time"
)

// Job statuses, as Job.Status and JobListStub.Status report them.
const (
	JobStatusPending   = "pending"
	JobStatusRunning   = "running"
	JobStatusRescaling = "rescaling"
	JobStatusComplete  = "complete"
	JobStatusFailed    = "failed"
	JobStatusStopped   = "stopped"
	// JobStatusRejected is a job declared in Nomad at a version Caravan
	// cannot run; its StatusDescription says why.
	JobStatusRejected = "rejected"
)

// Terminal reports whether a job in status has ended: complete, failed,
// stopped or rejected.
func Terminal(status string) bool {
	return status == JobStatusComplete || status == JobStatusFailed || status == JobStatusStopped || status == JobStatusRejected
}

// The roles of a job's tasks (Role.Name, Sample.Role, TaskUsage.Role).
const (
	RoleWorker = "worker"
	RolePS     = "ps"
)

// Training architectures (Training.Architecture), modes (Training.Mode)
// and launchers (Training.Launcher).
const (
	ArchitecturePS        = "ps"
	ArchitectureAllReduce = "allreduce"
	ModeSync              = "sync"
	ModeAsync             = "async"
	LauncherTorchrun      = "torchrun"
)

// DefaultNamespace is the namespace of a job that names none.
const DefaultNamespace = "default"

// Job is an ML training job as the user submitted it, plus the bookkeeping
// fields the server stamps (status, indexes, times). A Job is immutable once
// stored: the server replaces it with an updated copy.
type Job struct {
	// ID is the job's label in the jobspec (`job "resnet50" {}`); unique per
	// namespace.
	ID string
	// Name is a display name; it defaults to ID.
	Name        string
	Namespace   string
	Region      string
	Datacenters []string
	NodePool    string
	// Priority orders jobs for policies that use it, 1..100 as in Nomad.
	Priority int
	// Weight is the job's share weight for fairness policies (DRF); > 0.
	Weight float64
	Meta   map[string]string

	// Constraints and Affinities apply to every task of the job, with Nomad's
	// semantics.
	Constraints []*Constraint
	Affinities  []*Affinity

	Training *Training
	Elastic  *Elastic

	// Worker is the template for worker tasks; required.
	Worker *Role
	// ParameterServer is the template for parameter-server tasks. It is nil
	// for all-reduce jobs, and optional for PS jobs: when nil, parameter
	// servers run the worker template with CARAVAN_ROLE=ps.
	ParameterServer *Role

	// Nomad is set for a job declared in Nomad, a Nomad job whose groups
	// carry a caravan scaling policy, and nil for
	// jobspecs and API submissions. Caravan runs such a job as versions of
	// that Nomad job, with its groups as templates.
	Nomad *NomadSource

	// Fields below are set by the server, never by the jobspec.
	Status            string
	StatusDescription string
	Version           uint64
	SubmitTime        int64 // Unix nanoseconds, stamped by the leader
	CreateIndex       uint64
	ModifyIndex       uint64
	// ModifyTime is when the record last changed, Unix nanoseconds: for
	// a job that ended, when it ended. The server purges such a job
	// job_gc_threshold after it.
	ModifyTime int64
}

// NomadSource is the Nomad job version a job was declared by.
type NomadSource struct {
	// JobModifyIndex is Nomad's JobModifyIndex of the version, the user's
	// own: Caravan overwrites the Nomad job only while this version, or
	// one Caravan wrote after it, is current.
	JobModifyIndex uint64
	// Groups names, by role (RoleWorker, RolePS), the template's group
	// that carries it.
	Groups map[string]string
	// Template is the Nomad job as the user submitted it, encoded as
	// nomad/api's JSON, with the fields Nomad sets (status, indexes,
	// versions) cleared. It is at most MaxNomadTemplate bytes.
	Template json.RawMessage
}

// Training describes how the job trains and when it is done.
type Training struct {
	// Framework is a free-form label ("pytorch", "tensorflow").
	Framework    string
	Architecture string // ArchitecturePS or ArchitectureAllReduce
	Mode         string // ModeSync or ModeAsync
	// Launcher is how the worker tasks start: "" (the command as it is)
	// or LauncherTorchrun, one torchrun agent per worker task with a
	// rendezvous per generation.
	Launcher string `json:",omitempty"`
	// GlobalBatchSize is the number of samples per step across all workers.
	// In sync mode it is kept constant across rescales and each worker gets
	// GlobalBatchSize / workers. For a job with BatchSize bounds it is the
	// batch the job starts at and the reference batch of its statistical
	// efficiency (Pollux's initial batch size); it defaults to
	// BatchSize.Min.
	GlobalBatchSize int
	// BatchSize, when set, lets the planner choose the job's global batch
	// size within bounds, as Pollux does; nil keeps
	// GlobalBatchSize fixed.
	BatchSize *BatchSize `json:",omitempty"`
	// StepsPerEpoch converts steps to epochs for convergence and reporting.
	StepsPerEpoch int
	Convergence   *Convergence
	// Speeds are measured speeds the user gives (jobspec `speed` blocks):
	// priors for the speed model, in place of the profiling runs Optimus
	// makes before a job trains.
	Speeds []*SpeedPrior
}

// BatchSize bounds an adaptive job's batch sizes: the global batch, in
// samples per optimizer step across all workers, and the local batch one
// worker computes in one forward and backward pass. A worker whose share
// of the global batch exceeds MaxLocal accumulates gradients over several
// passes (gradient accumulation).
type BatchSize struct {
	Min int
	Max int
	// MinLocal and MaxLocal bound the local batch; 0 means 1 and Max.
	MinLocal int
	MaxLocal int
}

// SpeedPrior is a job's measured training speed at one configuration.
type SpeedPrior struct {
	PS             int
	Workers        int
	StepsPerSecond float64
}

// Convergence says when a job counts as trained: when the relative decrease
// of its loss per epoch stays below Threshold for Patience epochs, or after
// MaxEpochs epochs, whichever comes first.
type Convergence struct {
	Threshold float64
	Patience  int
	// MaxEpochs caps training; 0 means no cap.
	MaxEpochs int
}

// Elastic holds the bounds Caravan may scale the job within, and how it
// checkpoints before a rescale.
type Elastic struct {
	Workers Bounds
	// ParameterServers is nil for all-reduce jobs.
	ParameterServers *Bounds
	Checkpoint       *Checkpoint
}

// Bounds is an inclusive range of task counts.
type Bounds struct {
	Min int
	Max int
}

// Checkpoint is how Caravan asks a job's tasks to checkpoint before a rescale.
type Checkpoint struct {
	// Signal is sent to every task of the job, e.g. "SIGUSR1".
	Signal string
	// Timeout bounds the wait for the checkpoint to be reported; a rescale
	// whose checkpoint is not confirmed in time is not applied. It is also
	// how long a stopped task may take to checkpoint (its kill_timeout).
	Timeout time.Duration
	// Interval, when positive, has the job's chief checkpoint that often
	// besides when asked; 0 means only when asked and when stopped.
	Interval time.Duration `json:",omitempty"`
}

// Role is the template from which Caravan builds the Nomad tasks of one role.
type Role struct {
	// Name is RoleWorker or RolePS.
	Name   string
	Driver string
	// Config is the driver's configuration as plain Go values (string, int64,
	// float64, bool, []any, map[string]any), passed to Nomad unchanged.
	Config      map[string]any
	Env         map[string]string
	Meta        map[string]string
	Resources   *Resources
	Constraints []*Constraint
	Affinities  []*Affinity
}

// Resources is what one task asks for, in Nomad's units.
//
// CPU and MemoryMB are the size every task of the role runs at unless an
// algorithm's decision sizes it otherwise (TaskSize). When the
// jobspec gives cpu or memory as a range, CPURange or MemoryRange holds it
// and CPU or MemoryMB is the range's Initial, so that an algorithm that
// ignores ranges still sees one size; nil ranges mean the size is fixed.
type Resources struct {
	CPU      int // MHz
	MemoryMB int
	Devices  []*RequestedDevice
	// CPURange (MHz) and MemoryRange (MB) bound the sizes a decision may
	// give a task of the role; nil when the size is fixed.
	CPURange    *ResourceRange `json:",omitempty"`
	MemoryRange *ResourceRange `json:",omitempty"`
}

// ResourceRange bounds one resource of a role's tasks, in the resource's
// unit (MHz or MB).
type ResourceRange struct {
	// Min is the smallest size a decision may give a task.
	Min int
	// Max is the largest; 0 means no bound but the node's capacity.
	Max int
	// Initial is the size tasks run at until an algorithm sizes them, and
	// the size of algorithms that ignore ranges. The server defaults it
	// to Max for CPU (DLRover samples at the per-task maximum) and to Min
	// for memory; to Nomad's task default when Max is 0.
	Initial int
	// Auto marks the jobspec's "auto": Min is Nomad's minimum and Max 0,
	// so the algorithm chooses the size within the node.
	Auto bool
}

// RequestedDevice asks for Count instances of devices matching Name, with
// Nomad's semantics: Name is "<type>", "<vendor>/<type>" or
// "<vendor>/<type>/<model>", and the constraints and affinities may refer to
// ${device.attr.<name>}, ${device.vendor}, ${device.type} and ${device.model}.
type RequestedDevice struct {
	Name        string
	Count       int
	Constraints []*Constraint
	Affinities  []*Affinity
}

// Constraint restricts where a task, or which device instance, may be
// placed. LTarget is usually an interpolation such as "${attr.kernel.name}" or
// "${device.attr.memory}", RTarget a literal, and Operand an operator as
// Nomad's ("=", "!=", "<", "regexp", "set_contains", "distinct_hosts", ...).
type Constraint struct {
	LTarget string
	RTarget string
	Operand string
}

// Affinity is a soft constraint: nodes (or device groups) that satisfy it
// score Weight, from -100 (avoid) to 100 (prefer), never 0.
type Affinity struct {
	LTarget string
	RTarget string
	Operand string
	Weight  int
}
