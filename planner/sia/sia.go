package sia

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/structs"
)

// Name is Sia's registry name; NameLAS Caravan's variant that weights
// each job by its attained service (Options.ServiceScale).
const (
	Name    = "sia"
	NameLAS = "sia-las"
)

// DefaultServiceScale is sia-las's s₀: one GPU-hour. On workload 2 of
// Helios and of newTrace (-assume sia-artifact) it cut the average JCT
// 2% and 5% below sia's, where goodput-las's four hours cut newTrace's
// 5% but raised Helios's 1%.
const DefaultServiceScale = time.Hour

// Options are Sia's knobs (§3.3). The zero value takes the defaults of
// the paper's experiments.
type Options struct {
	// P raises the normalised goodputs to the power p, trading
	// efficiency for fairness: -0.5, the value of every experiment of §5
	// (paper §5.1 and the artifact's run_experiment.sh; §3.3's text says
	// 0.5). It must not be 0.
	P float64
	// Lambda is the penalty λ of Eq. (1) for a job left without a
	// configuration: 1.1 (§5.1). Above the least a configuration is worth
	// (1 after normalisation), so every job that fits runs.
	Lambda float64
	// RestartDelay is S of the restart factor, Eq. (2), for a job whose
	// start cost is not measured yet (planner.Job.RestartCost): 30 s, the
	// artifact's default.
	RestartDelay time.Duration
	// NodeLimit bounds the branch-and-bound nodes of a round's solve
	// (DefaultNodeLimit).
	NodeLimit int
	// ServiceScale, when positive, weights each job's terms of Eq. (1)
	// by s₀/(s₀ + its attained service in GPU-time), s₀ = ServiceScale:
	// least attained service first, as goodput-las weights Pollux's
	// power mean (Caravan's own, not Sia's). 0 weights every job alike.
	ServiceScale time.Duration
}

func (o Options) withDefaults() Options {
	if o.P == 0 {
		o.P = -0.5
	}
	if o.Lambda == 0 {
		o.Lambda = 1.1
	}
	if o.RestartDelay <= 0 {
		o.RestartDelay = 30 * time.Second
	}
	if o.NodeLimit <= 0 {
		o.NodeLimit = DefaultNodeLimit
	}
	return o
}

// Sia is the policy. It is deterministic, and not safe for concurrent
// use (planner.Algorithm).
type Sia struct {
	name string
	opts Options
	// Optimal is false when the latest round's solve reached its node
	// limit, so that its selection is not proven optimal; Nodes counts
	// the branch-and-bound nodes it visited.
	Optimal bool
	Nodes   int
}

// New returns Sia with its defaults.
func New() planner.Algorithm { return NewWithOptions(Options{}) }

// NewLAS returns sia-las: Sia with ServiceScale DefaultServiceScale.
func NewLAS() planner.Algorithm {
	s := NewWithOptions(Options{ServiceScale: DefaultServiceScale})
	s.name = NameLAS
	return s
}

// NewWithOptions returns Sia with opts, defaults filled.
func NewWithOptions(opts Options) *Sia {
	return &Sia{name: Name, opts: opts.withDefaults(), Optimal: true}
}

// Name returns "sia" or "sia-las".
func (s *Sia) Name() string { return s.name }

// Capabilities: Sia reads each job's throughput model per GPU type (and
// for sia-las its attained service), has new jobs profiled on every type,
// and chooses their batch sizes.
func (s *Sia) Capabilities() planner.Capabilities {
	reads := []planner.Estimator{planner.EstimatorGoodput}
	if s.opts.ServiceScale > 0 {
		reads = append(reads, planner.EstimatorAttainedService)
	}
	return planner.Capabilities{Reads: reads, ChoosesBatch: true, GPUTypes: true}
}

// SetConfig takes p (a number, not 0), lambda (a positive number),
// restart_delay (a positive duration) and service_scale (a duration, 0
// for none); unknown keys and bad values are errors, and then nothing
// changes. Keys left out take their defaults (sia-las's service_scale:
// DefaultServiceScale).
func (s *Sia) SetConfig(options map[string]string) error {
	var opts Options
	if s.name == NameLAS {
		opts.ServiceScale = DefaultServiceScale
	}
	var errs []error
	number := func(k, v string) float64 {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			errs = append(errs, fmt.Errorf("%s = %q: must be a number", k, v))
		}
		return f
	}
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v := options[k]
		switch k {
		case "p":
			if opts.P = number(k, v); opts.P == 0 {
				errs = append(errs, fmt.Errorf("p = %q: must not be 0 (the matrix is raised to the power p)", v))
			}
		case "lambda":
			if opts.Lambda = number(k, v); !(opts.Lambda > 0) {
				errs = append(errs, fmt.Errorf("lambda = %q: must be a positive number (the penalty for a job left out)", v))
			}
		case "restart_delay":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("restart_delay = %q: must be a positive duration such as \"30s\"", v))
			}
			opts.RestartDelay = d
		case "service_scale":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				errs = append(errs, fmt.Errorf("service_scale = %q: must be a duration of GPU time such as \"4h\", 0 for none", v))
			}
			opts.ServiceScale = d
		default:
			errs = append(errs, fmt.Errorf("unknown option %q; %s takes p, lambda, restart_delay and service_scale", k, s.name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s.opts = opts.withDefaults()
	return nil
}

// gpuType is one GPU type of the request's nodes.
type gpuType struct {
	name string
	// nodes are the indices of its nodes in the cluster; perNode the
	// most GPUs one of them has (R of §3.2), free the GPUs Caravan may
	// use on all of them.
	nodes   []int
	perNode int
	free    int
}

// config is one configuration of §3.2: gpus GPUs of one type over nodes
// nodes.
type config struct {
	typ, nodes, gpus int
}

// configs returns the configurations of a type (§3.2): powers of two up
// to a node's GPUs on one node, then whole nodes, two and more.
func configs(typ int, t *gpuType) []config {
	var out []config
	for g := 1; g <= t.perNode; g *= 2 {
		out = append(out, config{typ: typ, nodes: 1, gpus: g})
	}
	if t.perNode&(t.perNode-1) != 0 {
		out = append(out, config{typ: typ, nodes: 1, gpus: t.perNode})
	}
	for n := 2; n <= len(t.nodes); n++ {
		out = append(out, config{typ: typ, nodes: n, gpus: n * t.perNode})
	}
	return out
}

// types groups the cluster's nodes with GPUs by GPU type, sorted by name.
func types(c *planner.Cluster, nodes []*structs.Node) []*gpuType {
	byName := map[string]*gpuType{}
	for i, n := range nodes {
		name := n.GPUType()
		if name == "" {
			continue
		}
		t := byName[name]
		if t == nil {
			t = &gpuType{name: name}
			byName[name] = t
		}
		t.nodes = append(t.nodes, i)
		t.perNode = max(t.perNode, gpus(n))
		t.free += freeGPUs(c, i)
	}
	return slices.SortedFunc(maps.Values(byName), func(a, b *gpuType) int { return strings.Compare(a.name, b.name) })
}

// freeGPUs is the free GPUs of node i's GPU type: not its other devices,
// which Cluster.Free counts with them.
func freeGPUs(c *planner.Cluster, i int) int {
	n := c.Nodes[i]
	typ := n.GPUType()
	free := c.FreeDevices(i)
	for g, d := range n.Devices {
		if d.Type == "gpu" && d.Name == typ && g < len(free) {
			return free[g]
		}
	}
	return 0
}

// gpus is the healthy GPUs of a node's GPU type.
func gpus(n *structs.Node) int {
	typ := n.GPUType()
	for _, d := range n.Devices {
		if d.Type == "gpu" && d.Name == typ {
			return d.HealthyCount()
		}
	}
	return 0
}

// Plan fills the goodput matrix, selects a configuration per job by Eq.
// (1), places the selection and gives each job the batch that maximises
// its goodput there.
func (s *Sia) Plan(req *planner.Request) (*planner.Decision, error) {
	c := planner.NewCluster(req.Nodes)
	ts := types(c, req.Nodes)
	var cfgs []config
	for k, t := range ts {
		cfgs = append(cfgs, configs(k, t)...)
	}
	// Jobs in a fixed order, so that ties break the same way whatever
	// the request's order.
	views := slices.Clone(req.Jobs)
	planner.SortJobs(views)
	jobs := make([]*job, len(views))
	options := make([][]option, len(views))
	for i, v := range views {
		jobs[i] = s.newJob(c, v, ts, cfgs, req.Now)
		options[i] = jobs[i].options(s.opts, s.weight(v))
	}
	capacity := make([]int, len(ts))
	for k, t := range ts {
		capacity[k] = t.free
	}
	choice, optimal, nodes := solveCounting(options, capacity, s.opts.NodeLimit)
	s.Optimal, s.Nodes = optimal, nodes
	out := make([]*structs.Placement, len(jobs))
	for i, j := range jobs {
		if choice[i] >= 0 {
			j.chosen = &j.rows[choice[i]]
		}
	}
	place(c, ts, jobs, out)
	fill(c, ts, jobs, out)
	for i, j := range jobs {
		if out[i] == nil {
			out[i] = planner.Paused(j.view, j.pauseReason())
		}
	}
	planner.SortPlacements(out)
	return &planner.Decision{Placements: out}, nil
}

// job is one job of a round: its valid configurations with their goodput.
type job struct {
	view  *planner.Job
	tasks planner.JobTasks
	// per is the GPUs a worker takes; 0 for a job whose workers take
	// none.
	per int
	// rows are the job's valid configurations with their normalised,
	// restart-discounted goodput (its row of G).
	rows   []row
	chosen *row
	// why says why a job has no valid configuration.
	why string
	// current is the configuration the job runs at, if it is one.
	current *config
	est     *estimator
	// restart is the job's restart factor (Eq. 2).
	restart float64
}

// row is one entry of a job's row of G.
type row struct {
	config
	goodput float64
}

// options turns the job's row into the values of the selection problem:
// with p < 0, Eq. (1) is minimised (§3.3), each job costing G^p when it
// runs and λ when it does not, so running at a configuration is worth
// λ − G^p; with p > 0 it is maximised, and running is worth G^p + λ.
// Each is multiplied by the job's weight.
func (j *job) options(o Options, weight float64) []option {
	out := make([]option, 0, len(j.rows))
	for k, r := range j.rows {
		v := math.Pow(r.goodput, o.P)
		if o.P < 0 {
			v = o.Lambda - v
		} else {
			v += o.Lambda
		}
		out = append(out, option{typ: r.typ, gpus: r.gpus, value: weight * v, cfg: k})
	}
	return out
}

// weight is a job's weight in Eq. (1): 1, or with a service scale s₀,
// s₀/(s₀ + attained service).
func (s *Sia) weight(v *planner.Job) float64 {
	s0 := s.opts.ServiceScale.Seconds()
	if s0 <= 0 {
		return 1
	}
	return s0 / (s0 + max(v.AttainedService, 0))
}

func (j *job) pauseReason() string {
	switch {
	case j.why != "":
		return "sia: " + j.why
	case j.chosen == nil:
		return "sia: the selection leaves the job out this round"
	}
	return fmt.Sprintf("sia: no node set takes %d GPUs over %d nodes of its GPU type", j.chosen.gpus, j.chosen.nodes)
}

// newJob builds a job's row of the goodput matrix (§3.3).
func (s *Sia) newJob(c *planner.Cluster, v *planner.Job, ts []*gpuType, cfgs []config, now int64) *job {
	j := &job{view: v, tasks: c.JobTasks(v), restart: s.restartFactor(v, now)}
	j.per = j.tasks.Worker.DeviceCounts["gpu"]
	if v.HasPS() {
		j.why = "parameter-server jobs are not scaled by Sia, which scales all-reduce jobs"
		if j.per > 0 {
			j.current = s.currentConfig(c, v, ts)
			j.est = newEstimator(v, ts, limits(v.Job.Training))
		}
		return j
	}
	if j.per == 0 {
		j.why = "the job's workers ask for no GPU"
		return j
	}
	_, wb := v.Bounds()
	minW := max(wb.Min, 1)
	// The most workers (the artifact's cluster.py): the bounds, twice the
	// most run on any type (one before any; Sia's scale-up of at most 2×
	// a round, §3.1), and the largest batch over the smallest local batch.
	seen := 0
	if v.Perf != nil {
		seen = v.Perf.MaxReplicas
	}
	for _, f := range v.PerfByType {
		seen = max(seen, f.MaxReplicas)
	}
	if v.Current != nil {
		seen = max(seen, v.Current.NumWorkers)
	}
	maxW := min(wb.Max, max(2*seen, 1))
	lim := limits(v.Job.Training)
	if lim != nil {
		maxW = min(maxW, max(lim.MaxBatch/lim.MinLocal, 1))
	}
	maxW = max(maxW, minW)

	j.current = s.currentConfig(c, v, ts)
	est := newEstimator(v, ts, lim)
	j.est = est
	// A configuration must split into whole workers on each of its nodes.
	for _, cf := range cfgs {
		w := cf.gpus / j.per
		if cf.gpus%(j.per*cf.nodes) != 0 || w < minW || w > maxW || !feasibleOn(c, j.tasks.Worker, ts[cf.typ]) ||
			j.tasks.Worker.DistinctHosts && w > cf.nodes {
			continue
		}
		if g := est.goodput(cf, w); g > 0 {
			j.rows = append(j.rows, row{config: cf, goodput: g})
		}
	}
	if len(j.rows) == 0 {
		j.why = fmt.Sprintf("no configuration of %d to %d workers of %d GPUs fits a GPU type the job can run on", minW, maxW, j.per)
		return j
	}
	// Normalise the row so that its least entry is the fewest GPUs the
	// job runs on (N_min, §3.3), then discount every configuration but
	// the current one by the restart factor (Eq. 2).
	least := math.Inf(1)
	for _, r := range j.rows {
		least = min(least, r.goodput)
	}
	scale := float64(minW*j.per) / least
	for k := range j.rows {
		j.rows[k].goodput *= scale
		if j.current == nil || j.rows[k].config != *j.current {
			if j.current != nil {
				j.rows[k].goodput *= j.restart
			}
		}
	}
	return j
}

// limits are the batch limits of a job with batch bounds (adaptive); nil
// for a fixed batch.
func limits(t *structs.Training) *goodput.Limits {
	if t == nil || t.BatchSize == nil {
		return nil
	}
	b := t.BatchSize
	lo, hi := b.LocalBounds()
	return &goodput.Limits{MinBatch: b.Min, MaxBatch: b.Max, MinLocal: lo, MaxLocal: hi, Accumulation: true}
}

// restartFactor is Eq. (2): (T − N·S)/(T + S) for a job of age T that
// restarted N times, each costing S, at least 0; 1 while the job is
// younger than S (the artifact's sia.py). S is the job's measured start
// cost (planner.Job.RestartCost), RestartDelay until it is measured: the
// artifact hard-codes S by model (sia.py get_restart_penalty: 25 s to
// 250 s), which Caravan does not know but measures.
func (s *Sia) restartFactor(v *planner.Job, now int64) float64 {
	age := max(float64(now-v.Job.SubmitTime)/1e9, 0)
	delay := s.opts.RestartDelay.Seconds()
	if v.RestartCost > 0 {
		delay = v.RestartCost
	}
	if age < delay {
		return 1
	}
	return max(age-float64(v.Restarts)*delay, 0) / (age + delay)
}

// currentConfig is the configuration a job runs at: its GPUs over its
// worker nodes, when they are all of one type. nil when it does not run
// or runs across types.
func (s *Sia) currentConfig(c *planner.Cluster, v *planner.Job, ts []*gpuType) *config {
	cur := v.Current
	if cur == nil || cur.Paused() || cur.NumWorkers == 0 {
		return nil
	}
	cf := config{typ: -1}
	seen := map[string]bool{}
	for _, nt := range cur.Nodes {
		if nt.Workers == 0 {
			continue
		}
		i, ok := c.NodeIndex(nt.NodeID)
		if !ok {
			return nil
		}
		k := slices.IndexFunc(ts, func(t *gpuType) bool { return slices.Contains(t.nodes, i) })
		if k < 0 || cf.typ >= 0 && k != cf.typ {
			return nil
		}
		cf.typ = k
		if !seen[nt.NodeID] {
			seen[nt.NodeID] = true
			cf.nodes++
		}
	}
	per := 1
	if d := c.JobTasks(v).Worker.DeviceCounts["gpu"]; d > 0 {
		per = d
	}
	cf.gpus = cur.NumWorkers * per
	return &cf
}

// feasibleOn reports whether the worker may run on some node of the type
// (its constraints and device requests allow it).
func feasibleOn(c *planner.Cluster, t *planner.Task, typ *gpuType) bool {
	return slices.ContainsFunc(typ.nodes, func(i int) bool { return c.Feasible(i, t) })
}
