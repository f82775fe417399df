package api

// The sources of a TaskUsage (TaskUsage.Source).
const (
	UsageSourceNomad  = "nomad"  // the Nomad driver, from the allocation stats API
	UsageSourceSim    = "sim"    // the sim driver's ground truth
	UsageSourceSample = "sample" // the trainer's own samples
)

// Sample is one progress report from a training task. A sample describes
// the step it names: the loss after it, how long it took, and under which
// configuration (NumPS, NumWorkers) it ran. Its JSON keys are its field
// names, as everywhere in Caravan's API and files; the server also takes
// the trainers' snake_case keys in a report, but this type decodes only
// the field names it answers with.
type Sample struct {
	Namespace string `json:",omitempty"`
	JobID     string
	// Role is RoleWorker or RolePS; Rank numbers tasks within a role from 0.
	Role string `json:",omitempty"`
	Rank int

	Step  int64
	Epoch float64
	Loss  float64
	// StepTimeS is the wall time of the step in seconds; 0 when not measured.
	StepTimeS float64
	// Samples is how many training samples the step processed.
	Samples int64
	// CPUS and NetS split the step time into computation and communication
	// (Harmony's subtask times), in seconds; 0 when not measured.
	CPUS float64
	NetS float64
	// CheckpointStep is the step of the latest checkpoint the task has
	// written; 0 means none.
	CheckpointStep int64

	// UsageCPUMHz and UsageMemoryMB are what the reporting task itself
	// uses, when the trainer measures it; TaskStepTimeS is its own time
	// per local step in seconds (StepTimeS stays the job's). 0 when not
	// measured.
	UsageCPUMHz   float64 `json:",omitempty"`
	UsageMemoryMB float64 `json:",omitempty"`
	TaskStepTimeS float64 `json:",omitempty"`

	// AllocID is the reporting task's Nomad allocation (NOMAD_ALLOC_ID),
	// when it runs on Nomad: its TaskStepTimeS is matched to the usage the
	// driver measured of that allocation, and to nothing else.
	AllocID string `json:",omitempty"`

	// BatchSize is the global batch the step used, LocalBatchSize the
	// batch one worker computed in one pass and AccumSteps the passes it
	// accumulated before the last (planner/goodput's throughput model
	// learns from them); 0 when not reported.
	BatchSize      int64 `json:",omitempty"`
	LocalBatchSize int64 `json:",omitempty"`
	AccumSteps     int64 `json:",omitempty"`
	// GradSqr and GradVar are the trainer's estimates of the gradient
	// noise statistics at the step (AdaptDL's): GradSqr the squared norm
	// of the true gradient, GradVar the variance of the gradient averaged
	// over a batch of BatchSize samples (the trace of its covariance), so
	// that GradVar × BatchSize / GradSqr is the gradient noise scale.
	// Both 0 when not measured; a sample that reports them must report
	// BatchSize.
	GradSqr float64 `json:",omitempty"`
	GradVar float64 `json:",omitempty"`

	NumPS      int
	NumWorkers int
	// GPUType is the model of the GPUs the step ran on (Node.GPUType),
	// when the trainer or driver knows it; empty means the GPUs of the
	// job's current placement.
	GPUType string `json:",omitempty"`
	// Profile marks a measurement of a profiling run beside the job's
	// own tasks: a speed on GPUType, with no progress.
	Profile bool `json:",omitempty"`
	// Time is when the step ended, Unix nanoseconds; collectors stamp it
	// when the trainer leaves it 0.
	Time int64
}

// JobSamples is the bounded history of a job's samples kept for fitting.
// When it is full the older half is thinned to every other sample, so it
// spans the whole run with more detail on recent steps.
type JobSamples struct {
	Namespace string
	JobID     string
	// Run is the index that started the run of the job the samples are
	// of (Job.CreateIndex); 0 in entries of servers before 0.2.0.
	Run uint64 `json:",omitempty"`
	// Samples is the chief's history (Sample.Chief), thinned when full.
	Samples []Sample
	// Received counts every chief sample ever accepted for the job.
	Received int64
	// Newest is no earlier than the latest Time in Samples (thinning may
	// drop that sample); 0 in a row written before it was kept.
	Newest int64 `json:",omitempty"`
	// Tasks holds the latest sample of each other task (a worker of rank
	// 1 and up, a parameter server), by role and then rank: their own
	// time per step and usage, not the job's progress.
	Tasks []Sample `json:",omitempty"`
}

// JobModel is the leader's fitted models of a job, committed with each plan
// so that every server can show them.
type JobModel struct {
	Namespace string
	JobID     string
	// Loss holds (b0, b1, b2) of l = 1/(b0·k + b1) + b2, k in steps; empty
	// until fitted.
	Loss []float64
	// SpeedKind is "async", "sync" or "allreduce" and Speed the θ of that
	// speed function; empty until fitted.
	SpeedKind string
	Speed     []float64
	// Step is the last step reported. TotalSteps is the predicted step of
	// convergence (0 until the loss is fitted); StepsPerSecond is the
	// predicted speed at the job's placement.
	Step           int64
	TotalSteps     float64
	StepsPerSecond float64
	// RemainingSeconds is the predicted time to convergence at the current
	// placement; 0 when unknown.
	RemainingSeconds float64
	// The fits' quality: LossRMSE is the loss fit's root-mean-square
	// residual, as a fraction of the largest loss; SpeedError is the speed
	// fit's mean relative error over the configurations measured, and
	// SpeedConfigs how many there are. Zero until fitted.
	LossRMSE     float64
	SpeedError   float64
	SpeedConfigs int
	// Goodput is the job's goodput model (Pollux's, planner/goodput); nil
	// until its throughput was fitted.
	Goodput *GoodputModel `json:",omitempty"`
	// Profiling lists the (ps, workers) configurations the job is still
	// to be profiled at by running there, the first being the one it is
	// pinned to now; empty once profiled or when it needs no profiling.
	Profiling []Shape `json:",omitempty"`
}

// GoodputModel is what a job's fitted goodput model says.
type GoodputModel struct {
	// Perf holds Pollux's throughput parameters α_c, β_c (compute time
	// α_c + β_c·local batch), α_n, β_n (network time across nodes
	// α_n + β_n·(replicas − 2)), α_r, β_r (within a node) and γ (their
	// overlap), in seconds.
	Perf []float64
	// FitError and MaxFitError are the mean and largest relative error
	// of the predicted step time over the Configs configurations
	// measured.
	FitError, MaxFitError float64
	Configs               int
	// NoiseScale is the gradient noise scale in samples (3 significant
	// digits), 0 until reported; RefBatch the batch it is relative to.
	NoiseScale float64
	RefBatch   int
	// Batch is the global batch of the job's placement, Efficiency its
	// statistical efficiency and Goodput the predicted goodput there, in
	// samples a second at the reference batch; 0 when not running.
	Batch      int
	Efficiency float64
	Goodput    float64
	// ByType is the throughput model of each GPU type the job was
	// measured on alone, fitted to that type's step times, sorted by type
	// (at most MaxModelGPUTypes); empty on a fleet without GPU types.
	ByType []GPUTypeModel `json:",omitempty"`
}

// GPUTypeModel is a job's throughput model on one GPU type
// (GoodputModel.ByType) against the step times measured there.
type GPUTypeModel struct {
	// Type is the GPU type (Node.GPUType).
	Type string
	// Perf, FitError and MaxFitError are as GoodputModel's, of this
	// type's fit alone.
	Perf                  []float64
	FitError, MaxFitError float64
	// Configs counts the configurations measured on the type, and Points
	// are they, sorted by nodes, replicas and local batch: the first
	// MaxModelTypePoints of them when there are more.
	Configs int
	Points  []PerfPoint
}

// PerfPoint is one configuration a job was measured at, with the step
// time measured there and the one the throughput model predicts.
type PerfPoint struct {
	// Replicas replicas over Nodes nodes, each computing LocalBatch
	// samples a pass.
	Nodes, Replicas, LocalBatch int
	// StepTimeS is the mean time of the synchronising pass measured
	// (without the accumulation passes before it) and ModelStepTimeS the
	// model's for it, in seconds.
	StepTimeS, ModelStepTimeS float64
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
