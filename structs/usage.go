package structs

import (
	"fmt"
	"math"
	"slices"
)

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

// Bounds on the numbers of a valid TaskUsage: far beyond any machine, so
// that only garbage is refused.
const (
	MaxUsageCPUMHz   = 1e7 // 10 THz
	MaxUsageMemoryMB = 1e9 // 1 PB
	MaxUsageCount    = 1e6 // restarts and OOM kills
	// MaxUsageStepTimeS bounds TaskStepTimeS: a day per step.
	MaxUsageStepTimeS = 86400
)

// Validate rejects usage no decision should be made from: a missing job,
// more than MaxUsageTasks tasks or MaxUsageShapes shapes, an unknown
// role, and numbers that are NaN, infinite, negative or beyond the
// MaxUsage bounds. Each problem is a *FieldError named by its path.
func (u *JobUsage) Validate() error {
	v := newValidator()
	if u.JobID == "" {
		v.missing("JobID")
	}
	if len(u.Tasks) > MaxUsageTasks {
		v.fail("Tasks", "%d tasks; at most %d are allowed", len(u.Tasks), MaxUsageTasks)
	}
	if len(u.ByShape) > MaxUsageShapes {
		v.fail("ByShape", "%d shapes; at most %d are allowed", len(u.ByShape), MaxUsageShapes)
	}
	bounded := func(path string, val, limit float64) {
		if math.IsNaN(val) || math.IsInf(val, 0) || val < 0 || val > limit {
			v.fail(path, "%v must be a finite number from 0 to %g", val, limit)
		}
	}
	for i, t := range u.Tasks {
		at := fmt.Sprintf("Tasks[%d].", i)
		if t == nil {
			v.missing(fmt.Sprintf("Tasks[%d]", i))
			continue
		}
		if t.Role != RoleWorker && t.Role != RolePS {
			v.fail(at+"Role", "%q is not a role; use %q or %q", t.Role, RoleWorker, RolePS)
		}
		bounded(at+"Rank", float64(t.Rank), MaxUsageTasks)
		bounded(at+"CPUMHz", t.CPUMHz, MaxUsageCPUMHz)
		bounded(at+"CPULimitMHz", float64(t.CPULimitMHz), MaxUsageCPUMHz)
		bounded(at+"MemoryMB", t.MemoryMB, MaxUsageMemoryMB)
		bounded(at+"MaxMemoryMB", t.MaxMemoryMB, MaxUsageMemoryMB)
		bounded(at+"MemoryLimitMB", float64(t.MemoryLimitMB), MaxUsageMemoryMB)
		bounded(at+"Restarts", float64(t.Restarts), MaxUsageCount)
		bounded(at+"OOMKills", float64(t.OOMKills), MaxUsageCount)
		bounded(at+"TaskStepTimeS", t.TaskStepTimeS, MaxUsageStepTimeS)
		if t.LastOOM < 0 {
			v.fail(at+"LastOOM", "%d must not be negative", t.LastOOM)
		}
	}
	for i, s := range u.ByShape {
		at := fmt.Sprintf("ByShape[%d].", i)
		bounded(at+"WorkerCPUMHz", s.WorkerCPUMHz, MaxUsageCPUMHz)
		bounded(at+"PSCPUMHz", s.PSCPUMHz, MaxUsageCPUMHz*MaxUsageTasks)
		if s.Shape.PS < 0 || s.Shape.Workers < 0 || s.Measurements < 0 {
			v.fail(at+"Shape", "counts must not be negative")
		}
	}
	return v.err()
}
