package api

import "slices"

// The phases of a Change.
const (
	ChangeCheckpointing = "checkpointing"
	ChangeStarting      = "starting"
	ChangeDone          = "done"
	ChangeAborted       = "aborted"
	ChangeFailed        = "failed"
)

// The kinds of a TaskAction.
const (
	ActionResized           = "resized"
	ActionOOMResized        = "oom-resized"
	ActionHotPSReplaced     = "hot-ps-replaced"
	ActionStragglerReplaced = "straggler-replaced"
)

// The types of a JobDiff and a FieldDiff.
const (
	DiffTypeNone    = "None"
	DiffTypeAdded   = "Added"
	DiffTypeDeleted = "Deleted"
	DiffTypeEdited  = "Edited"
)

// Plan is one scheduling decision for the whole cluster: a placement for every
// active job. The leader commits it through Raft before a driver enacts it.
type Plan struct {
	// Index is the Raft index the plan was committed at.
	Index     uint64
	Algorithm string
	// CreateTime is stamped by the leader, Unix nanoseconds.
	CreateTime int64
	// Placements holds one entry per job, sorted by (Namespace, JobID).
	Placements []*Placement
}

// Placement is what one job gets: how many parameter servers and workers,
// and how many of each on which node. A job with no workers is paused.
type Placement struct {
	Namespace  string
	JobID      string
	NumPS      int
	NumWorkers int
	// Nodes is sorted by NodeID, then by sizes. A node
	// appears once per distinct pair of sizes: tasks of one role on one
	// node that run at different sizes are separate entries.
	Nodes []*NodeTasks
	// Reason says, for people, why the job got this placement.
	Reason string
	// Metric, on a paused placement whose job's minimum does not fit,
	// says why; nil otherwise. The server computes it after the
	// algorithm's decision, so that it reads the same for every algorithm.
	Metric *PlacementMetric `json:",omitempty"`
	// Batch is the batch configuration the job is to run at, set only for
	// a job whose jobspec lets its batch size vary (training.batch_size);
	// nil keeps the job's fixed global batch, split evenly over its
	// workers. It does not count in SameTasks: a new batch alone moves no
	// task. A driver that can change a running job's batch (the
	// simulator) applies it at once; the Nomad driver restarts the job
	// from its checkpoint for a large enough change (its tasks learn
	// their batch when they start) and applies a smaller one when the
	// job next starts. In an observed placement (JobReport) it is the
	// batch the tasks run at, when the driver knows it.
	Batch *Batch `json:",omitempty"`
	// Actions are what the algorithm did to single tasks of the job in
	// this decision, beyond counts (a task resized, a straggler
	// replaced), for the job's events; nil when none. They do not count
	// in SameTasks.
	Actions []*TaskAction `json:",omitempty"`
	// JobVersion is the version of the job the placement was decided
	// for, set by the server. The leader enacts a placement only while
	// that version is the job's current one: a placement made for an
	// older version may break the newer's bounds.
	JobVersion uint64 `json:",omitempty"`
	// Finished, in an observed placement, counts the tasks that finished
	// their work (exited successfully) and so no longer run; nil when
	// none did, and in a decision.
	Finished *Shape `json:",omitempty"`
}

// Batch is how a job's global batch is split: each of its workers
// computes Local samples a pass and accumulates AccumSteps passes before
// the last one, whose gradients it then exchanges, so that
// Global = workers × Local × (AccumSteps + 1).
type Batch struct {
	Global     int
	Local      int
	AccumSteps int
}

// NodeTasks is the tasks of one job on one node, at one size per role.
type NodeTasks struct {
	NodeID  string
	PS      int
	Workers int
	// PSSize and WorkerSize are the size of this entry's tasks of each
	// role; a zero field takes the role's size from the job
	// (Resources.CPU and MemoryMB). A size is set only for a role the entry
	// runs tasks of, and is within the role's range.
	PSSize     TaskSize `json:",omitempty"`
	WorkerSize TaskSize `json:",omitempty"`
}

// TaskSize is the CPU (MHz) and memory (MB) of one task; a zero field
// takes the role's size. It is a comparable value, so that SameTasks sees
// a change of size alone as a change.
type TaskSize struct {
	CPU      int `json:",omitempty"`
	MemoryMB int `json:",omitempty"`
}

// TaskAction is one thing an algorithm did to a task of a job, beyond
// counts; the server records it as an event when it commits the decision.
type TaskAction struct {
	// Kind is one of the Action constants.
	Kind string
	// Role is RoleWorker or RolePS; Rank the task's rank within it, -1
	// when the action concerns the role as a whole.
	Role   string
	Rank   int
	NodeID string `json:",omitempty"`
	// Reason says why, for people.
	Reason string
	// Details are the action's facts for programs, added to its event's
	// Details (see Event), keys spelt as field names are ("From", "To").
	Details map[string]string `json:",omitempty"`
}

// PlacementMetric says why a job's minimum could not be placed, as Nomad's
// AllocMetric says it for an allocation: the minimum is placed one task at
// a time, first fit in node order, and the metric describes the nodes as
// the first task that found no room saw them. A node is counted once:
// filtered by the first constraint it fails, or exhausted on the first
// dimension short of room.
type PlacementMetric struct {
	// Minimum is the shape that could not be placed; Placed is how much of
	// it found room before the task that did not.
	Minimum Shape
	Placed  Shape
	// Role is the role of the task that found no room: RoleWorker or
	// RolePS.
	Role string
	// NodesEvaluated is how many nodes the planner considered.
	NodesEvaluated int
	// ConstraintFiltered counts the nodes where the task may not run, by
	// the first constraint each failed: a job or role constraint as
	// Nomad renders it ("${attr.kernel.name} = linux"), a device request's
	// ("device nvidia/gpu: ${device.attr.memory} >= 32 GiB", "device
	// nvidia/gpu: missing"), "distinct_hosts", "datacenter not in [dc2]"
	// or "node pool != gpu".
	ConstraintFiltered map[string]int `json:",omitempty"`
	// DimensionExhausted counts the nodes where the task may run but
	// finds no room, by the first dimension short: "cpu", "memory", or a
	// device type ("gpu").
	DimensionExhausted map[string]int `json:",omitempty"`
}

// Shape is how many parameter servers and workers a job runs: a
// configuration of the job, whatever nodes its tasks are on.
type Shape struct {
	PS      int
	Workers int
}

// JobPlacement is one entry of a job's placement history: the placement a
// committed plan gave the job.
type JobPlacement struct {
	Namespace string
	JobID     string
	// PlanIndex is the Raft index of the plan.
	PlanIndex uint64
	// Time is the plan's CreateTime, Unix nanoseconds.
	Time      int64
	Algorithm string
	Placement *Placement
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
	// job's tasks; nil when there are none.
	Failures []*Failure `json:",omitempty"`
	// ModifyIndex is the Raft index of the last change of this record;
	// UpdateTime, stamped by the leader, is when it was committed.
	ModifyIndex uint64
	UpdateTime  int64
}

// Failure kinds.
const (
	FailurePlacement = "placement"
	FailureTask      = "task"
)

// Failure is a failure the cluster reported for a job's tasks, in the
// cluster's words: Nomad could not place a group (its evaluation's
// metrics), or a task failed where it was placed (its events).
type Failure struct {
	// Kind is FailurePlacement or FailureTask.
	Kind  string
	Group string
	// Summary is one line for people; Details are the cluster's lines
	// about it, as Nomad's command line renders an allocation metric.
	Summary string
	Details []string `json:",omitempty"`
}

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

// JobDiff is how a job's spec differs from another version of it, field by
// field. Only the fields a user gives count: a job's status, version, submit
// time and indexes never appear.
type JobDiff struct {
	// Type is DiffTypeNone when the specs are equal, DiffTypeAdded when there
	// was no old job, DiffTypeDeleted when there is no new one and
	// DiffTypeEdited otherwise.
	Type string
	ID   string
	// Fields are the fields that differ, in the order of the job's struct:
	// job-level fields first, then training, elastic and the roles.
	Fields []*FieldDiff
}

// FieldDiff is one field that differs between two versions of a job.
type FieldDiff struct {
	// Type is DiffTypeAdded, DiffTypeDeleted or DiffTypeEdited.
	Type string
	// Path names the field as a jobspec spells it:
	// "elastic.workers.max", "worker.resources.device[0].count",
	// "worker.env.NCCL_DEBUG". A list of plain values is one field.
	Path string
	// Old and New are the values rendered for people: strings quoted,
	// durations as "30s", lists of plain values as ["a", "b"]. Old is empty
	// for an added field, New for a deleted one.
	Old string `json:",omitempty"`
	New string `json:",omitempty"`
}

// Paused reports whether the placement runs no task of the job.
func (p *Placement) Paused() bool { return p.NumWorkers == 0 && p.NumPS == 0 }

// SameTasks reports whether two placements run the same tasks on the same
// nodes at the same sizes; reasons do not count, and nil runs no task, as a
// paused placement.
func (p *Placement) SameTasks(o *Placement) bool {
	if p == nil || o == nil {
		return (p == nil || p.Paused()) && (o == nil || o.Paused())
	}
	return p.NumPS == o.NumPS && p.NumWorkers == o.NumWorkers &&
		slices.EqualFunc(p.Nodes, o.Nodes, func(a, b *NodeTasks) bool { return *a == *b })
}

// Changed reports whether the diff has a field that differs; nil has none.
func (d *JobDiff) Changed() bool { return d != nil && len(d.Fields) > 0 }

// InFlight reports whether the change is still under way (checkpointing or
// starting); nil is no change.
func (c *Change) InFlight() bool {
	return c != nil && (c.Phase == ChangeCheckpointing || c.Phase == ChangeStarting)
}
