package dlrover

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// Name is the algorithm's registry name.
const Name = "dlrover"

// Options tune DLRover; CPU amounts are in cores, as in the paper. The
// zero value of a field takes its default (DefaultOptions).
type Options struct {
	// TotalCores is C_total, the most CPU one job gets (option c_total,
	// default 200, §6.1 D:232).
	TotalCores float64
	// PodCores is C_max, the most CPU one task gets (c_max, default 32,
	// D:232).
	PodCores float64
	// PSCores is s, the cores of each parameter server after the optimize
	// stage (ps_cpu, default 16, D:148).
	PSCores float64
	// PSUtil is the CPU utilisation above which a parameter server gets
	// more CPU (ps_util, default 0.9, D:156).
	PSUtil float64
	// HotRatio marks a busy server hot when it uses at least this many
	// times the median server's CPU (hot_ratio, default 1.5; A9).
	HotRatio float64
	// K is the K of ΔN_w's √K (k); 0 takes the job's worker maximum
	// squared, so that √K is its elastic bound (A1).
	K float64
	// MinInterval is the least time between two adjustments of a running
	// job (min_interval, default 60s, D:232).
	MinInterval time.Duration
	// MemMargin is the headroom new workers get over the most memory a
	// running worker used (mem_margin, default 0.2; A12).
	MemMargin float64
	// PSOOMThreshold is how many OOM kills of parameter servers in the
	// job's current run double their count (ps_oom_threshold, default 2,
	// the "repeated"; 1 is the paper's "any", A11).
	PSOOMThreshold int
	// CoreMHz converts cores to Nomad's MHz (core_mhz); 0 takes the
	// smallest cpu.frequency attribute of the request's nodes, else 1000
	// (A16).
	CoreMHz int
}

// DefaultOptions are the paper's values where it gives them.
func DefaultOptions() Options {
	return Options{
		TotalCores: 200, PodCores: 32, PSCores: 16, PSUtil: 0.9, HotRatio: 1.5,
		MinInterval: time.Minute, MemMargin: 0.2, PSOOMThreshold: 2,
	}
}

// DLRover implements planner.Algorithm.
type DLRover struct {
	opts Options
}

var (
	_ planner.Algorithm    = (*DLRover)(nil)
	_ planner.Describer    = (*DLRover)(nil)
	_ planner.Configurable = (*DLRover)(nil)
)

// New returns DLRover with DefaultOptions.
func New() planner.Algorithm { return &DLRover{opts: DefaultOptions()} }

// NewWithOptions returns DLRover with opts, zero fields taking their
// defaults.
func NewWithOptions(opts Options) *DLRover {
	def := DefaultOptions()
	opts.TotalCores = cmp.Or(opts.TotalCores, def.TotalCores)
	opts.PodCores = cmp.Or(opts.PodCores, def.PodCores)
	opts.PSCores = cmp.Or(opts.PSCores, def.PSCores)
	opts.PSUtil = cmp.Or(opts.PSUtil, def.PSUtil)
	opts.HotRatio = cmp.Or(opts.HotRatio, def.HotRatio)
	opts.MinInterval = cmp.Or(opts.MinInterval, def.MinInterval)
	opts.MemMargin = cmp.Or(opts.MemMargin, def.MemMargin)
	opts.PSOOMThreshold = cmp.Or(opts.PSOOMThreshold, def.PSOOMThreshold)
	return &DLRover{opts: opts}
}

// Name returns "dlrover".
func (*DLRover) Name() string { return Name }

// Capabilities: DLRover sizes jobs from their measured usage
// (planner.Describer).
func (*DLRover) Capabilities() planner.Capabilities {
	return planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorUsage}}
}

// optionNames lists the options SetConfig takes, for its error.
const optionNames = "c_total, c_max, ps_cpu, ps_util, hot_ratio, k, min_interval, mem_margin, ps_oom_threshold and core_mhz"

// SetConfig sets options by their names in Options; it validates them all
// before it changes anything.
func (d *DLRover) SetConfig(options map[string]string) error {
	var opts Options
	var errs []error
	positive := func(k, v string, dst *float64) {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			errs = append(errs, fmt.Errorf("%s = %q: must be a positive number", k, v))
		}
		*dst = f
	}
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v := options[k]
		switch k {
		case "c_total":
			positive(k, v, &opts.TotalCores)
		case "c_max":
			positive(k, v, &opts.PodCores)
		case "ps_cpu":
			positive(k, v, &opts.PSCores)
		case "hot_ratio":
			positive(k, v, &opts.HotRatio)
		case "k":
			positive(k, v, &opts.K)
		case "mem_margin":
			positive(k, v, &opts.MemMargin)
		case "ps_util":
			positive(k, v, &opts.PSUtil)
			if opts.PSUtil > 1 {
				errs = append(errs, fmt.Errorf("ps_util = %q: must be at most 1", v))
			}
		case "min_interval":
			dur, err := time.ParseDuration(v)
			if err != nil || dur <= 0 {
				errs = append(errs, fmt.Errorf("min_interval = %q: must be a positive duration such as \"60s\"", v))
			}
			opts.MinInterval = dur
		case "ps_oom_threshold", "core_mhz":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				errs = append(errs, fmt.Errorf("%s = %q: must be a positive integer", k, v))
			}
			if k == "core_mhz" {
				opts.CoreMHz = n
			} else {
				opts.PSOOMThreshold = n
			}
		default:
			errs = append(errs, fmt.Errorf("unknown option %q; %s takes %s", k, Name, optionNames))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if opts.PSCores > cmp.Or(opts.PodCores, DefaultOptions().PodCores) {
		return fmt.Errorf("ps_cpu = %g: must be at most c_max", opts.PSCores)
	}
	d.opts = NewWithOptions(opts).opts
	return nil
}

// Plan plans each job in arrival order (submit time, then namespace and
// ID) on the capacity the jobs before it left: DLRover's target for the
// job (doc.go) where it fits, else the job's current placement where it
// still fits, else its minimum at the roles' sizes, else nothing.
func (d *DLRover) Plan(req *planner.Request) (*planner.Decision, error) {
	jobs := slices.Clone(req.Jobs)
	planner.SortArrival(jobs)

	c := planner.NewCluster(req.Nodes)
	env := d.env(req)
	out := make([]*structs.Placement, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, env.planJob(c, j))
	}
	planner.SortPlacements(out)
	return &planner.Decision{Placements: out}, nil
}

// env is what every job of one request is planned with.
type env struct {
	opts Options
	now  int64
	// mhz is one core in MHz; cTotal, cMax and psCPU are the options in
	// MHz.
	mhz                 float64
	cTotal, cMax, psCPU float64
	// nodeCPU and nodeMem are the largest node's, the bound of a range
	// without a maximum.
	nodeCPU, nodeMem int
}

func (d *DLRover) env(req *planner.Request) *env {
	e := &env{opts: d.opts, now: req.Now, mhz: float64(d.opts.CoreMHz)}
	if e.mhz == 0 {
		e.mhz = 1000
		first := true
		for _, n := range req.Nodes {
			if f, err := strconv.Atoi(n.Attributes["cpu.frequency"]); err == nil && f > 0 && (first || float64(f) < e.mhz) {
				e.mhz, first = float64(f), false
			}
		}
	}
	e.cTotal, e.cMax, e.psCPU = d.opts.TotalCores*e.mhz, d.opts.PodCores*e.mhz, d.opts.PSCores*e.mhz
	for _, n := range req.Nodes {
		e.nodeCPU, e.nodeMem = max(e.nodeCPU, n.CPU), max(e.nodeMem, n.MemoryMB)
	}
	return e
}
