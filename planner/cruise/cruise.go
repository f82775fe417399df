package cruise

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
)

// Name is the algorithm's registry name.
const Name = "cruise"

// InitialMeta is the job meta key of a job's initial configuration, "W,S"
// (e.g. "27,5"): the workers and servers a user starts it with, as the
// dissertation's jobs start from a configuration a user picked (§3.4.3).
// Cruise runs an unmeasured job there, and it fixes the job's base size
// W + S.
const InitialMeta = "cruise_initial"

// Default option values.
const (
	// DefaultMinGain is the text's threshold (§3.3.1, §3.4.1): no
	// reconfiguration for a predicted gain below 5%.
	DefaultMinGain = 0.05
)

// Config is Cruise's Optimizer policy (§3.3.1).
type Config struct {
	// MinGain is the least predicted relative gain, 1 − T_new/T_now, for
	// which a running job is reconfigured (option min_gain, in [0, 1)).
	MinGain float64
	// Opportunistic lets a measured job use free machines beyond its base
	// size, up to its bounds, until a job that arrived later needs them
	// (option opportunistic, a bool).
	Opportunistic bool
}

// DefaultConfig is the text's policy: a 5% threshold, extra machines used.
func DefaultConfig() Config { return Config{MinGain: DefaultMinGain, Opportunistic: true} }

// Cruise implements planner.Algorithm.
type Cruise struct {
	cfg Config
}

var (
	_ planner.Algorithm    = (*Cruise)(nil)
	_ planner.Describer    = (*Cruise)(nil)
	_ planner.Configurable = (*Cruise)(nil)
)

// New returns Cruise with DefaultConfig.
func New() planner.Algorithm { return &Cruise{cfg: DefaultConfig()} }

// Name returns "cruise".
func (*Cruise) Name() string { return Name }

// Capabilities: Cruise splits jobs from their measured subtasks
// (planner.Describer).
func (*Cruise) Capabilities() planner.Capabilities {
	return planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorSubtasks}}
}

// SetConfig takes min_gain (a fraction in [0, 1), default 0.05) and
// opportunistic (true or false, default true). Unknown keys and bad values
// are errors, all reported; on error nothing changes.
func (cr *Cruise) SetConfig(options map[string]string) error {
	cfg := DefaultConfig()
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v := options[k]
		switch k {
		case "min_gain":
			g, err := strconv.ParseFloat(v, 64)
			if err != nil || g < 0 || g >= 1 {
				errs = append(errs, fmt.Errorf("min_gain = %q: want a fraction in [0, 1)", v))
				continue
			}
			cfg.MinGain = g
		case "opportunistic":
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("opportunistic = %q: %w", v, err))
				continue
			}
			cfg.Opportunistic = b
		default:
			errs = append(errs, fmt.Errorf("unknown option %q; cruise takes min_gain and opportunistic", k))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	cr.cfg = cfg
	return nil
}

// Initial returns a job's initial configuration from its meta
// (InitialMeta), and false when it has none or it does not parse.
func Initial(j *structs.Job) (structs.Shape, bool) {
	v, ok := j.Meta[InitialMeta]
	if !ok {
		return structs.Shape{}, false
	}
	ws, ss, ok := strings.Cut(v, ",")
	w, errW := strconv.Atoi(strings.TrimSpace(ws))
	s, errS := strconv.Atoi(strings.TrimSpace(ss))
	if !ok || errW != nil || errS != nil || w < 1 || s < 0 {
		return structs.Shape{}, false
	}
	return structs.Shape{PS: s, Workers: w}, true
}

// SplitJob returns how a PS job of n tasks should divide them between
// parameter servers and workers, within its bounds: eq. 3.5 on the cost
// model of its measured subtasks (Estimate, SplitWithin); without a
// measurement its initial configuration when that has n tasks, else its
// bounds' maxima scaled to n. It reports false when no split of n keeps
// the bounds. An all-reduce job has no servers: all n are workers.
func SplitJob(j *planner.Job, n int) (ps, workers int, ok bool) {
	psb, wb := j.Bounds()
	if !j.HasPS() {
		return 0, n, wb.Contains(n)
	}
	if c, measured := Estimate(j.Subtasks); measured {
		w, s := c.SplitWithin(n, wb, psb)
		return s, w, w > 0
	}
	if in, ok := Initial(j.Job); ok && in.PS+in.Workers == n && wb.Contains(in.Workers) && psb.Contains(in.PS) {
		return in.PS, in.Workers, true
	}
	w := min(max(n*wb.Max/max(wb.Max+psb.Max, 1), wb.Min, n-psb.Max), wb.Max, n-psb.Min)
	return n - w, w, wb.Contains(w) && psb.Contains(n-w)
}

// Size is a job's base size, the machines Cruise guarantees it: its
// initial configuration's W + S, else its workers' maximum (plus the
// servers' minimum when the bounds need it). An all-reduce job runs its
// workers' maximum.
func Size(j *planner.Job) int {
	psb, wb := j.Bounds()
	if !j.HasPS() {
		return wb.Max
	}
	if in, ok := Initial(j.Job); ok {
		return in.PS + in.Workers
	}
	return max(wb.Max, wb.Min+psb.Min)
}

// maxSize is the most machines a PS job may use opportunistically: its
// bounds' maxima together, at least its base size.
func maxSize(j *planner.Job) int {
	psb, wb := j.Bounds()
	if !j.HasPS() {
		return wb.Max
	}
	return max(wb.Max+psb.Max, Size(j))
}

// target is what Cruise decided for one job before placement.
type target struct {
	ps, w int
	// base is the split at the base size, the fallback when the target
	// does not fit.
	basePS, baseW int
	why           string
}

// Plan runs jobs first come, first served, each guaranteed its base size
// (Size) and never preempted from it; a job that does not fit waits, and
// later jobs that fit may start. With opportunistic on, the machines left
// free after every job's base go, first come first served, to measured
// jobs up to their bounds (maxSize), and a later job reclaims them: §3.3.1's
// N grows when resources free up and shrinks when they go.
//
// Each job's split of its N machines is eq. 3.5 on its cost model
// (SplitJob). A running job is reconfigured only when the predicted gain
// (Cost.Gain) is at least MinGain, or when its machines were reclaimed
// (N fell below what it runs on: it is rebalanced, whatever the gain).
// An unmeasured job starts at its initial configuration and stays there
// until measured. Servers and workers go on disjoint nodes when some fit
// (placeDisjoint), else they share nodes (placement.Placer) and the
// reason says so.
func (cr *Cruise) Plan(req *planner.Request) (*planner.Decision, error) {
	jobs := slices.Clone(req.Jobs)
	planner.SortJobs(jobs)
	slices.SortStableFunc(jobs, func(a, b *planner.Job) int { return cmp.Compare(a.Job.SubmitTime, b.Job.SubmitTime) })

	c := planner.NewCluster(req.Nodes)
	extra := cr.room(c, jobs)
	out := make([]*structs.Placement, len(jobs))
	tasks := make([]planner.JobTasks, len(jobs))
	targets := make([]target, len(jobs))
	for i, j := range jobs {
		tasks[i] = c.JobTasks(j)
		targets[i] = cr.decide(j, Size(j)+extra[i])
		t := targets[i]
		if kept := c.KeepCurrent(j.Current, tasks[i], t.ps, t.w); kept != nil {
			kept.Reason = fmt.Sprintf("cruise: running with %s: %s", structs.Shape{PS: t.ps, Workers: t.w}, t.why)
			out[i] = kept
		}
	}
	placer := placement.New(c)
	// place puts servers and workers on disjoint nodes when it can (the
	// model's assumption), else shares nodes as the other algorithms do.
	place := func(i, ps, w int) ([]*structs.NodeTasks, bool, string) {
		if ps > 0 {
			if nodes, ok := placeDisjoint(c, tasks[i], ps, w); ok {
				return nodes, true, ""
			}
		}
		nodes, ok := placer.Place(tasks[i].PS, ps, tasks[i].Worker, w)
		if ps > 0 {
			return nodes, ok, "; servers share nodes with workers: no disjoint set of nodes has room"
		}
		return nodes, ok, ""
	}
	for i, j := range jobs {
		if out[i] != nil {
			continue
		}
		t := targets[i]
		nodes, ok, shared := place(i, t.ps, t.w)
		if !ok && (t.basePS != t.ps || t.baseW != t.w) {
			t.ps, t.w, t.why = t.basePS, t.baseW, "its base size: its target did not fit"
			nodes, ok, shared = place(i, t.ps, t.w)
		}
		if !ok {
			out[i] = planner.Paused(j, fmt.Sprintf("cruise: waiting for room for %s", structs.Shape{PS: t.ps, Workers: t.w}))
			continue
		}
		t.why += shared
		out[i] = &structs.Placement{
			Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: t.ps, NumWorkers: t.w, Nodes: nodes,
			Reason: fmt.Sprintf("cruise: %s: %s", structs.Shape{PS: t.ps, Workers: t.w}, t.why),
		}
	}
	planner.SortPlacements(out)
	return &planner.Decision{Placements: out}, nil
}

// room returns how many machines beyond its base size each job may use:
// on a copy of the cluster it places every job's base split first come
// first served, then gives measured PS jobs, in the same order, one task
// at a time while one fits, up to maxSize. A task is counted as the larger
// (by CPU) of the job's server and worker tasks.
func (cr *Cruise) room(c *planner.Cluster, jobs []*planner.Job) []int {
	extra := make([]int, len(jobs))
	if !cr.cfg.Opportunistic {
		return extra
	}
	probe := c.Clone()
	placer := placement.New(probe)
	placed := make([]bool, len(jobs))
	tasks := make([]planner.JobTasks, len(jobs))
	for i, j := range jobs {
		tasks[i] = probe.JobTasks(j)
		ps, w, ok := SplitJob(j, Size(j))
		if !ok {
			ps, w = j.FixedRequest()
		}
		_, placed[i] = placer.Place(tasks[i].PS, ps, tasks[i].Worker, w)
	}
	for i, j := range jobs {
		if _, measured := Estimate(j.Subtasks); !placed[i] || !measured || !j.HasPS() {
			continue
		}
		t := tasks[i].Worker
		if p := tasks[i].PS; p != nil && p.CPU > t.CPU {
			t = p
		}
		for extra[i] < maxSize(j)-Size(j) {
			if _, ok := placer.Place(nil, 0, t, 1); !ok {
				break
			}
			extra[i]++
		}
	}
	return extra
}

// decide is the Optimizer's choice for job j given n machines.
func (cr *Cruise) decide(j *planner.Job, n int) target {
	base := Size(j)
	bps, bw, ok := SplitJob(j, base)
	if !ok {
		bps, bw = j.FixedRequest()
	}
	t := target{ps: bps, w: bw, basePS: bps, baseW: bw}
	c, measured := Estimate(j.Subtasks)
	if !j.HasPS() || !measured {
		t.why = "its initial configuration, not measured yet"
		if cur := j.Current; cur != nil && !cur.Paused() && j.HasPS() && cur.NumPS+cur.NumWorkers <= base {
			t.ps, t.w = cur.NumPS, cur.NumWorkers
			t.why = "not measured yet"
		}
		if !j.HasPS() {
			t.why = "all-reduce: no servers to split"
		}
		return t
	}
	psb, wb := j.Bounds()
	w, s := c.SplitWithin(n, wb, psb)
	if w == 0 {
		t.why = fmt.Sprintf("no split of %d machines keeps its bounds", n)
		return t
	}
	cur := j.Current
	if cur == nil || cur.Paused() {
		t.ps, t.w = s, w
		t.why = fmt.Sprintf("eq. 3.5 on %d machines (K/A = %.3g)", n, c.K/c.A)
		return t
	}
	gain := c.Gain(cur.NumWorkers, cur.NumPS, w, s)
	switch {
	case cur.NumPS+cur.NumWorkers > n:
		t.ps, t.w = s, w
		t.why = fmt.Sprintf("machines reclaimed: rebalanced to eq. 3.5 on %d (predicted gain %.1f%%)", n, 100*gain)
	case gain < cr.cfg.MinGain:
		t.ps, t.w = cur.NumPS, cur.NumWorkers
		t.why = fmt.Sprintf("eq. 3.5 on %d machines says %s, a predicted gain of %.1f%%, below min_gain %.1f%%", n, structs.Shape{PS: s, Workers: w}, 100*gain, 100*cr.cfg.MinGain)
	default:
		t.ps, t.w = s, w
		t.why = fmt.Sprintf("reconfigured by eq. 3.5 on %d machines from %s, a predicted gain of %.1f%%", n, structs.Shape{PS: cur.NumPS, Workers: cur.NumWorkers}, 100*gain)
	}
	return t
}
