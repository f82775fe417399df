package structs

import "slices"

// Sources of a TaskUsage: who measured it.
const (
	UsageSourceNomad  = "nomad"  // the Nomad driver, from the allocation stats API
	UsageSourceSim    = "sim"    // the sim driver's ground truth
	UsageSourceSample = "sample" // the trainer's own samples
)

// MaxUsageTasks bounds JobUsage.Tasks where usage enters Caravan, so that
// one job cannot grow a Raft entry without limit.
const MaxUsageTasks = 512

// MaxUsageShapes bounds JobUsage.ByShape; the oldest shape is dropped.
const MaxUsageShapes = 16

// TaskUsage is what one task of a job uses, as its driver (or its trainer)
// measured it. CPU is in MHz, comparable with Resources.CPU; memory in MB.
type TaskUsage struct {
	// Role is RoleWorker or RolePS; Rank numbers tasks within a role.
	Role    string
	Rank    int
	NodeID  string
	AllocID string `json:",omitempty"`
	// CPUMHz and MemoryMB are used now (a moving average for CPU);
	// MaxMemoryMB is the most memory seen in the task's current run.
	CPUMHz      float64
	MemoryMB    float64
	MaxMemoryMB float64
	// CPULimitMHz and MemoryLimitMB are what the task was given.
	CPULimitMHz   int
	MemoryLimitMB int
	// Restarts counts the cluster's in-place restarts of the task;
	// OOMKills the kills for memory seen in the job's current generation,
	// the latest at LastOOM (Unix nanoseconds, 0 for none).
	Restarts int
	OOMKills int
	LastOOM  int64 `json:",omitempty"`
	// TaskStepTimeS is the task's own time per local step in seconds, from
	// its samples; 0 when not reported. Straggler detection reads it.
	TaskStepTimeS float64 `json:",omitempty"`
	// Source is one of the UsageSource constants.
	Source string
}

// ShapeUsage is a job's measured CPU at one shape (ps, workers): DLRover's
// ŵ and ŝ_total at that shape.
type ShapeUsage struct {
	Shape Shape
	// WorkerCPUMHz is the mean CPU used per worker (ŵ); PSCPUMHz the total
	// CPU used by all parameter servers (ŝ_total).
	WorkerCPUMHz float64
	PSCPUMHz     float64
	// Measurements is how many usage reports the means are over.
	Measurements int
}

// JobUsage is what the tasks of one job use, committed through Raft at a
// bounded rate. The leader stamps Time.
type JobUsage struct {
	Namespace string
	JobID     string
	// Time is when the usage was committed, Unix nanoseconds.
	Time int64
	// Tasks is sorted by (Role, Rank); at most MaxUsageTasks.
	Tasks []*TaskUsage
	// ByShape holds the running means per shape the job ran at, at most
	// MaxUsageShapes, oldest first.
	ByShape     []ShapeUsage `json:",omitempty"`
	ModifyIndex uint64
}

// Key returns the job's key.
func (u *JobUsage) Key() JobKey { return JobKey{Namespace: u.Namespace, ID: u.JobID} }

// Shape returns the measured usage at shape s, or nil when the job never
// ran at it.
func (u *JobUsage) Shape(s Shape) *ShapeUsage {
	if u == nil {
		return nil
	}
	for i := range u.ByShape {
		if u.ByShape[i].Shape == s {
			return &u.ByShape[i]
		}
	}
	return nil
}

// Copy returns a deep copy of the usage.
func (u *JobUsage) Copy() *JobUsage {
	if u == nil {
		return nil
	}
	c := *u
	c.Tasks = copyAll(u.Tasks)
	c.ByShape = slices.Clone(u.ByShape)
	return &c
}
