package planner

import (
	"fmt"
	"slices"

	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/planner/model"
	"github.com/caravan-sched/caravan/structs"
)

// Algorithm decides placements. Plan must not modify the request, must be
// deterministic for the same request, and must return a placement for every
// job of the request (a paused one when the job gets nothing), each keeping
// the rules of CheckDecision. Implementations need not be safe for
// concurrent use; the leader runs one Plan at a time.
type Algorithm interface {
	// Name is the algorithm's registry name, e.g. "optimus".
	Name() string
	Plan(req *Request) (*Decision, error)
}

// Configurable is implemented by algorithms that take options, such as the
// `options` of the agent's scheduler block. SetConfig validates them all
// before it changes anything.
type Configurable interface {
	SetConfig(options map[string]string) error
}

// ModelDriven is implemented by algorithms that size jobs from their
// fitted speed models, as Optimus does. The server profiles new jobs at
// several configurations for them, in place when the driver cannot profile
// out of band; other algorithms size jobs without waiting for that.
type ModelDriven interface {
	SpeedModels() bool
}

// Factory returns a new Algorithm with its default configuration.
type Factory func() Algorithm

// Request is everything an algorithm decides from.
type Request struct {
	// Nodes are the schedulable nodes with the capacity Caravan may use:
	// their capacity less what other Nomad work holds, but including what
	// Caravan's own jobs hold now (every round re-plans the whole cluster).
	Nodes []*structs.Node
	// Jobs are the active jobs, in any order.
	Jobs []*Job
	// Now is the planning time, Unix nanoseconds.
	Now int64
}

// Job is one active job with what Caravan has learnt about it.
type Job struct {
	Job *structs.Job
	// Current is the job's placement now; nil when it is not running.
	Current *structs.Placement
	// Loss and Speed are the job's fitted models; nil until enough samples
	// arrived.
	Loss  *model.Loss
	Speed *model.Speed
	// Subtasks is the job's measured split of an iteration into
	// computation and communication (Harmony's profile); nil until
	// measured.
	Subtasks *Subtasks
	// Young marks models fitted from too little of the curve to trust fully;
	// Optimus discounts the marginal gains of such jobs.
	Young bool
	// Step is how many training steps the job has completed.
	Step float64
	// Progress is the job's recent reported training progress, the loss
	// its trainers reported and when, oldest first; nil when none was
	// reported. The server keeps a bounded window of it (the newest
	// points). SpeCon derives its progress categories from it.
	Progress []ProgressPoint
	// Usage is what the job's tasks use, as last committed; nil until
	// measured.
	Usage *structs.JobUsage
	// Since is when the job's current placement began to run, Unix
	// nanoseconds; 0 when unknown or not running. Algorithms that wait
	// between adjustments (DLRover's 60 s) read it.
	Since int64
	// AttainedService is the GPU time the job has held since the server
	// registered it, in GPU-seconds, restarts included (a job without
	// GPUs counts its tasks instead): Tiresias's attained service. The
	// scheduler accrues it at every round from the placement that ran
	// since the previous one.
	AttainedService float64
	// Perf is the job's fitted throughput model (Pollux's, planner/goodput)
	// with its quality; nil until the job's step times were measured.
	Perf *goodput.Fit
	// PerfByType is the job's throughput model per GPU type
	// (structs.Node.GPUType), each fitted to the step times measured on
	// that type alone, profiles included; nil until one was measured.
	// Perf fits all of them together, as if the GPUs were one type.
	PerfByType map[string]*goodput.Fit
	// Grad is the job's latest gradient noise statistics, at its
	// reference batch (Training.GlobalBatchSize); nil until reported.
	Grad *goodput.GradParams
	// Restarts counts the times the job was started on a new placement
	// after its first (rescaled or moved); Pollux's restart penalty
	// reads it.
	Restarts int
	// RestartCost is what a start of the job costs, in seconds: the mean
	// over its starts measured so far of the time from its placement
	// running to its first step there (checkpoint restore, warm-up); 0
	// until measured. Sia's restart factor reads it (Eq. 2's S_i).
	RestartCost float64
}

// ProgressPoint is one reported value of a job's evaluation function.
type ProgressPoint struct {
	// Time is when the step ended, Unix nanoseconds.
	Time int64
	// Loss is the reported loss (lower is better).
	Loss float64
}

// Subtasks are moving averages of a job's per-step computation and
// communication times, in seconds (samples' cpu_s and net_s), at the
// parallelism they were measured at.
type Subtasks struct {
	CPU, Net    float64
	PS, Workers int
}

// Decision is an algorithm's answer: one placement per job of the request.
type Decision struct {
	Placements []*structs.Placement
}

// DefaultEpochs is the training length assumed for a job that has neither a
// fitted loss curve nor a max_epochs cap.
const DefaultEpochs = 100

// RemainingSteps estimates how many more steps the job needs: from its loss
// curve when fitted, else from max_epochs (or DefaultEpochs). It is at least
// one step.
func (j *Job) RemainingSteps() float64 {
	t := j.Job.Training
	spe := float64(t.StepsPerEpoch)
	c := t.Convergence
	var total float64
	switch {
	case j.Loss != nil:
		total = j.Loss.StepsToConverge(c.Threshold, c.Patience, spe, float64(c.MaxEpochs))
	case c.MaxEpochs > 0:
		total = float64(c.MaxEpochs) * spe
	default:
		total = DefaultEpochs * spe
	}
	return max(total-j.Step, 1)
}

// HasPS reports whether the job's architecture uses parameter servers.
func (j *Job) HasPS() bool { return j.Job.Training.Architecture == structs.ArchitecturePS }

// PSRole returns the template the job's parameter servers run: its
// parameter_server role, else its worker role.
func (j *Job) PSRole() *structs.Role {
	if j.Job.ParameterServer != nil {
		return j.Job.ParameterServer
	}
	return j.Job.Worker
}

// Bounds returns the job's (ps, workers) bounds; ps bounds are zero for
// all-reduce jobs.
func (j *Job) Bounds() (ps, workers structs.Bounds) {
	if j.HasPS() && j.Job.Elastic.ParameterServers != nil {
		ps = *j.Job.Elastic.ParameterServers
	}
	return ps, j.Job.Elastic.Workers
}

// Minimum returns the smallest shape the job runs at: its minimum workers
// and, for a PS job, its minimum parameter servers, at least one of each.
func (j *Job) Minimum() structs.Shape {
	ps, workers := j.Bounds()
	m := structs.Shape{Workers: max(workers.Min, 1)}
	if j.HasPS() {
		m.PS = max(ps.Min, 1)
	}
	return m
}

// Paused returns a placement that runs nothing of job j, with a reason.
func Paused(j *Job, reason string) *structs.Placement {
	return &structs.Placement{Namespace: j.Job.Namespace, JobID: j.Job.ID, Reason: reason}
}

// FixedRequest is the size at which policies that do not rescale (fifo,
// tetris) run a job: its elastic maximum, what a user would hand-pick today.
func (j *Job) FixedRequest() (ps, workers int) {
	psb, wb := j.Bounds()
	return psb.Max, wb.Max
}

// KeepCurrent takes from c the capacity of a job's current placement cur
// and returns a copy of it, when cur runs exactly ps parameter servers and
// w workers and its tasks t, at the sizes cur gives them, still fit where
// they are. Otherwise it takes
// nothing and returns nil. Policies use it to leave running jobs alone.
func (c *Cluster) KeepCurrent(cur *structs.Placement, t JobTasks, ps, w int) *structs.Placement {
	if cur == nil || cur.Paused() || cur.NumPS != ps || cur.NumWorkers != w {
		return nil
	}
	// Entries are checked one by one against the free capacity; a node
	// that holds several entries (of different sizes) is checked on a
	// copy that takes each in turn, so that together they must fit.
	check := c
	for k := 1; k < len(cur.Nodes); k++ {
		if cur.Nodes[k].NodeID == cur.Nodes[k-1].NodeID {
			check = c.Clone()
			break
		}
	}
	idx := make([]int, len(cur.Nodes))
	for k, nt := range cur.Nodes {
		i, ok := check.NodeIndex(nt.NodeID)
		ps, worker := t.For(nt)
		if !ok || !check.FitsPair(i, ps, nt.PS, worker, nt.Workers) {
			return nil
		}
		if check != c {
			if nt.PS > 0 {
				check.Take(i, ps, nt.PS)
			}
			check.Take(i, worker, nt.Workers)
		}
		idx[k] = i
	}
	for k, nt := range cur.Nodes {
		ps, worker := t.For(nt)
		if nt.PS > 0 {
			c.Take(idx[k], ps, nt.PS)
		}
		c.Take(idx[k], worker, nt.Workers)
	}
	kept := *cur
	kept.Nodes = slices.Clone(cur.Nodes)
	return &kept
}

// KeepFixed leaves in place every running job whose placement is its fixed
// request and still fits, for policies that run jobs at their request and
// never preempt them. It returns those placements, with a reason naming the
// policy (nil for the other jobs), and every job's tasks, both indexed like
// jobs.
func KeepFixed(c *Cluster, jobs []*Job, policy string) ([]*structs.Placement, []JobTasks) {
	out := make([]*structs.Placement, len(jobs))
	tasks := make([]JobTasks, len(jobs))
	for i, j := range jobs {
		tasks[i] = c.JobTasks(j)
		ps, w := j.FixedRequest()
		if kept := c.KeepCurrent(j.Current, tasks[i], ps, w); kept != nil {
			kept.Reason = fmt.Sprintf("%s: running at its request of %s", policy, structs.Shape{PS: ps, Workers: w})
			out[i] = kept
		}
	}
	return out, tasks
}
