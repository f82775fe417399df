package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/caravan-sched/caravan/structs"
)

// The environment a task gets from Caravan (DESIGN.md §3), and the
// extensions the Nomad driver sets besides.
const (
	envJobID         = "CARAVAN_JOB_ID"
	envRole          = "CARAVAN_ROLE"
	envRank          = "CARAVAN_RANK"
	envNumWorkers    = "CARAVAN_NUM_WORKERS"
	envNumPS         = "CARAVAN_NUM_PS"
	envLocalBatch    = "CARAVAN_LOCAL_BATCH_SIZE"
	envResume        = "CARAVAN_RESUME"
	envCheckpointDir = "CARAVAN_CHECKPOINT_DIR"
	envCollector     = "CARAVAN_COLLECTOR_ADDR"
	envCoordinator   = "CARAVAN_COORDINATOR_ADDR"

	envNamespace        = "CARAVAN_NAMESPACE"
	envGeneration       = "CARAVAN_GENERATION"
	envGlobalBatch      = "CARAVAN_GLOBAL_BATCH_SIZE"
	envAccumSteps       = "CARAVAN_ACCUM_STEPS"
	envRefBatch         = "CARAVAN_REFERENCE_BATCH_SIZE"
	envMode             = "CARAVAN_MODE"
	envStepsPerEpoch    = "CARAVAN_STEPS_PER_EPOCH"
	envThreshold        = "CARAVAN_CONVERGENCE_THRESHOLD"
	envPatience         = "CARAVAN_CONVERGENCE_PATIENCE"
	envMaxEpochs        = "CARAVAN_MAX_EPOCHS"
	envCheckpointSignal = "CARAVAN_CHECKPOINT_SIGNAL"
	// envCheckpointInterval and envCheckpointTimeout are Go durations
	// ("10m0s"): how often the chief checkpoints unasked, and how long a
	// stopped trainer may take to checkpoint and exit.
	envCheckpointInterval = "CARAVAN_CHECKPOINT_INTERVAL"
	envCheckpointTimeout  = "CARAVAN_CHECKPOINT_TIMEOUT"
	// envAllocID is set by Nomad itself.
	envAllocID = "NOMAD_ALLOC_ID"
)

// Defaults of the knobs the environment may leave out.
const (
	defaultGlobalBatch = 64
	defaultGeneration  = "0"
	// defaultStopTimeout bounds a stop without CARAVAN_CHECKPOINT_TIMEOUT.
	defaultStopTimeout = 5 * time.Second
)

// config is everything a trainer process needs: the environment contract
// and the flags. parseConfig fills it; nothing changes it afterwards.
type config struct {
	// From the environment.
	JobID       string
	Namespace   string
	Role        string
	Rank        int
	NumWorkers  int
	NumPS       int
	LocalBatch  int
	GlobalBatch int
	// AccumSteps is how many passes of LocalBatch a worker accumulates
	// before the last one of a step; RefBatch the global batch the
	// learning rate is tuned for (the jobspec's global_batch_size), which
	// AdaScale's gain scales it from.
	AccumSteps    int
	RefBatch      int
	Resume        bool
	CheckpointDir string
	CollectorAddr string
	// CoordinatorAddr is the node's subtask coordinator; "" means none.
	CoordinatorAddr string
	Generation      string
	Mode            string
	StepsPerEpoch   int64
	Threshold       float64
	Patience        int
	MaxEpochs       int
	SignalName      string
	Signal          syscall.Signal
	// CheckpointInterval, when positive, has the chief checkpoint that
	// often unasked (CARAVAN_CHECKPOINT_INTERVAL).
	CheckpointInterval time.Duration
	// StopTimeout bounds how long a stopped process goes on, so that the
	// chief checkpoints first (CARAVAN_CHECKPOINT_TIMEOUT, which Caravan
	// also gives its tasks as their kill_timeout).
	StopTimeout time.Duration

	// GPU is the fake GPU the worker runs on (gpu.go); ProfileBatches and
	// ProfileSteps make the run a profiling one (runProfile).
	GPU            gpu
	ProfileBatches []int
	ProfileSteps   int

	// From the flags.
	Model        string
	LR           float64
	L2           float64
	Seed         uint64
	Features     int
	Examples     int
	EvalExamples int
	SampleCost   time.Duration
	// SampleMemoryMiB is the GPU memory each example of a local batch
	// takes: a batch beyond the GPU's memory fails as out of memory.
	SampleMemoryMiB   float64
	Bind              string
	MaxSteps          int64
	ReportEvery       int64
	RPCTimeout        time.Duration
	RendezvousTimeout time.Duration
	FlushTimeout      time.Duration
	IdleTimeout       time.Duration
	LogLevel          string
	// The knobs that make the computation and communication phases of a
	// step comparable (README, "Co-location"): extra passes of the
	// gradient spread over every core, extra bytes each pull and push
	// carry, the simulated link's rate in bytes/s (0: unpaced), and a file
	// the worker logs each phase to.
	CPUWork   int
	CommBytes int
	LinkRate  int64
	PhaseLog  string
	// CheckpointEvery, when positive, has the chief checkpoint every that
	// many steps as well as when asked (a SIGKILL leaves no time to).
	CheckpointEvery int64
	// Ballast makes a worker's memory grow, to test OOM handling: from
	// step BallastAfterStep on, worker BallastRank allocates BallastMB
	// MB, touching every page, at BallastRate MB/s. 0 MB: none.
	BallastMB        int
	BallastAfterStep int64
	BallastRank      int
	BallastRate      int
	// A worker whose node (-node, e.g. Nomad's ${node.unique.id}) is
	// listed in the file SlowNodes, one ID a line, reread every step,
	// computes SlowFactor times as long: a machine problem, to test
	// straggler handling.
	SlowNodes  string
	Node       string
	SlowFactor float64
	// AllocID is the task's Nomad allocation (NOMAD_ALLOC_ID), which its
	// samples name; empty outside Nomad.
	AllocID string
}

// chief reports whether this process is worker 0, the one that evaluates,
// reports, checkpoints and decides when training is done.
func (c *config) chief() bool { return c.Role == structs.RoleWorker && c.Rank == 0 }

// samplesPerStep is how many examples one step processes: the whole
// (effective) global batch in sync mode, one worker's passes in async
// mode.
func (c *config) samplesPerStep() int64 {
	if c.Mode == structs.ModeSync {
		return int64(c.LocalBatch * c.NumWorkers * (c.AccumSteps + 1))
	}
	return int64(c.LocalBatch * (c.AccumSteps + 1))
}

// errUsage marks configuration errors: the process exits with status 2.
var errUsage = errors.New("invalid configuration")

// parseConfig reads the flags in args and the environment through getenv,
// and reports every problem at once.
func parseConfig(args []string, getenv func(string) string, usage io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("trainer", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.StringVar(&c.Model, "model", "logreg", "model to train; only logreg (L2-regularised logistic regression) exists")
	fs.Float64Var(&c.LR, "lr", 0.02, "learning rate of SGD")
	fs.Float64Var(&c.L2, "l2", 1e-4, "L2 regularisation strength")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the synthetic dataset and of the batches")
	fs.IntVar(&c.Features, "features", 200, "number of features (model parameters)")
	fs.IntVar(&c.Examples, "examples", 50000, "number of training examples")
	fs.IntVar(&c.EvalExamples, "eval-examples", 1000, "number of held-out examples the chief evaluates the loss on")
	fs.DurationVar(&c.SampleCost, "sample-cost", 200*time.Microsecond, "simulated accelerator time per example, slept by a worker after computing its gradient")
	fs.Float64Var(&c.SampleMemoryMiB, "sample-memory-mib", 0, "GPU memory (MiB) each example of a local batch takes: a worker whose local batch does not fit its GPU's (FAKEGPU_MEMORY_MIB) fails as out of memory; 0 means any batch fits")
	fs.StringVar(&c.Bind, "bind", "127.0.0.1:0", "address a parameter server listens on and publishes (port 0 picks a free port)")
	fs.Int64Var(&c.MaxSteps, "max-steps", 0, "stop after this many steps; 0 means no cap")
	fs.Int64Var(&c.ReportEvery, "report-every", 1, "the chief reports a sample every this many steps")
	fs.DurationVar(&c.RPCTimeout, "rpc-timeout", 60*time.Second, "give up when a parameter server is unreachable, or a step does not complete, for this long")
	fs.DurationVar(&c.RendezvousTimeout, "rendezvous-timeout", 2*time.Minute, "how long workers wait for the parameter servers to publish their addresses, and for the first step")
	fs.DurationVar(&c.FlushTimeout, "flush-timeout", 10*time.Second, "how long the chief waits for a checkpoint's sample to be committed")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", 5*time.Minute, "a parameter server that no worker called for this long exits with an error")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: trace, debug, info, warn or error")
	fs.IntVar(&c.CPUWork, "cpu-work", 0, "extra passes of the gradient over the local batch per step, spread over every core: a CPU-bound computation phase")
	fs.IntVar(&c.CommBytes, "comm-bytes", 0, "extra bytes each pull answer and each push carries to and from every parameter server")
	fs.Int64Var(&c.LinkRate, "link-rate", 0, "pace a worker's connections to the parameter servers at this many bytes/s each way, a simulated network link; 0 means unpaced")
	fs.Int64Var(&c.CheckpointEvery, "checkpoint-every", 0, "the chief also checkpoints every this many steps; 0 means only when asked and at the end")
	fs.IntVar(&c.BallastMB, "ballast-mb", 0, "worker -ballast-rank allocates this many MB from step -ballast-after-step on, so that its memory grows (OOM tests); 0 means none")
	fs.Int64Var(&c.BallastAfterStep, "ballast-after-step", 0, "the step from which the ballast is allocated")
	fs.IntVar(&c.BallastRank, "ballast-rank", 0, "the rank of the worker that allocates the ballast")
	fs.IntVar(&c.BallastRate, "ballast-rate", 10, "MB per second the ballast grows at, so that a memory reading sees it grow")
	fs.StringVar(&c.SlowNodes, "slow-nodes", "", "a file of node IDs, one a line, reread every step: a worker on a listed node (-node) computes -slow-factor times as long (straggler tests)")
	fs.StringVar(&c.Node, "node", "", "the ID of the node the worker runs on, for -slow-nodes (on Nomad: ${node.unique.id})")
	fs.Float64Var(&c.SlowFactor, "slow-factor", 4, "how many times as long a worker on a -slow-nodes node computes")
	fs.StringVar(&c.PhaseLog, "phase-log", "", "append one JSON line per phase of each step (pull, compute, push: start and end, Unix ns) to this file")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}

	e := envReader{getenv: getenv}
	c.JobID = e.required(envJobID)
	c.Namespace = e.str(envNamespace, structs.DefaultNamespace)
	c.Role = e.required(envRole)
	c.Rank = e.int(envRank, -1, true)
	c.NumWorkers = e.int(envNumWorkers, 0, true)
	c.NumPS = e.int(envNumPS, 0, true)
	c.CheckpointDir = e.required(envCheckpointDir)
	c.CollectorAddr = e.str(envCollector, "")
	c.CoordinatorAddr = e.str(envCoordinator, "")
	c.Generation = e.str(envGeneration, defaultGeneration)
	c.Mode = e.str(envMode, structs.ModeSync)
	c.Resume = e.bool(envResume)
	c.GlobalBatch = e.int(envGlobalBatch, 0, false)
	c.LocalBatch = e.int(envLocalBatch, 0, false)
	c.AccumSteps = e.int(envAccumSteps, 0, false)
	c.RefBatch = e.int(envRefBatch, 0, false)
	c.StepsPerEpoch = int64(e.int(envStepsPerEpoch, 0, false))
	c.Threshold = e.float(envThreshold, structs.DefaultThreshold)
	c.Patience = e.int(envPatience, structs.DefaultPatience, false)
	c.MaxEpochs = e.int(envMaxEpochs, 0, false)
	c.SignalName = e.str(envCheckpointSignal, structs.DefaultCheckpointSignal)
	c.AllocID = e.str(envAllocID, "")
	c.CheckpointInterval = e.duration(envCheckpointInterval, 0)
	c.StopTimeout = e.duration(envCheckpointTimeout, defaultStopTimeout)
	c.GPU = readGPU(&e)
	c.ProfileSteps = e.int(envProfileSteps, defaultProfileSteps, false)

	errs := e.errs
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	batches, perr := parseProfileBatches(getenv(envProfileBatches))
	if perr != nil {
		errs = append(errs, perr)
	}
	c.ProfileBatches = batches
	if c.ProfileSteps < 1 {
		bad("%s=%d: must be at least 1", envProfileSteps, c.ProfileSteps)
	}
	if !(c.SampleMemoryMiB >= 0) || math.IsInf(c.SampleMemoryMiB, 0) {
		bad("-sample-memory-mib=%v: must be finite and not negative", c.SampleMemoryMiB)
	}
	switch c.Role {
	case "", structs.RoleWorker, structs.RolePS:
	default:
		bad("%s=%q: use %q or %q", envRole, c.Role, structs.RoleWorker, structs.RolePS)
	}
	if c.NumWorkers < 1 && getenv(envNumWorkers) != "" {
		bad("%s=%d: must be at least 1", envNumWorkers, c.NumWorkers)
	}
	if c.NumPS < 1 && getenv(envNumPS) != "" {
		bad("%s=%d: must be at least 1", envNumPS, c.NumPS)
	}
	if c.Rank < 0 && getenv(envRank) != "" {
		bad("%s=%d: must not be negative", envRank, c.Rank)
	}
	if c.Role == structs.RoleWorker && c.NumWorkers > 0 && c.Rank >= c.NumWorkers {
		bad("%s=%d: a worker's rank must be below %s=%d", envRank, c.Rank, envNumWorkers, c.NumWorkers)
	}
	if c.Role == structs.RolePS && c.NumPS > 0 && c.Rank >= c.NumPS {
		bad("%s=%d: a parameter server's rank must be below %s=%d", envRank, c.Rank, envNumPS, c.NumPS)
	}
	if c.Generation == "" || c.Generation != filepath.Base(c.Generation) || strings.HasPrefix(c.Generation, ".") {
		bad("%s=%q: must be a plain name (it names a directory)", envGeneration, c.Generation)
	}
	switch c.Mode {
	case structs.ModeSync, structs.ModeAsync:
	default:
		bad("%s=%q: use %q or %q", envMode, c.Mode, structs.ModeSync, structs.ModeAsync)
	}
	if c.CheckpointDir != "" && !filepath.IsAbs(c.CheckpointDir) {
		if abs, err := filepath.Abs(c.CheckpointDir); err == nil {
			c.CheckpointDir = abs
		}
	}
	if c.GlobalBatch < 0 {
		bad("%s=%d: must be positive", envGlobalBatch, c.GlobalBatch)
	}
	if c.LocalBatch < 0 {
		bad("%s=%d: must be positive", envLocalBatch, c.LocalBatch)
	}
	if c.AccumSteps < 0 {
		bad("%s=%d: must not be negative", envAccumSteps, c.AccumSteps)
	}
	if c.RefBatch < 0 {
		bad("%s=%d: must be positive", envRefBatch, c.RefBatch)
	}
	if c.NumWorkers > 0 {
		c.fillBatches()
	}
	if c.StepsPerEpoch < 0 {
		bad("%s=%d: must be positive", envStepsPerEpoch, c.StepsPerEpoch)
	}
	if !(c.Threshold > 0 && c.Threshold < 1) {
		bad("%s=%v: must be between 0 and 1 (a relative loss decrease per epoch)", envThreshold, c.Threshold)
	}
	if c.Patience < 1 {
		bad("%s=%d: must be at least 1", envPatience, c.Patience)
	}
	if c.MaxEpochs < 0 {
		bad("%s=%d: must not be negative (0 means no cap)", envMaxEpochs, c.MaxEpochs)
	}
	sig, err := checkpointSignal(c.SignalName)
	if err != nil {
		bad("%s: %v", envCheckpointSignal, err)
	}
	c.Signal = sig
	if c.CheckpointInterval < 0 || c.CheckpointInterval == 0 && strings.TrimSpace(getenv(envCheckpointInterval)) != "" {
		bad("%s=%v: must be positive (leave it unset to checkpoint only when asked)", envCheckpointInterval, c.CheckpointInterval)
	}
	if c.StopTimeout <= 0 {
		bad("%s=%v: must be positive", envCheckpointTimeout, c.StopTimeout)
	}

	if c.Model != "logreg" {
		bad("-model=%q: only logreg is implemented", c.Model)
	}
	if !(c.LR > 0) {
		bad("-lr=%v: must be positive", c.LR)
	}
	if !(c.L2 >= 0) {
		bad("-l2=%v: must not be negative", c.L2)
	}
	if c.Features < 1 {
		bad("-features=%d: must be positive", c.Features)
	}
	if c.NumPS > c.Features {
		bad("%s=%d: more parameter servers than -features=%d", envNumPS, c.NumPS, c.Features)
	}
	if c.Examples < 1 {
		bad("-examples=%d: must be positive", c.Examples)
	}
	if c.EvalExamples < 1 {
		bad("-eval-examples=%d: must be positive", c.EvalExamples)
	}
	if c.SampleCost < 0 {
		bad("-sample-cost=%v: must not be negative", c.SampleCost)
	}
	if c.CPUWork < 0 || c.CPUWork > maxCPUWork {
		bad("-cpu-work=%d: must be between 0 and %d", c.CPUWork, maxCPUWork)
	}
	if c.CommBytes < 0 || c.CommBytes > maxCommBytes {
		bad("-comm-bytes=%d: must be between 0 and %d", c.CommBytes, maxCommBytes)
	}
	if c.LinkRate < 0 {
		bad("-link-rate=%d: must not be negative", c.LinkRate)
	}
	if c.CheckpointEvery < 0 {
		bad("-checkpoint-every=%d: must not be negative (0 means only when asked)", c.CheckpointEvery)
	}
	if c.BallastMB < 0 || c.BallastAfterStep < 0 || c.BallastRank < 0 || c.BallastRate < 1 {
		bad("-ballast-mb=%d -ballast-after-step=%d -ballast-rank=%d -ballast-rate=%d: must not be negative, and the rate at least 1 MB/s",
			c.BallastMB, c.BallastAfterStep, c.BallastRank, c.BallastRate)
	}
	if c.MaxSteps < 0 {
		bad("-max-steps=%d: must not be negative (0 means no cap)", c.MaxSteps)
	}
	if c.ReportEvery < 1 {
		bad("-report-every=%d: must be at least 1", c.ReportEvery)
	}
	if c.SlowFactor < 1 || math.IsInf(c.SlowFactor, 0) || c.SlowNodes != "" && c.Node == "" {
		bad("-slow-nodes=%q -node=%q -slow-factor=%v: the factor must be finite and at least 1, and -slow-nodes needs -node", c.SlowNodes, c.Node, c.SlowFactor)
	}
	for name, d := range map[string]time.Duration{
		"-rpc-timeout": c.RPCTimeout, "-rendezvous-timeout": c.RendezvousTimeout,
		"-flush-timeout": c.FlushTimeout, "-idle-timeout": c.IdleTimeout,
	} {
		if d <= 0 {
			bad("%s=%v: must be positive", name, d)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w:\n%w", errUsage, err)
	}
	return c, nil
}

// fillBatches derives the batch sizes the environment left out. In sync
// mode the global batch is split evenly (Caravan passes global/workers,
// rounded down); in async mode every worker steps on a local batch.
func (c *config) fillBatches() {
	switch {
	case c.GlobalBatch == 0 && c.LocalBatch == 0:
		c.GlobalBatch = defaultGlobalBatch
	case c.GlobalBatch == 0 && c.Mode == structs.ModeSync:
		c.GlobalBatch = c.LocalBatch * c.NumWorkers
	case c.GlobalBatch == 0:
		c.GlobalBatch = c.LocalBatch
	}
	if c.LocalBatch == 0 {
		c.LocalBatch = c.GlobalBatch
		if c.Mode == structs.ModeSync {
			c.LocalBatch = max(1, c.GlobalBatch/c.NumWorkers)
		}
	}
	if c.RefBatch == 0 {
		c.RefBatch = c.GlobalBatch
	}
	if c.StepsPerEpoch == 0 {
		c.StepsPerEpoch = max(1, int64(c.Examples)/c.samplesPerStep())
	}
}

// envReader reads variables through getenv and collects what is wrong.
type envReader struct {
	getenv func(string) string
	errs   []error
}

func (e *envReader) required(name string) string {
	v := strings.TrimSpace(e.getenv(name))
	if v == "" {
		e.errs = append(e.errs, fmt.Errorf("%s is not set", name))
	}
	return v
}

func (e *envReader) str(name, def string) string {
	if v := strings.TrimSpace(e.getenv(name)); v != "" {
		return v
	}
	return def
}

func (e *envReader) int(name string, def int, required bool) int {
	v := strings.TrimSpace(e.getenv(name))
	if v == "" {
		if required {
			e.errs = append(e.errs, fmt.Errorf("%s is not set", name))
		}
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: not an integer", name, v))
		return def
	}
	return n
}

func (e *envReader) float(name string, def float64) float64 {
	v := strings.TrimSpace(e.getenv(name))
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: not a number", name, v))
		return def
	}
	return f
}

// duration reads a Go duration such as "10m0s".
func (e *envReader) duration(name string, def time.Duration) time.Duration {
	v := strings.TrimSpace(e.getenv(name))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: not a duration such as \"10m\"", name, v))
		return def
	}
	return d
}

func (e *envReader) bool(name string) bool {
	switch v := strings.TrimSpace(e.getenv(name)); strings.ToLower(v) {
	case "", "0", "false":
		return false
	case "1", "true":
		return true
	default:
		e.errs = append(e.errs, fmt.Errorf("%s=%q: use 1 or 0", name, v))
		return false
	}
}

// checkpointSignals are the signals a trainer can take as its checkpoint
// signal: those whose default action would otherwise end or stop it and
// that neither Nomad's stop (SIGINT, SIGTERM) nor the Go runtime (SIGURG,
// SIGPROF) uses.
var checkpointSignals = map[string]syscall.Signal{
	"SIGHUP":    syscall.SIGHUP,
	"SIGUSR1":   syscall.SIGUSR1,
	"SIGUSR2":   syscall.SIGUSR2,
	"SIGALRM":   syscall.SIGALRM,
	"SIGWINCH":  syscall.SIGWINCH,
	"SIGIO":     syscall.SIGIO,
	"SIGVTALRM": syscall.SIGVTALRM,
	"SIGXCPU":   syscall.SIGXCPU,
	"SIGXFSZ":   syscall.SIGXFSZ,
}

// checkpointSignal parses a signal name such as "SIGUSR1" or "USR1".
func checkpointSignal(name string) (syscall.Signal, error) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if !strings.HasPrefix(n, "SIG") {
		n = "SIG" + n
	}
	if sig, ok := checkpointSignals[n]; ok {
		return sig, nil
	}
	switch n {
	case "SIGINT", "SIGTERM":
		return 0, fmt.Errorf("%q stops the trainer; use another signal, such as SIGUSR1", name)
	}
	return 0, fmt.Errorf("%q cannot be a checkpoint signal; use SIGUSR1, SIGUSR2, SIGHUP, SIGALRM, SIGWINCH, SIGIO, SIGVTALRM, SIGXCPU or SIGXFSZ", name)
}
