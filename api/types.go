package api

// The bodies of the HTTP API's requests and answers that are not objects of
// the cluster's state. Every body is JSON whose keys are the Go field names,
// as in Nomad's API; each type mirrors the server's own, field for field
// (types_test.go checks it).

// JobRegisterRequest is the body of POST /v1/jobs and PUT /v1/job/<id>:
// either a Job, or an HCL jobspec that the server parses with Variables.
type JobRegisterRequest struct {
	Job *Job `json:",omitempty"`
	// JobHCL is the text of a jobspec; Filename names it in diagnostics.
	JobHCL    string            `json:",omitempty"`
	Filename  string            `json:",omitempty"`
	Variables map[string]string `json:",omitempty"`
}

// JobRegisterResponse says which version was registered at which index.
type JobRegisterResponse struct {
	JobID   string
	Version uint64
	// Unchanged is true when the job was active with the same spec, as
	// Nomad's job run of an unchanged file: nothing was registered, and
	// Version is the current version.
	Unchanged bool
	// Index is the Raft index of the request: a blocking read with this
	// index waits for changes after it.
	Index uint64
}

// JobRevertRequest is the body of POST /v1/job/<id>/revert: register the
// spec of an earlier version as the job's next version, as Nomad's job
// revert. The answer is a JobRegisterResponse.
type JobRevertRequest struct {
	// Version is the version whose spec to register again.
	Version uint64
	// EnforcePriorVersion, when set, makes the revert fail with a 409
	// unless the job's current version is this one.
	EnforcePriorVersion *uint64 `json:",omitempty"`
}

// JobSummary is GET /v1/job/<id>/summary: the job, its desired placement
// (the latest decision for it) and what runs of it, what its models
// predict and how many samples it reported.
type JobSummary struct {
	Job *Job
	// Placement is the desired placement: what the latest decision gives
	// the job. Observed is what runs, as the driver last reported it, and
	// the state of the change toward the desired placement.
	Placement *JobPlacement `json:",omitempty"`
	Observed  *Observed     `json:",omitempty"`
	Model     *JobModel     `json:",omitempty"`
	// Samples counts the samples received; LastSample is the newest kept.
	Samples    int64
	LastSample *Sample `json:",omitempty"`
	// Usage is what the job's tasks use, as last committed from the
	// driver's measurements (at most every server usage interval, at once
	// on an OOM kill or restart); nil before the first.
	Usage *JobUsage `json:",omitempty"`
	// SimSpeed is set when the agent runs the simulated cluster: times
	// and durations are then virtual, passing SimSpeed times as fast as
	// the wall clock.
	SimSpeed float64 `json:",omitempty"`
	// GPUTypes is the GPU type (Node.GPUType) of each node of the desired
	// and the observed placement that has one, by node ID, as the driver
	// last reported the nodes; nil when none has.
	GPUTypes map[string]string `json:",omitempty"`
	// Queue is the queue the job's namespace maps to (issue 32); empty
	// when no queue is defined.
	Queue string `json:",omitempty"`
}

// PlanResponse is POST /v1/jobs/plan: how the job differs from its
// registered version, the placement it would get now, and the whole plan it
// would be part of. Nothing is committed.
type PlanResponse struct {
	Placement *Placement
	Plan      *Plan
	// Diff compares the job's spec with the registered version's: Type
	// Added when no job has its ID, None when the specs are the same.
	Diff *JobDiff
	// Version and Status are the registered job's; Status is empty when no
	// job has the ID.
	Version uint64
	Status  string `json:",omitempty"`
	// Current is the active job's placement now, nil when it has none.
	Current *Placement `json:",omitempty"`
	// Changed reports whether running the job would change anything: it is
	// new, it has ended (a run starts it anew), its spec differs, or the
	// scheduler would place it otherwise than now. "caravan job plan" exits
	// 1 when it is set, 0 when not.
	Changed bool
}

// AgentSelf is GET /v1/agent/self.
type AgentSelf struct {
	ID       string
	Name     string
	Version  string
	HTTPAddr string
	RaftAddr string
	// LeaderID is the server this agent knows as leader, empty if none;
	// Voters is the size of its Raft configuration.
	LeaderID string
	Voters   int
	// SimSpeed is set when the agent runs the simulated cluster: how many
	// virtual seconds pass per wall-clock second.
	SimSpeed float64 `json:",omitempty"`
	// Nomad is the Nomad cluster the agent runs jobs in; nil on the
	// simulated cluster. The CLI reads allocations and logs there.
	Nomad *NomadCluster `json:",omitempty"`
}

// NomadCluster is where an agent's Nomad driver submits jobs.
type NomadCluster struct {
	Address   string
	Region    string `json:",omitempty"`
	Namespace string `json:",omitempty"`
}

// RaftServer is one server of the Raft configuration
// (GET /v1/operator/raft/configuration).
type RaftServer struct {
	ID       string
	Name     string
	Address  string
	HTTPAddr string
	// Version is the version the server recorded (empty before 0.2.0).
	Version string
	Leader  bool
	Voter   bool
}

// RaftConfiguration is the cluster's Raft configuration.
type RaftConfiguration struct {
	Servers []*RaftServer
	Index   uint64
}

// SchedulerConfigRequest is the body of PUT
// /v1/operator/scheduler/configuration.
type SchedulerConfigRequest struct {
	Algorithm string
	Options   map[string]string
}

// JobListStub is one job of GET /v1/jobs, as Nomad's JobListStub: what a
// list shows of the job, and what runs of it.
type JobListStub struct {
	ID                string
	Name              string
	Namespace         string
	Status            string
	StatusDescription string `json:",omitempty"`
	Version           uint64
	Priority          int
	// SubmitTime is when the version was registered, Unix nanoseconds.
	SubmitTime int64
	// Declared is true for a job declared in Nomad (a Nomad job with a
	// caravan scaling policy).
	Declared bool
	// NumPS, NumWorkers, Nodes and GPUs are what runs of the job now (the
	// driver's report), or, before the first report, what the latest
	// decision gives it; GPUs counts the GPU instances its tasks request.
	NumPS      int
	NumWorkers int
	Nodes      int
	GPUs       int
	// GPUTypes are the GPU types (Node.GPUType) of the nodes of what
	// runs, sorted and without repeats; empty when none has one.
	GPUTypes []string `json:",omitempty"`
	// Step is the last step reported, TotalSteps the predicted step of
	// convergence (0 until the loss is fitted), and Progress Step /
	// TotalSteps, from 0 to 1 (1 once the job is complete).
	Step       int64
	TotalSteps float64
	Progress   float64
	// RemainingSeconds is the predicted time to convergence at the current
	// placement; 0 when unknown and once the job has ended.
	RemainingSeconds float64
	// SimSpeed is set when the agent runs the simulated cluster: times
	// and durations are then virtual, passing SimSpeed times as fast as
	// the wall clock.
	SimSpeed float64 `json:",omitempty"`
	// Algorithm is the algorithm of the latest decision for the job, and
	// Reason the reason it gave.
	Algorithm   string `json:",omitempty"`
	Reason      string `json:",omitempty"`
	CreateIndex uint64
	ModifyIndex uint64
}

// NodeDetail is GET /v1/node/<id>: the node as the driver reports it, with
// its devices, and the tasks of Caravan's jobs that run there.
type NodeDetail struct {
	Node *Node
	// Tasks are the node's tasks by job and role, as the driver last
	// reported what runs; GPUsUsed counts the GPU instances they request,
	// of GPUsTotal on the node.
	Tasks     []*NodeJobTasks
	GPUsUsed  int
	GPUsTotal int
}

// NodeJobTasks is what one job runs on a node.
type NodeJobTasks struct {
	Namespace string
	JobID     string
	PS        int
	Workers   int
	GPUs      int
}

// SchedulerConfig is the replicated scheduler configuration: which algorithm
// the leader runs and its options. Every server agrees on it, and a change
// survives leader changes.
type SchedulerConfig struct {
	Algorithm string
	Options   map[string]string
	// ModifyIndex is the Raft index of the last change.
	ModifyIndex uint64
}

// Plugin origins (PluginStatus.Origin) and health (PluginStatus.Health).
const (
	PluginOriginBuiltin  = "builtin"
	PluginOriginExternal = "external"
	PluginHealthy        = "healthy"
	PluginUnhealthy      = "unhealthy"
)

// PluginStatus describes an algorithm the agent can run: GET /v1/plugins
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
