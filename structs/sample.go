package structs

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
)

// MaxSampleSkew bounds how far after the receiver's clock a sample's Time
// may be where samples enter Caravan (a server's or a collector's POST
// /v1/report, a collector's followed file): a later sample is refused,
// never stored. The leader drops samples older than a job's newest
// committed one, so a single sample stamped far ahead would otherwise
// silence the job's metrics until the clock caught up. The bound allows
// for modest clock skew between trainers and the receiver.
const MaxSampleSkew = time.Minute

// Sample is one progress report from a training task. A sample describes
// the step it names: the loss after it, how long it took, and under which
// configuration (NumPS, NumWorkers) it ran. Its JSON keys are its field
// names, as everywhere in Caravan's API and files; it also decodes from
// the snake_case keys of the trainers' schema (DESIGN.md §3: step_time_s
// for StepTimeS), which trainers and the Python client send (see
// UnmarshalJSON and DecodeSample).
// Its msgpack keys (the codec tags) are those snake_case names, as its JSON
// keys were before: the Raft log and snapshots hold samples under them.
type Sample struct {
	Namespace string `json:",omitempty" codec:"namespace,omitempty"`
	JobID     string `codec:"job_id"`
	// Role is RoleWorker or RolePS; Rank numbers tasks within a role from 0.
	Role string `json:",omitempty" codec:"role,omitempty"`
	Rank int    `codec:"rank"`

	Step  int64   `codec:"step"`
	Epoch float64 `codec:"epoch"`
	Loss  float64 `codec:"loss"`
	// StepTimeS is the wall time of the step in seconds; 0 when not measured.
	StepTimeS float64 `codec:"step_time_s"`
	// Samples is how many training samples the step processed.
	Samples int64 `codec:"samples"`
	// CPUS and NetS split the step time into computation and communication
	// (Harmony's subtask times), in seconds; 0 when not measured.
	CPUS float64 `codec:"cpu_s"`
	NetS float64 `codec:"net_s"`
	// CheckpointStep is the step of the latest checkpoint the task has
	// written; 0 means none.
	CheckpointStep int64 `codec:"checkpoint_step"`

	// UsageCPUMHz and UsageMemoryMB are what the reporting task itself
	// uses, when the trainer measures it; TaskStepTimeS is its own time
	// per local step in seconds (StepTimeS stays the job's). 0 when not
	// measured.
	UsageCPUMHz   float64 `json:",omitempty" codec:"usage_cpu_mhz,omitempty"`
	UsageMemoryMB float64 `json:",omitempty" codec:"usage_memory_mb,omitempty"`
	TaskStepTimeS float64 `json:",omitempty" codec:"task_step_time_s,omitempty"`

	// AllocID is the reporting task's Nomad allocation (NOMAD_ALLOC_ID),
	// when it runs on Nomad: its TaskStepTimeS is matched to the usage the
	// driver measured of that allocation, and to nothing else.
	AllocID string `json:",omitempty" codec:"alloc_id,omitempty"`

	// BatchSize is the global batch the step used, LocalBatchSize the
	// batch one worker computed in one pass and AccumSteps the passes it
	// accumulated before the last (planner/goodput's throughput model
	// learns from them); 0 when not reported.
	BatchSize      int64 `json:",omitempty" codec:"batch_size,omitempty"`
	LocalBatchSize int64 `json:",omitempty" codec:"local_batch_size,omitempty"`
	AccumSteps     int64 `json:",omitempty" codec:"accum_steps,omitempty"`
	// GradSqr and GradVar are the trainer's estimates of the gradient
	// noise statistics at the step (AdaptDL's): GradSqr the squared norm
	// of the true gradient, GradVar the variance of the gradient averaged
	// over a batch of BatchSize samples (the trace of its covariance), so
	// that GradVar × BatchSize / GradSqr is the gradient noise scale.
	// Both 0 when not measured; a sample that reports them must report
	// BatchSize.
	GradSqr float64 `json:",omitempty" codec:"grad_sqr,omitempty"`
	GradVar float64 `json:",omitempty" codec:"grad_var,omitempty"`

	NumPS      int `codec:"num_ps"`
	NumWorkers int `codec:"num_workers"`
	// GPUType is the model of the GPUs the step ran on (Node.GPUType),
	// when the trainer or driver knows it; empty means the GPUs of the
	// job's current placement. Profiling samples name it: they measure a
	// type the job does not run on.
	GPUType string `json:",omitempty" codec:"gpu_type,omitempty"`
	// Profile marks a measurement of a profiling run beside the job's own
	// tasks (a server.TypeProfiler's, Sia §3.1): it has a speed at its
	// configuration, no progress, and no place in the order of the job's
	// steps.
	Profile bool `json:",omitempty" codec:"profile,omitempty"`
	// Time is when the step ended, Unix nanoseconds; collectors stamp it
	// when the trainer leaves it 0.
	Time int64 `codec:"time"`
}

// MaxAllocIDLen bounds a sample's AllocID (Nomad's are 36-character
// UUIDs).
const MaxAllocIDLen = 64

// MaxGPUTypeLen bounds a sample's GPUType (device names such as
// "NVIDIA A100-SXM4-40GB" are under 40 characters).
const MaxGPUTypeLen = 128

// Chief reports whether the sample is the job's own: from worker rank 0,
// or from a task that names no role. Only the chief's samples make the
// job's history (progress, loss, checkpoints); another task's sample
// reports that task's own time per step (TaskStepTimeS) and usage.
func (s *Sample) Chief() bool { return s.Role != RolePS && s.Rank == 0 }

// MaxSampleStep bounds a sample's Step and CheckpointStep: 2^53, beyond
// which steps are no longer exact as the models' floats.
const MaxSampleStep = 1 << 53

// Validate rejects samples no model should learn from: negative steps or
// counts, counts beyond the maxima of a job's (MaxTasks, MaxBatchSize,
// MaxSampleStep), NaN or infinite numbers, a negative loss or gradient statistic,
// gradient statistics without the batch they were measured at, a
// checkpoint ahead of the step. Each problem is a *FieldError named by the JSON key.
func (s *Sample) Validate() error {
	v := newValidator()
	if s.JobID == "" {
		v.missing("JobID")
	}
	switch s.Role {
	case "", RoleWorker, RolePS:
	default:
		v.fail("Role", "%q is not a role; use %q or %q", s.Role, RoleWorker, RolePS)
	}
	for _, f := range []struct {
		name string
		val  float64
	}{
		{"Epoch", s.Epoch}, {"Loss", s.Loss}, {"StepTimeS", s.StepTimeS},
		{"CPUS", s.CPUS}, {"NetS", s.NetS}, {"UsageCPUMHz", s.UsageCPUMHz},
		{"UsageMemoryMB", s.UsageMemoryMB}, {"TaskStepTimeS", s.TaskStepTimeS},
		{"GradSqr", s.GradSqr}, {"GradVar", s.GradVar},
	} {
		if math.IsNaN(f.val) || math.IsInf(f.val, 0) || f.val < 0 {
			v.fail(f.name, "%v must be a finite number, not negative", f.val)
		}
	}
	for _, f := range []struct {
		name string
		val  int64
		max  int64
	}{
		{"Rank", int64(s.Rank), MaxTasks}, {"Step", s.Step, MaxSampleStep}, {"Samples", s.Samples, math.MaxInt64},
		{"CheckpointStep", s.CheckpointStep, MaxSampleStep}, {"NumPS", int64(s.NumPS), MaxTasks},
		{"NumWorkers", int64(s.NumWorkers), MaxTasks}, {"Time", s.Time, math.MaxInt64},
		{"BatchSize", s.BatchSize, MaxBatchSize}, {"LocalBatchSize", s.LocalBatchSize, MaxBatchSize}, {"AccumSteps", s.AccumSteps, MaxBatchSize},
	} {
		switch {
		case f.val < 0:
			v.fail(f.name, "%d must not be negative", f.val)
		case f.val > f.max:
			v.fail(f.name, "%d is more than the maximum of %d", f.val, f.max)
		}
	}
	if len(s.AllocID) > MaxAllocIDLen || strings.ContainsFunc(s.AllocID, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) {
		v.fail("AllocID", "must be at most %d printable characters without spaces", MaxAllocIDLen)
	}
	if len(s.GPUType) > MaxGPUTypeLen || strings.ContainsFunc(s.GPUType, func(r rune) bool { return !unicode.IsPrint(r) }) {
		v.fail("GPUType", "must be at most %d printable characters", MaxGPUTypeLen)
	}
	if (s.GradSqr != 0 || s.GradVar != 0) && s.BatchSize == 0 {
		v.fail("BatchSize", "is needed with GradSqr and GradVar: GradVar is the variance at the step's batch")
	}
	if s.Step >= 0 && s.CheckpointStep > s.Step {
		v.fail("CheckpointStep", "%d is ahead of step %d", s.CheckpointStep, s.Step)
	}
	return v.err()
}

// ValidateTime refuses a sample whose Time is more than MaxSampleSkew
// after now, with a *FieldError on "Time" saying how far ahead it is. A
// zero Time, which receivers stamp themselves, passes.
func (s *Sample) ValidateTime(now time.Time) error {
	if s.Time <= now.UnixNano() {
		return nil
	}
	if ahead := time.Duration(s.Time - now.UnixNano()); ahead > MaxSampleSkew {
		return &FieldError{Path: "Time", Err: fmt.Errorf("is %s ahead of the receiver's clock; at most %s is allowed", ahead.Round(time.Millisecond), MaxSampleSkew)}
	}
	return nil
}
