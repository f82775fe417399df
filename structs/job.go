package structs

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Architectures of distributed training.
const (
	// ArchitecturePS is a parameter-server job: workers push gradients to and
	// pull parameters from parameter servers.
	ArchitecturePS = "ps"
	// ArchitectureAllReduce is a job whose workers exchange gradients with
	// each other (ring or tree all-reduce); it has no parameter servers.
	ArchitectureAllReduce = "allreduce"
)

// Launchers of a job's tasks (Training.Launcher).
const (
	// LauncherNone runs the worker's command as it is: the task implements
	// Caravan's task contract itself (examples/trainer).
	LauncherNone = ""
	// LauncherTorchrun runs each worker as one torchrun agent (node) of an
	// elastic DDP job: the driver gives every task of a generation the
	// same rendezvous (endpoint, id, node count) through environment
	// variables, and caravan_torch's wrapper turns them into torchrun's
	// flags (drivers/nomad/README.md). It needs ArchitectureAllReduce.
	LauncherTorchrun = "torchrun"
)

// Training modes.
const (
	// ModeSync waits for every worker at each step; the global batch is split
	// evenly across workers.
	ModeSync = "sync"
	// ModeAsync lets every worker step on its own with its own batch.
	ModeAsync = "async"
)

// Role names, as tasks see them in CARAVAN_ROLE. In a jobspec the roles are
// the blocks "worker" and "parameter_server".
const (
	RoleWorker = "worker"
	RolePS     = "ps"
)

// psBlock is the jobspec block, and the validation path, of the PS role.
const psBlock = "parameter_server"

// Defaults filled by Canonicalize.
const (
	DefaultNamespace         = "default"
	DefaultPriority          = 50
	DefaultWeight            = 1.0
	DefaultThreshold         = 0.02
	DefaultPatience          = 3
	DefaultCheckpointSignal  = "SIGUSR1"
	DefaultCheckpointTimeout = 2 * time.Minute
	DefaultCPU               = 100 // MHz, as Nomad's task default
	DefaultMemoryMB          = 300 // MB, as Nomad's task default
)

// MaxIDLength bounds a job ID. Caravan derives Nomad job and group names from
// it, so it must stay well under Nomad's own limits.
const MaxIDLength = 128

var validID = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// validNamespace is Nomad's rule for namespace names: letters, digits and
// dashes, so a namespace is never a path ("..", "a/b") where it is joined
// into one.
var validNamespace = regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`)

// Maxima of a job's numbers. No job on any cluster needs more, and under
// them every validation and planning step over a job's numbers is bounded
// by construction, not by a timer: no loop runs more than MaxTasks (or
// MaxSpeeds) times per job, and no product of two of them overflows an int.
// Job.Validate refuses a number beyond them, naming the field (the jobspec
// reports it at its file:line:col).
const (
	// MaxTasks bounds a role's task count (elastic.workers.max,
	// elastic.parameter_servers.max and the speed priors' counts): the
	// largest data-parallel runs published used 16,384 accelerators
	// (Llama 3 405B), one worker each.
	MaxTasks = 16_384
	// MaxBatchSize bounds global and local batch sizes, in samples: 2^24,
	// above the largest published (16M tokens a step for Llama 3; 64K to
	// 82K samples for LAMB on BERT and ImageNet).
	MaxBatchSize = 1 << 24
	// MaxStepsPerEpoch bounds training.steps_per_epoch: 2^30 (LAION-2B at
	// a batch of 2), far below 2^53, where steps stop being exact floats.
	MaxStepsPerEpoch = 1 << 30
	// MaxEpochs bounds convergence.max_epochs; MaxPatience
	// convergence.patience.
	MaxEpochs   = 100_000
	MaxPatience = 10_000
	// MaxSpeeds bounds how many speed priors a job declares.
	MaxSpeeds = 256
	// MaxTaskCPU (MHz) and MaxTaskMemoryMB bound a task's resources and
	// their ranges, as MaxUsageCPUMHz and MaxUsageMemoryMB bound what a
	// task is measured to use.
	MaxTaskCPU      = MaxUsageCPUMHz
	MaxTaskMemoryMB = MaxUsageMemoryMB
	// MaxDeviceCount bounds one device request's count (the largest nodes
	// have 8 to 16 GPUs; an NVL72 domain 72), MaxDeviceRequests a role's
	// device requests.
	MaxDeviceCount    = 1024
	MaxDeviceRequests = 16
	// MaxCheckpointTimeout bounds elastic.checkpoint.timeout: a rescale
	// waits at most this long for a checkpoint.
	MaxCheckpointTimeout = 24 * time.Hour
	// MaxCheckpointInterval bounds elastic.checkpoint.interval.
	MaxCheckpointInterval = 7 * 24 * time.Hour
)

// atMost fails field when n is above limit, naming the limit.
func atMost(v validator, field string, n, limit int) {
	if n > limit {
		v.fail(field, "%d is more than the maximum of %d", n, limit)
	}
}

// Bounds of a job's and a role's meta and env maps.
const (
	MaxMapKeys        = 256
	MaxMapKeyLength   = 256
	MaxMapValueLength = 16 << 10
)

// validateMap checks one meta or env map against the bounds above.
func validateMap(v validator, name string, m map[string]string) {
	if len(m) > MaxMapKeys {
		v.fail(name, "%d keys is more than %d", len(m), MaxMapKeys)
	}
	for _, k := range sortedKeys(m) {
		switch {
		case k == "":
			v.fail(name, "keys must not be empty")
		case len(k) > MaxMapKeyLength:
			v.fail(name, "key %.32q... is longer than %d bytes", k, MaxMapKeyLength)
		case !utf8.ValidString(k) || strings.ContainsRune(k, 0):
			v.fail(name, "key %q is not valid UTF-8 without NUL", k)
		case len(m[k]) > MaxMapValueLength:
			v.fail(name+"."+k, "value of %d bytes is longer than %d", len(m[k]), MaxMapValueLength)
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

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
	// carry a caravan scaling policy (see jobspec.FromNomad), and nil for
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
	// ModifyTime is when the record last changed (Unix nanoseconds, the
	// time the leader stamped on the entry that changed it): for a job
	// that ended, when it ended, which the job garbage collector ages it
	// by. 0 for a record last written by a server before it was added.
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
	Template json.RawMessage `diff:"-"`
}

// MaxNomadTemplate bounds NomadSource.Template.
const MaxNomadTemplate = 1 << 20

// Training describes how the job trains and when it is done.
type Training struct {
	// Framework is a free-form label ("pytorch", "tensorflow").
	Framework    string
	Architecture string // ArchitecturePS or ArchitectureAllReduce
	Mode         string // ModeSync or ModeAsync
	// Launcher is how the worker tasks start: LauncherNone (the default)
	// or LauncherTorchrun, one torchrun agent per worker task with a
	// rendezvous per generation. A torchrun job defaults to, and needs,
	// ArchitectureAllReduce.
	Launcher string `json:",omitempty"`
	// GlobalBatchSize is the number of samples per step across all workers.
	// In sync mode it is kept constant across rescales and each worker gets
	// GlobalBatchSize / workers. For a job with BatchSize bounds it is the
	// batch the job starts at and the reference batch of its statistical
	// efficiency (Pollux's initial batch size); it defaults to
	// BatchSize.Min.
	GlobalBatchSize int
	// BatchSize, when set, lets the planner choose the job's global batch
	// size within bounds, as Pollux does (planner/goodput); nil keeps
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

// LocalBounds returns the local batch bounds with their defaults filled.
func (b *BatchSize) LocalBounds() (lo, hi int) {
	lo, hi = b.MinLocal, b.MaxLocal
	if lo == 0 {
		lo = 1
	}
	if hi == 0 {
		hi = b.Max
	}
	return lo, hi
}

func (b *BatchSize) validate(v validator, global int) {
	Bounds{Min: b.Min, Max: b.Max}.validate(v, MaxBatchSize)
	atMost(v, "min_local", b.MinLocal, MaxBatchSize)
	atMost(v, "max_local", b.MaxLocal, MaxBatchSize)
	if b.MinLocal < 0 {
		v.fail("min_local", "%d must not be negative (0 means 1)", b.MinLocal)
	}
	if b.MaxLocal < 0 {
		v.fail("max_local", "%d must not be negative (0 means max)", b.MaxLocal)
	}
	if lo, hi := b.LocalBounds(); b.MinLocal >= 0 && b.MaxLocal >= 0 && lo > hi {
		v.fail("min_local", "%d is greater than max_local (%d)", lo, hi)
	}
	if b.MinLocal > b.Max && b.Max >= 1 {
		v.fail("min_local", "%d is greater than max (%d): no worker could take a batch", b.MinLocal, b.Max)
	}
	if global > 0 && b.Min <= b.Max && (global < b.Min || global > b.Max) {
		v.fail("min", "global_batch_size (%d) is outside [%d, %d]; the job starts at global_batch_size, so it must lie within the bounds", global, b.Min, b.Max)
	}
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

// Contains reports whether n lies within the bounds.
func (b Bounds) Contains(n int) bool { return n >= b.Min && n <= b.Max }

// Checkpoint is how Caravan asks a job's tasks to checkpoint before a rescale.
type Checkpoint struct {
	// Signal is sent to every task of the job, e.g. "SIGUSR1".
	Signal string
	// Timeout bounds the wait for the checkpoint to be reported; a rescale
	// whose checkpoint is not confirmed in time is not applied. It is also
	// how long a task may take to stop: the time its chief has to write a
	// checkpoint when stopped (the Nomad tasks' kill_timeout).
	Timeout time.Duration
	// Interval, when positive, has the job's chief checkpoint that often
	// besides when asked (CARAVAN_CHECKPOINT_INTERVAL); 0 means only when
	// asked and when stopped.
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

// Canonicalize fills defaults in place. It is idempotent and safe on a
// partially filled job; it never removes anything the user set.
func (j *Job) Canonicalize() {
	if j.Name == "" {
		j.Name = j.ID
	}
	if j.Namespace == "" {
		j.Namespace = DefaultNamespace
	}
	if len(j.Datacenters) == 0 {
		j.Datacenters = []string{"*"}
	}
	if j.Priority == 0 {
		j.Priority = DefaultPriority
	}
	if j.Weight == 0 {
		j.Weight = DefaultWeight
	}
	if j.Training != nil {
		j.Training.canonicalize()
	}
	if j.Elastic != nil {
		j.Elastic.canonicalize(j.architecture())
	}
	if j.Worker != nil {
		j.Worker.canonicalize(RoleWorker)
	}
	if j.ParameterServer != nil {
		j.ParameterServer.canonicalize(RolePS)
	}
	canonicalizeRules(j.Constraints, j.Affinities)
}

func (j *Job) architecture() string {
	if j.Training == nil {
		return ""
	}
	return j.Training.Architecture
}

func (t *Training) canonicalize() {
	if t.BatchSize != nil && t.GlobalBatchSize == 0 {
		t.GlobalBatchSize = t.BatchSize.Min
	}
	if t.Architecture == "" {
		t.Architecture = ArchitecturePS
		if t.Launcher == LauncherTorchrun {
			t.Architecture = ArchitectureAllReduce
		}
	}
	if t.Mode == "" {
		t.Mode = ModeSync
	}
	if t.Convergence == nil {
		t.Convergence = &Convergence{}
	}
	if t.Convergence.Threshold == 0 {
		t.Convergence.Threshold = DefaultThreshold
	}
	if t.Convergence.Patience == 0 {
		t.Convergence.Patience = DefaultPatience
	}
}

func (e *Elastic) canonicalize(arch string) {
	if e.Workers.Min == 0 {
		e.Workers.Min = 1
	}
	if e.Workers.Max == 0 {
		e.Workers.Max = e.Workers.Min
	}
	if arch == ArchitecturePS && e.ParameterServers == nil {
		e.ParameterServers = &Bounds{Min: 1, Max: e.Workers.Max}
	}
	if ps := e.ParameterServers; ps != nil {
		if ps.Min == 0 {
			ps.Min = 1
		}
		if ps.Max == 0 {
			ps.Max = ps.Min
		}
	}
	if e.Checkpoint == nil {
		e.Checkpoint = &Checkpoint{}
	}
	if e.Checkpoint.Signal == "" {
		e.Checkpoint.Signal = DefaultCheckpointSignal
	}
	if e.Checkpoint.Timeout == 0 {
		e.Checkpoint.Timeout = DefaultCheckpointTimeout
	}
}

func (r *Role) canonicalize(name string) {
	r.Name = name
	if r.Resources == nil {
		r.Resources = &Resources{}
	}
	r.Resources.Canonicalize()
	canonicalizeRules(r.Constraints, r.Affinities)
}

// Validate reports every problem of a canonicalized job as a join of
// *FieldError. It returns nil for a valid job and never modifies it.
func (j *Job) Validate() error {
	v := newValidator()
	switch {
	case j.ID == "":
		v.missing("id")
	case len(j.ID) > MaxIDLength:
		v.fail("id", "%q is longer than %d characters", j.ID, MaxIDLength)
	case !validID.MatchString(j.ID):
		v.fail("id", "%q must start with a letter or digit and contain only letters, digits, '_', '.' and '-'", j.ID)
	}
	if !validNamespace.MatchString(j.Namespace) {
		v.fail("namespace", "%q must be 1 to 128 letters, digits and dashes, as Nomad's namespace names", j.Namespace)
	}
	validateMap(v, "meta", j.Meta)
	if j.Priority < 1 || j.Priority > 100 {
		v.fail("priority", "%d is out of range; it must be between 1 and 100", j.Priority)
	}
	if !(j.Weight > 0) || math.IsInf(j.Weight, 0) {
		v.fail("weight", "%v must be a positive finite number", j.Weight)
	}
	for i, dc := range j.Datacenters {
		if dc == "" {
			v.fail(fmt.Sprintf("datacenters[%d]", i), "must not be empty")
		}
	}
	validateConstraints(v, j.Constraints, false)
	validateAffinities(v, j.Affinities)

	if j.Training == nil {
		v.missing("training")
	} else {
		j.Training.validate(v.at("training"))
	}
	if j.Elastic == nil {
		v.missing("elastic")
	} else {
		j.Elastic.validate(v.at("elastic"), j.architecture())
	}
	if j.Training != nil && j.Elastic != nil {
		validateBatchSplit(v, j.Training, j.Elastic)
	}

	if j.Worker == nil {
		v.missing(RoleWorker)
	} else {
		j.Worker.validate(v.at(RoleWorker))
	}
	if j.ParameterServer != nil {
		if j.architecture() == ArchitectureAllReduce {
			v.fail(psBlock, "an allreduce job has no parameter servers; remove this block or set training.architecture = %q", ArchitecturePS)
		} else {
			j.ParameterServer.validate(v.at(psBlock))
		}
	}
	if n := j.Nomad; n != nil {
		n.validate(v.at("nomad"))
	}
	return v.err()
}

func (n *NomadSource) validate(v validator) {
	if len(n.Template) > MaxNomadTemplate {
		v.fail("template", "%d bytes is more than %d", len(n.Template), MaxNomadTemplate)
	}
	if n.Groups[RoleWorker] == "" {
		v.fail("groups", "no group has role %q", RoleWorker)
	}
}

func (t *Training) validate(v validator) {
	switch t.Architecture {
	case ArchitecturePS, ArchitectureAllReduce:
	default:
		v.fail("architecture", "%q is not an architecture; use %q or %q", t.Architecture, ArchitecturePS, ArchitectureAllReduce)
	}
	switch t.Launcher {
	case LauncherNone:
	case LauncherTorchrun:
		if t.Architecture == ArchitecturePS {
			v.fail("launcher", "the torchrun launcher runs all-reduce (DDP) training, which has no parameter servers; set architecture = %q", ArchitectureAllReduce)
		}
	default:
		v.fail("launcher", "%q is not a launcher; use %q or leave it out", t.Launcher, LauncherTorchrun)
	}
	switch t.Mode {
	case ModeSync:
	case ModeAsync:
		if t.Architecture == ArchitectureAllReduce {
			v.fail("mode", "all-reduce training is synchronous; use mode = %q or architecture = %q", ModeSync, ArchitecturePS)
		}
	default:
		v.fail("mode", "%q is not a training mode; use %q or %q", t.Mode, ModeSync, ModeAsync)
	}
	switch {
	case t.GlobalBatchSize == 0:
		v.missing("global_batch_size")
	case t.GlobalBatchSize < 0:
		v.fail("global_batch_size", "%d must be positive", t.GlobalBatchSize)
	}
	atMost(v, "global_batch_size", t.GlobalBatchSize, MaxBatchSize)
	if t.BatchSize != nil {
		t.BatchSize.validate(v.at("batch_size"), t.GlobalBatchSize)
		if t.Mode == ModeAsync {
			v.fail("batch_size", "adaptive batch sizes need synchronous training; use mode = %q or remove batch_size", ModeSync)
		}
	}
	switch {
	case t.StepsPerEpoch == 0:
		v.missing("steps_per_epoch")
	case t.StepsPerEpoch < 0:
		v.fail("steps_per_epoch", "%d must be positive", t.StepsPerEpoch)
	}
	atMost(v, "steps_per_epoch", t.StepsPerEpoch, MaxStepsPerEpoch)
	if len(t.Speeds) > MaxSpeeds {
		v.fail("speed", "%d speed priors are more than the maximum of %d", len(t.Speeds), MaxSpeeds)
	}
	for i, sp := range t.Speeds {
		sv := v.at(fmt.Sprintf("speed[%d]", i))
		if sp.Workers < 1 {
			sv.fail("workers", "%d must be at least 1", sp.Workers)
		}
		atMost(sv, "workers", sp.Workers, MaxTasks)
		atMost(sv, "ps", sp.PS, MaxTasks)
		if t.Architecture == ArchitectureAllReduce && sp.PS != 0 {
			sv.fail("ps", "an allreduce job has no parameter servers; leave ps out")
		} else if t.Architecture != ArchitectureAllReduce && sp.PS < 1 {
			sv.fail("ps", "%d must be at least 1 for a parameter-server job", sp.PS)
		}
		if !(sp.StepsPerSecond > 0) || math.IsInf(sp.StepsPerSecond, 0) {
			sv.fail("steps_per_second", "%v must be a positive number", sp.StepsPerSecond)
		}
	}
	if c := t.Convergence; c != nil {
		cv := v.at("convergence")
		if !(c.Threshold > 0 && c.Threshold < 1) {
			cv.fail("threshold", "%v must be between 0 and 1 (a relative loss decrease per epoch)", c.Threshold)
		}
		if c.Patience < 1 {
			cv.fail("patience", "%d must be at least 1", c.Patience)
		}
		atMost(cv, "patience", c.Patience, MaxPatience)
		if c.MaxEpochs < 0 {
			cv.fail("max_epochs", "%d must not be negative (0 means no cap)", c.MaxEpochs)
		}
		atMost(cv, "max_epochs", c.MaxEpochs, MaxEpochs)
	}
}

func (e *Elastic) validate(v validator, arch string) {
	e.Workers.validate(v.at("workers"), MaxTasks)
	if e.ParameterServers != nil {
		if arch == ArchitectureAllReduce {
			v.fail("parameter_servers", "an allreduce job has no parameter servers; remove this block or set training.architecture = %q", ArchitecturePS)
		} else {
			e.ParameterServers.validate(v.at("parameter_servers"), MaxTasks)
		}
	}
	if c := e.Checkpoint; c != nil {
		cv := v.at("checkpoint")
		if !IsSignal(c.Signal) {
			cv.fail("signal", "%q is not a signal name; use one such as %q or %q", c.Signal, "SIGUSR1", "SIGTERM")
		}
		if c.Timeout <= 0 {
			cv.fail("timeout", "%v must be positive", c.Timeout)
		}
		if c.Timeout > MaxCheckpointTimeout {
			cv.fail("timeout", "%v is more than the maximum of %v", c.Timeout, MaxCheckpointTimeout)
		}
		if c.Interval < 0 {
			cv.fail("interval", "%v must be positive (leave it out to checkpoint only when asked)", c.Interval)
		}
		if c.Interval > MaxCheckpointInterval {
			cv.fail("interval", "%v is more than the maximum of %v", c.Interval, MaxCheckpointInterval)
		}
	}
}

// validate checks that 1 <= Min <= Max <= limit.
func (b Bounds) validate(v validator, limit int) {
	if b.Min < 1 {
		v.fail("min", "%d must be at least 1", b.Min)
	}
	if b.Max < 1 {
		v.fail("max", "%d must be at least 1", b.Max)
	}
	atMost(v, "max", b.Max, limit)
	if b.Min > b.Max {
		v.fail("min", "min (%d) is greater than max (%d)", b.Min, b.Max)
	}
}

// validateBatchSplit checks that in sync mode the global batch splits evenly
// over the largest number of workers, and says what to change if it does not.
// It looks for the largest divisor of the batch at most the workers' maximum
// only when both are within their maxima, so that it counts down MaxTasks
// times at most.
func validateBatchSplit(v validator, t *Training, e *Elastic) {
	g, m := t.GlobalBatchSize, e.Workers.Max
	if t.BatchSize != nil {
		return // the planner chooses local batches (Placement.Batch)
	}
	if t.Mode != ModeSync || g <= 0 || m <= 0 || g > MaxBatchSize || m > MaxTasks || g%m == 0 {
		return
	}
	fix := fmt.Sprintf("set global_batch_size to a multiple of %d such as %d", m, (g/m+1)*m)
	if lower := g / m * m; lower > 0 {
		fix = fmt.Sprintf("set global_batch_size to a multiple of %d such as %d or %d", m, lower, (g/m+1)*m)
	}
	d := m
	for g%d != 0 {
		d--
	}
	v.fail("training.global_batch_size",
		"%d is not divisible by elastic.workers.max (%d); in sync mode each worker gets global_batch_size / workers samples, so %s, or lower elastic.workers.max to %d",
		g, m, fix, d)
}

func (r *Role) validate(v validator) {
	if r.Driver == "" {
		v.missing("driver")
	}
	validateMap(v, "env", r.Env)
	validateMap(v, "meta", r.Meta)
	if r.Resources == nil {
		v.missing("resources")
	} else {
		r.Resources.validate(v.at("resources"))
	}
	validateConstraints(v, r.Constraints, false)
	validateAffinities(v, r.Affinities)
}

// signals are the names accepted for checkpoint signals: those Nomad's
// alloc signal accepts on Linux.
var signals = map[string]bool{
	"SIGABRT": true, "SIGALRM": true, "SIGBUS": true, "SIGCHLD": true, "SIGCONT": true,
	"SIGFPE": true, "SIGHUP": true, "SIGILL": true, "SIGINT": true, "SIGIO": true,
	"SIGIOT": true, "SIGKILL": true, "SIGPIPE": true, "SIGPROF": true, "SIGPWR": true,
	"SIGQUIT": true, "SIGSEGV": true, "SIGSTKFLT": true, "SIGSTOP": true, "SIGSYS": true,
	"SIGTERM": true, "SIGTRAP": true, "SIGTSTP": true, "SIGTTIN": true, "SIGTTOU": true,
	"SIGURG": true, "SIGUSR1": true, "SIGUSR2": true, "SIGVTALRM": true, "SIGWINCH": true,
	"SIGXCPU": true, "SIGXFSZ": true,
}

// IsSignal reports whether name is a signal name Caravan can send, such as
// "SIGUSR1".
func IsSignal(name string) bool { return signals[name] }
