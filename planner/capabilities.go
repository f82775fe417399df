package planner

import "slices"

// Estimator names one of the estimates the server keeps of every job and
// hands an algorithm in Job. An algorithm declares those it reads
// (Capabilities.Reads), so that the host knows what it plans from without
// knowing its name.
type Estimator string

const (
	// EstimatorLoss is Job.Loss, the fitted loss curve, from which
	// Job.RemainingSteps predicts the steps left.
	EstimatorLoss Estimator = "loss"
	// EstimatorSpeed is Job.Speed, the fitted speed model, and Job.Young.
	EstimatorSpeed Estimator = "speed"
	// EstimatorSubtasks is Job.Subtasks, the measured computation and
	// communication time of a step.
	EstimatorSubtasks Estimator = "subtasks"
	// EstimatorProgress is Job.Progress, the recent reported losses.
	EstimatorProgress Estimator = "progress"
	// EstimatorUsage is Job.Usage, what the job's tasks use.
	EstimatorUsage Estimator = "usage"
	// EstimatorAttainedService is Job.AttainedService, the GPU time the
	// job has held.
	EstimatorAttainedService Estimator = "attained_service"
	// EstimatorGoodput is Job.Perf and Job.Grad, Pollux's throughput model
	// and gradient noise statistics.
	EstimatorGoodput Estimator = "goodput"
)

// Estimators lists every estimator the server keeps.
var Estimators = []Estimator{
	EstimatorLoss, EstimatorSpeed, EstimatorSubtasks, EstimatorProgress,
	EstimatorUsage, EstimatorAttainedService, EstimatorGoodput,
}

// Capabilities are what an algorithm declares of how it decides, under the
// options in force: the host (the server's round, the simulator) reads
// them instead of the algorithm's name, so that a plugin declaring the same
// as a built-in is treated as that built-in is. The zero value declares an
// algorithm that reads only the jobs' specs and placements and sizes jobs
// within their elastic bounds.
type Capabilities struct {
	// Reads are the estimators Plan reads, in any order. Names the host
	// does not know are ignored.
	Reads []Estimator
	// SpeedModels: Plan sizes jobs from their fitted speed models, so the
	// server profiles new jobs for it (ModelDriven).
	SpeedModels bool
	// FixedSize: Plan runs every job at its fixed request
	// (Job.FixedRequest) or not at all, never elsewhere within its
	// elastic bounds. The simulator submits such a policy's jobs at that
	// request (sim.Arrival.FixedJob), as a user would pick it.
	FixedSize bool
	// ChoosesBatch: Plan chooses each job's batch size within its
	// training batch_size bounds (structs.Placement.Batch). The simulator
	// runs a workload's jobs as adaptive jobs where it has them.
	ChoosesBatch bool
	// Uncoordinated: jobs that Plan puts together on a node run without
	// Caravan's node-local subtask coordinator, because comparing with
	// coordinated co-location is the algorithm's point (the naively
	// co-located baseline). The simulator runs them so.
	Uncoordinated bool
	// GPUTypes: Plan places jobs on a mixed fleet from a throughput
	// model per GPU type (Job.PerfByType), as Sia does. The server has
	// each new job profiled on one GPU of every type, at the batches that
	// fit it (Sia §3.1), where its driver can (server.TypeProfiler).
	GPUTypes bool
}

// ReadsEstimator reports whether the algorithm reads estimator e.
func (c Capabilities) ReadsEstimator(e Estimator) bool { return slices.Contains(c.Reads, e) }

// Describer is implemented by algorithms that declare their capabilities.
// Capabilities describes the algorithm under the options last set
// (Configurable): a declaration may depend on them, as SpeCon's does on
// its base. It must be cheap and must not fail.
type Describer interface {
	Capabilities() Capabilities
}

// CapabilitiesOf returns what alg declares: its Capabilities when it is a
// Describer; otherwise only SpeedModels, from ModelDriven, and nothing
// else.
func CapabilitiesOf(alg Algorithm) Capabilities {
	if d, ok := alg.(Describer); ok {
		return d.Capabilities()
	}
	md, ok := alg.(ModelDriven)
	return Capabilities{SpeedModels: ok && md.SpeedModels()}
}
