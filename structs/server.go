package structs

import "context"

// SchedulerConfig is the replicated scheduler configuration: which algorithm
// the leader runs and its options. Every server agrees on it, and a change
// survives leader changes.
type SchedulerConfig struct {
	Algorithm string
	Options   map[string]string
	// ModifyIndex is the Raft index of the last change.
	ModifyIndex uint64
}

// Member is one Caravan server as the replicated state knows it: how to
// reach its Raft transport and its HTTP API. Followers forward writes to the
// leader's HTTPAddr.
type Member struct {
	ID       string
	Name     string
	RaftAddr string
	HTTPAddr string
	// Version is the server's version (version.Number); empty in the
	// records of servers before 0.2.0. Message types a version added are
	// written only once every server records that version or a later one.
	Version string `json:",omitempty"`
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
	// drop that sample), so that a sample later than it is new without a
	// look through them (state.AppendSamples); 0 in a row written before
	// it was kept.
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

// MaxModelGPUTypes bounds GoodputModel.ByType and MaxModelTypePoints
// each type's Points, so that a job's model, committed with every plan,
// stays small however many types and configurations it was measured on.
const (
	MaxModelGPUTypes   = 16
	MaxModelTypePoints = 32
)

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

// DriverHost is what a Caravan server offers the driver it runs, for
// drivers that take part in the rescale protocol (DESIGN.md §3): what
// trainers reported, as committed, and the replicated event history. It
// lives here rather than in the server so that drivers need not import the
// server. A driver that needs one gets it in its constructor (the
// server's Config.NewDriver).
type DriverHost interface {
	// LastSample returns the newest committed sample of a job.
	LastSample(job JobKey) (Sample, bool)
	// Event commits an event; it fails on a server that does not lead.
	Event(ctx context.Context, ev *Event) error
	// JobReportToken returns the token a job's tasks report samples with
	// (CARAVAN_TOKEN), which allows that and only that; empty when the
	// server checks no tokens.
	JobReportToken(job JobKey) string
}

// PluginStatus describes an algorithm the server can run: GET /v1/plugins
// and `caravan plugin list`.
type PluginStatus struct {
	Name    string
	Version string
	// Origin is PluginOriginBuiltin or PluginOriginExternal; Path is an
	// external plugin's binary.
	Origin string
	Path   string `json:",omitempty"`
	// APIVersion is the contract version in use.
	APIVersion  string
	SpeedModels bool
	// Health is PluginHealthy or PluginUnhealthy; Error says why it is
	// unhealthy. Restarts counts the plugin's failures, and StartSeconds
	// is how long its last start took.
	Health       string
	Error        string  `json:",omitempty"`
	Restarts     int     `json:",omitempty"`
	StartSeconds float64 `json:",omitempty"`
}

// Plugin origins and health.
const (
	PluginOriginBuiltin  = "builtin"
	PluginOriginExternal = "external"
	PluginHealthy        = "healthy"
	PluginUnhealthy      = "unhealthy"
)
