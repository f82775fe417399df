package dorm

import (
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/drf"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
)

// Name is the algorithm's registry name.
const Name = "dorm"

// WaitingReason starts the reason of a job the MILP leaves waiting while
// its minimum may fit: running it would break the fairness budget (eq. 15).
const WaitingReason = "dorm: waiting"

// KeptReason starts every reason of a decision that keeps the existing
// allocation because P2 had no answer (§IV-B: "If there is no feasible
// solutions, Dorm would keep existing resource allocations until more
// running applications finish and release their resources").
const KeptReason = "dorm: kept the existing allocation"

// FallbackReason starts every reason of a decision that is DRF's because
// P2 had no answer and the existing allocation cannot be kept (a running
// job's node left the cluster or shrank).
const FallbackReason = "dorm: fell back to drf"

// DefaultTimeLimit bounds one solve.
const DefaultTimeLimit = 10 * time.Second

// Presets are the paper's settings (§V-A), by the option preset's value.
var Presets = map[string]Thresholds{
	"dorm-1": {Theta1: 0.2, Theta2: 0.1},
	"dorm-2": {Theta1: 0.1, Theta2: 0.2},
	"dorm-3": {Theta1: 0.1, Theta2: 0.1},
}

// Thresholds are θ1 (fairness loss, eq. 15) and θ2 (adjusted applications,
// eq. 16), each in [0, 1].
type Thresholds struct{ Theta1, Theta2 float64 }

// Solve describes the last Plan's solve, for measurements.
type Solve struct {
	// Status is how glpsol ended; empty when no model was solved (no jobs).
	Status Status
	// Duration is the wall time of the solver process.
	Duration time.Duration
	// Fallback, when not empty, is why P2 gave no answer: the decision
	// keeps the existing allocation (KeptReason), or is DRF's when that
	// does not fit (FallbackReason).
	Fallback string
	// Utilisation is eq. 1 of the decision; FairnessLoss eq. 2 (against
	// DRF's shares); Adjusted eq. 4; Running |A^t ∩ A^{t-1}|.
	Utilisation, FairnessLoss float64
	Adjusted, Running         int
	// LossBound and AdjustBound are eqs. 15 and 16's right-hand sides.
	LossBound   float64
	AdjustBound int
	// Excess is how far the MILP's fairness loss goes above LossBound:
	// 0 unless the running jobs cannot come within the bound by the
	// adjustments eq. 16 allows (see the package doc).
	Excess float64
	// Columns is the number of the MILP's variables.
	Columns int
}

// Dorm implements planner.Algorithm. It is not safe for concurrent use.
type Dorm struct {
	thresholds Thresholds
	timeLimit  time.Duration
	glpsol     string
	logger     hclog.Logger
	last       Solve
}

var (
	_ planner.Algorithm    = (*Dorm)(nil)
	_ planner.Describer    = (*Dorm)(nil)
	_ planner.Configurable = (*Dorm)(nil)
)

// New returns Dorm with Dorm-3's thresholds (the paper's fairest), a 10 s
// time limit and glpsol from the PATH.
func New() planner.Algorithm {
	return &Dorm{thresholds: Presets["dorm-3"], timeLimit: DefaultTimeLimit, glpsol: "glpsol", logger: hclog.NewNullLogger()}
}

// NewWithLogger returns New's Dorm that logs its fallbacks and solves to
// logger.
func NewWithLogger(logger hclog.Logger) *Dorm {
	d := New().(*Dorm)
	d.logger = logger.Named(Name)
	return d
}

// Name returns "dorm".
func (*Dorm) Name() string { return Name }

// Capabilities: Dorm plans from the jobs' specs and placements alone
// (planner.Describer).
func (*Dorm) Capabilities() planner.Capabilities { return planner.Capabilities{} }

// LastSolve describes the last Plan's solve.
func (d *Dorm) LastSolve() Solve { return d.last }

// SetConfig takes preset ("dorm-1", "dorm-2" or "dorm-3"), theta1 and
// theta2 (in [0, 1], overriding the preset's), time_limit (a Go duration,
// above 0) and glpsol (the solver's path, default "glpsol" on the PATH).
// It fails with ErrNoSolver when glpsol cannot be found, so that a missing
// solver is reported when the algorithm is configured, not at a round.
func (d *Dorm) SetConfig(options map[string]string) error {
	th, limit, bin := Presets["dorm-3"], DefaultTimeLimit, "glpsol"
	var errs []error
	if p, ok := options["preset"]; ok {
		if th, ok = Presets[p]; !ok {
			errs = append(errs, fmt.Errorf("preset = %q: use dorm-1, dorm-2 or dorm-3", p))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v := options[k]
		switch k {
		case "preset":
		case "theta1", "theta2":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f > 1 {
				errs = append(errs, fmt.Errorf("%s = %q: want a number in [0, 1]", k, v))
				continue
			}
			if k == "theta1" {
				th.Theta1 = f
			} else {
				th.Theta2 = f
			}
		case "time_limit":
			t, err := time.ParseDuration(v)
			if err != nil || t <= 0 {
				errs = append(errs, fmt.Errorf("time_limit = %q: want a positive duration such as \"10s\"", v))
				continue
			}
			limit = t
		case "glpsol":
			bin = v
		default:
			errs = append(errs, fmt.Errorf("unknown option %q; dorm takes preset, theta1, theta2, time_limit and glpsol", k))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoSolver, err)
	}
	d.thresholds, d.timeLimit, d.glpsol = th, limit, path
	return nil
}

// Plan solves P2 for the request and places every job as the solution
// says. When P2 is infeasible, no integer solution is found within the
// time limit, or the solution fails planner.CheckDecision, it keeps the
// existing allocation (§IV-B), with KeptReason in every reason: running
// jobs stay where they are and the others wait. Only when that allocation
// no longer fits the cluster does it take drf's decision, with
// FallbackReason. It returns an error only when glpsol is missing or fails.
func (d *Dorm) Plan(req *planner.Request) (*planner.Decision, error) {
	d.last = Solve{}
	if len(req.Jobs) == 0 {
		return &planner.Decision{}, nil
	}
	views := slices.Clone(req.Jobs)
	planner.SortJobs(views)
	c := planner.NewCluster(req.Nodes)
	res := newResources(c)
	fair := res.fairShares(c, views)

	m := newModel(req, views, res, fair, d.thresholds.Theta1, d.thresholds.Theta2)
	d.last.Columns, d.last.LossBound, d.last.AdjustBound, d.last.Running = len(m.cols), m.lossBound, m.adjustBound, m.running
	glpsol := d.glpsol
	if glpsol == "" {
		glpsol = "glpsol"
	}
	start := time.Now()
	sol, err := solve(glpsol, []byte(m.lp.String()), len(m.cols), d.timeLimit)
	d.last.Duration = time.Since(start)
	if err != nil {
		return nil, err
	}
	d.last.Status = sol.status
	d.logger.Debug("solved", "status", sol.status, "duration", d.last.Duration, "columns", len(m.cols), "objective", sol.obj)
	switch sol.status {
	case StatusInfeasible:
		return d.fallback(req, "P2 is infeasible")
	case StatusNoSolution:
		return d.fallback(req, fmt.Sprintf("P2 no solution within %s", d.timeLimit))
	}
	d.last.Excess = max(0, sol.cols[m.excess])
	if d.last.Excess > 1e-9 {
		d.logger.Info("fairness budget exceeded", "bound", m.lossBound, "excess", d.last.Excess)
	}
	dec := m.decision(res, sol, d.last.Status)
	if err := planner.CheckDecision(req, dec); err != nil {
		return d.fallback(req, "the MILP's assignment does not fit: "+err.Error())
	}
	d.measure(req, dec)
	return dec, nil
}

// fallback keeps the existing allocation (§IV-B) when P2 gave no usable
// answer: every running job keeps its tasks where they are, and waiting
// jobs start at their minimum where the rest of the cluster holds them
// (keep). When the running jobs no longer fit the request's cluster (a
// node left or shrank), it returns drf's decision instead. Either way the
// reasons and the logger say why.
func (d *Dorm) fallback(req *planner.Request, why string) (*planner.Decision, error) {
	d.last.Fallback = why
	dec, err := keep(req)
	if err == nil {
		err = planner.CheckDecision(req, dec)
	}
	prefix := KeptReason
	if err != nil {
		d.logger.Warn("fell back to drf", "reason", why, "keep", err.Error())
		d.last.Fallback = why + "; the existing allocation does not fit: " + err.Error()
		if dec, err = drf.New().Plan(req); err != nil {
			return nil, fmt.Errorf("dorm: drf fallback: %w", err)
		}
		prefix = FallbackReason
	} else {
		d.logger.Warn("kept the existing allocation", "reason", why)
	}
	for _, p := range dec.Placements {
		p.Reason = prefix + " (" + why + "): " + p.Reason
	}
	d.measure(req, dec)
	return dec, nil
}

// keep is the existing allocation: each running job's current placement,
// copied and taken from the cluster first; then each waiting job, in the
// request's order, at its minimum where the rest of the cluster holds it,
// or waiting. §IV-B keeps allocations "until more running applications
// finish"; with nothing running, or a time limit P2 hits every round, only
// keeping would start nothing, round after round. It fails when a running
// job's placement no longer fits.
func keep(req *planner.Request) (*planner.Decision, error) {
	c := planner.NewCluster(req.Nodes)
	out := make([]*structs.Placement, len(req.Jobs))
	tasks := make([]planner.JobTasks, len(req.Jobs))
	for i, j := range req.Jobs {
		tasks[i] = c.JobTasks(j)
		cur := j.Current
		if cur == nil || cur.Paused() {
			continue
		}
		if out[i] = c.KeepCurrent(cur, tasks[i], cur.NumPS, cur.NumWorkers); out[i] == nil {
			return nil, fmt.Errorf("job %s no longer fits where it runs", j.Job.ID)
		}
		out[i].Reason = fmt.Sprintf("%s unchanged", structs.Shape{PS: cur.NumPS, Workers: cur.NumWorkers})
	}
	placer := placement.New(c)
	for i, j := range req.Jobs {
		if out[i] != nil {
			continue
		}
		m := j.Minimum()
		nodes, ok := placer.Place(tasks[i].PS, m.PS, tasks[i].Worker, m.Workers)
		if !ok {
			out[i] = planner.Paused(j, "waiting")
			continue
		}
		out[i] = &structs.Placement{Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: m.PS, NumWorkers: m.Workers, Nodes: nodes,
			Reason: fmt.Sprintf("started at its minimum %s in the room the running jobs leave", m)}
	}
	planner.SortPlacements(out)
	return &planner.Decision{Placements: out}, nil
}

// measure fills the last solve's eqs. 1, 2 and 4 for the decision.
func (d *Dorm) measure(req *planner.Request, dec *planner.Decision) {
	m := Measure(req, dec)
	d.last.Utilisation, d.last.FairnessLoss, d.last.Adjusted = m.Utilisation, m.FairnessLoss, m.Adjusted
}

// decision turns the solution into placements.
func (m *model) decision(res resources, sol *solution, status Status) *planner.Decision {
	out := make([]*structs.Placement, len(m.jobs))
	for k, j := range m.jobs {
		p := &structs.Placement{Namespace: j.view.Job.Namespace, JobID: j.view.Job.ID}
		for i, n := range m.nodes {
			nt := &structs.NodeTasks{NodeID: n.ID}
			if j.p[i] >= 0 {
				nt.PS = round(sol.cols[j.p[i]])
			}
			if j.w[i] >= 0 {
				nt.Workers = round(sol.cols[j.w[i]])
			}
			if nt.PS+nt.Workers > 0 {
				p.Nodes = append(p.Nodes, nt)
				p.NumPS += nt.PS
				p.NumWorkers += nt.Workers
			}
		}
		slices.SortFunc(p.Nodes, func(a, b *structs.NodeTasks) int { return strings.Compare(a.NodeID, b.NodeID) })
		if j.running && round(sol.cols[j.r]) == 0 {
			// Not adjusted (eqs. 13–14): the same tasks per node, so the
			// job keeps its entries as they are, task sizes included, on
			// the nodes still there.
			p.Nodes = keptNodes(j.view.Current.Nodes, m.nodes)
		}
		s := res.dominant(j.tasks, p.NumPS, p.NumWorkers)
		switch {
		case p.Paused():
			p.Reason = fmt.Sprintf("%s: running its minimum of %s would break the fairness budget (θ1) or the capacity; DRF share %.3f", WaitingReason, structs.Shape{PS: j.minP, Workers: j.minW}, j.fair)
		case j.running && round(sol.cols[j.r]) == 0:
			p.Reason = fmt.Sprintf("dorm: %s unchanged at share %.3f (DRF share %.3f); P2 %s", structs.Shape{PS: p.NumPS, Workers: p.NumWorkers}, s, j.fair, status)
		default:
			p.Reason = fmt.Sprintf("dorm: %s at share %.3f (DRF share %.3f); P2 %s", structs.Shape{PS: p.NumPS, Workers: p.NumWorkers}, s, j.fair, status)
		}
		out[k] = p
	}
	planner.SortPlacements(out)
	return &planner.Decision{Placements: out}
}

// keptNodes is the entries of cur on nodes, copied.
func keptNodes(cur []*structs.NodeTasks, nodes []*structs.Node) []*structs.NodeTasks {
	var out []*structs.NodeTasks
	for _, nt := range cur {
		if slices.ContainsFunc(nodes, func(n *structs.Node) bool { return n.ID == nt.NodeID }) {
			c := *nt
			out = append(out, &c)
		}
	}
	return out
}
