package harmony

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// IsolatedName is the isolated baseline's name.
const IsolatedName = "isolated"

// ColocatedName is the naively co-located baseline's name.
const ColocatedName = "colocated"

// Isolated is the dissertation's isolated baseline (§4.4.1, L1017): every
// job runs on a disjoint set of machines of its own, one worker and one
// server per machine, at the DoP of IsolatedDoP. Jobs start first come,
// first served: running jobs keep their machines, and a job that does not
// fit waits, and so do the jobs after it. A job not profiled yet starts at
// its minimum; once profiled it moves to its DoP when that fits, once: a
// job running at another size keeps it, so that noise in its measured
// subtasks does not move it back and forth. It is a comparison baseline
// for `caravan sim`, not one of the server's algorithms.
type Isolated struct{}

// Colocated is the naively co-located baseline (§4.4.1, L1019–1034, after
// Gandiva): jobs share machines with no grouping and no coordination of
// their subtasks. Each job runs at the same DoP Isolated gives it, one
// worker and one server per machine, first come, first served as
// Isolated, on machines holding fewer than NaiveJobsPerNode jobs (§4.1,
// Figure 4.3: three naively co-located jobs run out of memory).
//
// Which machines a job shares is its Order. The dissertation runs "all
// possible cases in a brute-force manner" and reports the best and the
// worst (Figure 4.10's error bars; the bar is their average); a brute
// force over 80 jobs' combinations is not possible here, so the two ends
// are two rules: OrderBest puts a job on the machines where it balances
// computation and communication the most (the smallest |T_diff of the
// machine's jobs + the job's|, Algorithm 2's measure of a group's
// imbalance, §4.3.2), pairing CPU-heavy jobs with network-heavy ones;
// OrderWorst on those where it balances them the least, pairing alike
// jobs. OrderSpread (the default) takes the machines with the most free
// CPU, wherever jobs land. How co-located jobs slow each other is the
// simulator's business, not the planner's.
type Colocated struct {
	order string
}

// The orders of the co-located baseline (Colocated), its option "order".
const (
	OrderSpread = "spread"
	OrderBest   = "best"
	OrderWorst  = "worst"
)

// NaiveJobsPerNode is the most jobs Colocated puts on one machine: §4.1
// (Figure 4.3) co-locates two jobs naively, and three run out of memory.
const NaiveJobsPerNode = 2

var (
	_ planner.Algorithm    = (*Isolated)(nil)
	_ planner.Describer    = (*Isolated)(nil)
	_ planner.Algorithm    = (*Colocated)(nil)
	_ planner.Describer    = (*Colocated)(nil)
	_ planner.Configurable = (*Colocated)(nil)
)

// NewIsolated returns the isolated baseline.
func NewIsolated() planner.Algorithm { return &Isolated{} }

// NewColocated returns the naively co-located baseline.
func NewColocated() planner.Algorithm { return &Colocated{order: OrderSpread} }

// SetConfig sets order: spread (the default), best or worst; unknown keys
// and values are errors.
func (c *Colocated) SetConfig(options map[string]string) error {
	order := OrderSpread
	for k, v := range options {
		if k != "order" {
			return fmt.Errorf("unknown option %q; colocated takes order", k)
		}
		switch v {
		case OrderSpread, OrderBest, OrderWorst:
			order = v
		default:
			return fmt.Errorf("order = %q: must be spread, best or worst", v)
		}
	}
	c.order = order
	return nil
}

// Name returns "isolated".
func (*Isolated) Name() string { return IsolatedName }

// Name returns "colocated".
func (*Colocated) Name() string { return ColocatedName }

// Capabilities: the isolated baseline runs jobs at the DoP of their
// measured subtasks (planner.Describer).
func (*Isolated) Capabilities() planner.Capabilities {
	return planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorSubtasks}}
}

// Capabilities: the co-located baseline runs jobs at the DoP of their
// measured subtasks, and the jobs it puts together are not coordinated:
// that is its point (planner.Describer).
func (*Colocated) Capabilities() planner.Capabilities {
	return planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorSubtasks}, Uncoordinated: true}
}

// IsolatedDoP is the DoP (machines, one worker and one server on each) the
// isolated baseline gives a job of profile p on at most limit machines.
// §4.4.1 (L1017) maximises "the CPU utilization rates … while reducing the
// network overheads that occur with lower DoP and higher CPU utilization".
// A job's CPU utilisation alone, T_cpu/(T_cpu+T_net) with T_cpu = CPU1/m
// (eq. 4.2), only falls with m, so it cannot be the whole rule; we take
// the largest DoP at which the job is still CPU-bound, T_cpu ≥ T_net, that
// is ⌊CPU1/Net⌋: beyond it, more machines make communication the larger
// part of an iteration. At least 1; limit when Net is zero.
func IsolatedDoP(p Job, limit int) int {
	if limit < 1 {
		return 1
	}
	if p.Net <= 0 {
		return limit
	}
	return max(1, min(limit, int(math.Floor(p.CPU1/p.Net*(1+1e-12)))))
}

// dop is the DoP a baseline runs j at: IsolatedDoP of its profile within
// its bounds, its minimum while it is not profiled.
func dop(j *planner.Job, nodes int) int {
	lo, hi := dopBounds(j)
	p, ok := profile(j)
	if !ok {
		return lo
	}
	return max(lo, min(hi, IsolatedDoP(p, nodes)))
}

// minDoP is the DoP a baseline starts j at before it is profiled.
func minDoP(j *planner.Job) int {
	lo, _ := dopBounds(j)
	return lo
}

// dopBounds are the least and most machines j's bounds allow, one worker
// and one server per machine.
func dopBounds(j *planner.Job) (lo, hi int) {
	psb, wb := j.Bounds()
	lo, hi = max(wb.Min, 1), max(wb.Max, 1)
	if j.HasPS() {
		lo, hi = max(lo, psb.Min), min(hi, max(psb.Max, 1))
	}
	return lo, hi
}

// Plan keeps running jobs and starts waiting ones first come, first
// served on free machines.
func (*Isolated) Plan(req *planner.Request) (*planner.Decision, error) {
	return fcfs(req, IsolatedName, ""), nil
}

// Plan keeps running jobs and starts waiting ones first come, first
// served on machines it shares by its order.
func (c *Colocated) Plan(req *planner.Request) (*planner.Decision, error) {
	order := c.order
	if order == "" {
		order = OrderSpread
	}
	return fcfs(req, ColocatedName, order), nil
}

// nodeUse is what fcfs has put on a machine: how many jobs, and the sum
// of their T_diff (computation minus communication per iteration, at
// their DoP; 0 for a job not profiled).
type nodeUse struct {
	jobs int
	diff float64
}

// fcfs plans first come, first served: on machines of their own with
// order "" (Isolated), shared by order otherwise (Colocated).
func fcfs(req *planner.Request, name, order string) *planner.Decision {
	jobs := slices.Clone(req.Jobs)
	planner.SortJobs(jobs)
	slices.SortStableFunc(jobs, func(x, y *planner.Job) int { return cmp.Compare(x.Job.SubmitTime, y.Job.SubmitTime) })
	c := planner.NewCluster(req.Nodes)
	used := make([]nodeUse, len(c.Nodes))
	out := map[*planner.Job]*structs.Placement{}
	keep := func(j *planner.Job) bool {
		kept := c.KeepCurrent(j.Current, c.JobTasks(j), j.Current.NumPS, j.Current.NumWorkers)
		if kept == nil {
			return false
		}
		kept.Reason = fmt.Sprintf("%s: running on %d nodes", name, len(kept.Nodes))
		out[j] = kept
		d := diff(j, len(kept.Nodes))
		for _, nt := range kept.Nodes {
			i, _ := c.NodeIndex(nt.NodeID)
			used[i].jobs++
			used[i].diff += d
		}
		return true
	}
	// Running jobs keep their machines; one profiled since it started
	// (at its minimum) moves to its DoP when that fits, below. Only from
	// its minimum: a DoP re-derived from noisy samples at every round
	// would move jobs whose CPU1/Net sits near an integer back and forth.
	var resize []*planner.Job
	for _, j := range jobs {
		if j.Current == nil || j.Current.Paused() {
			continue
		}
		if n := len(j.Current.Nodes); n == minDoP(j) && n != dop(j, len(c.Nodes)) {
			resize = append(resize, j)
			continue
		}
		keep(j)
	}
	// Their machines stay theirs until they move: a job resized first
	// must not take a machine another would be kept on.
	hold := func(j *planner.Job, sign float64) {
		d := diff(j, len(j.Current.Nodes))
		for _, nt := range j.Current.Nodes {
			if i, ok := c.NodeIndex(nt.NodeID); ok {
				used[i].jobs += int(sign)
				used[i].diff += sign * d
			}
		}
	}
	for _, j := range resize {
		hold(j, 1)
	}
	for _, j := range resize {
		hold(j, -1)
		if pl := start(c, j, name, order, used); pl != nil {
			out[j] = pl
		} else {
			keep(j)
		}
	}
	blocked := false
	for _, j := range jobs {
		if out[j] != nil {
			continue
		}
		if blocked {
			out[j] = planner.Paused(j, name+": waiting, first come, first served")
			continue
		}
		pl := start(c, j, name, order, used)
		if pl == nil {
			blocked = true
			out[j] = planner.Paused(j, fmt.Sprintf("%s: waiting for %d nodes, first come, first served", name, dop(j, len(c.Nodes))))
			continue
		}
		out[j] = pl
	}
	var dec planner.Decision
	for _, j := range jobs {
		dec.Placements = append(dec.Placements, out[j])
	}
	planner.SortPlacements(dec.Placements)
	return &dec
}

// diff is T_diff of j on m machines, 0 when it is not profiled.
func diff(j *planner.Job, m int) float64 {
	p, ok := profile(j)
	if !ok {
		return 0
	}
	return p.Diff(float64(max(m, 1)))
}

// start places a job at its DoP, one worker and one server per node, on
// nodes no other job uses (order ""), or shared by order with fewer than
// NaiveJobsPerNode jobs, and records it in used; nil when it does not fit.
func start(c *planner.Cluster, j *planner.Job, name, order string, used []nodeUse) *structs.Placement {
	m := dop(j, len(c.Nodes))
	t := c.JobTasks(j)
	psb, wb := j.Bounds()
	ps := 0
	if j.HasPS() {
		ps = min(m, max(psb.Max, 1))
	}
	w := min(m, max(wb.Max, 1))
	d := diff(j, m)
	order2 := make([]int, 0, len(c.Nodes))
	for i := range c.Nodes {
		if order == "" && used[i].jobs > 0 || used[i].jobs >= NaiveJobsPerNode {
			continue
		}
		order2 = append(order2, i)
	}
	// Imbalance of a machine with j on it: Algorithm 2's |T_diff + S_diff|.
	imbalance := func(i int) float64 { return math.Abs(used[i].diff + d) }
	switch order {
	case OrderSpread:
		slices.SortStableFunc(order2, func(a, b int) int {
			ca, _, _ := c.Free(a)
			cb, _, _ := c.Free(b)
			return cmp.Compare(cb, ca)
		})
	case OrderBest:
		slices.SortStableFunc(order2, func(a, b int) int { return cmp.Compare(imbalance(a), imbalance(b)) })
	case OrderWorst:
		slices.SortStableFunc(order2, func(a, b int) int { return cmp.Compare(imbalance(b), imbalance(a)) })
	}
	var nodes []int
	for _, i := range order2 {
		if len(nodes) == m {
			break
		}
		k := len(nodes)
		if c.FitsPair(i, t.PS, b2i(k < ps), t.Worker, b2i(k < w)) {
			nodes = append(nodes, i)
		}
	}
	if len(nodes) < m {
		return nil
	}
	slices.Sort(nodes)
	pl := placeOn(c, j, nodes)
	if pl.Paused() {
		return nil
	}
	pl.Reason = fmt.Sprintf("%s: on %d nodes", name, m)
	for _, i := range nodes {
		used[i].jobs++
		used[i].diff += d
	}
	return pl
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
