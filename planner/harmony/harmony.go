package harmony

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
)

// Name is the algorithm's registry name.
const Name = "harmony"

// Harmony implements planner.Algorithm.
type Harmony struct {
	opts Options
}

var (
	_ planner.Algorithm    = (*Harmony)(nil)
	_ planner.Configurable = (*Harmony)(nil)
)

// New returns Harmony with the default options.
func New() planner.Algorithm { return &Harmony{opts: Options{}.withDefaults()} }

// Name returns "harmony".
func (*Harmony) Name() string { return Name }

// SetConfig sets cpu_weight (α of eq. 4.3, in (0.5, 1]) and min_gain
// (the least relative utilisation gain that regroups running jobs, in
// [0, 1)); keys left out take their defaults. Bad values change nothing.
func (h *Harmony) SetConfig(options map[string]string) error {
	var o Options
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v, err := strconv.ParseFloat(options[k], 64)
		switch k {
		case "cpu_weight":
			if err != nil || !(v > 0.5 && v <= 1) {
				errs = append(errs, fmt.Errorf("cpu_weight = %q: must be a number in (0.5, 1]", options[k]))
			}
			o.CPUWeight = v
		case "min_gain":
			if err != nil || !(v >= 0 && v < 1) {
				errs = append(errs, fmt.Errorf("min_gain = %q: must be a number in [0, 1)", options[k]))
			}
			o.MinGain = v
			if v == 0 {
				o.MinGain = 1e-12 // zero means the default in Options
			}
		default:
			errs = append(errs, fmt.Errorf("unknown option %q; harmony takes cpu_weight and min_gain", k))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	h.opts = o.withDefaults()
	return nil
}

// profile is a job's Harmony profile from its measured subtasks: the
// computation of an iteration on one machine (a step's computation at w
// workers, times w) and its communication.
func profile(j *planner.Job) (Job, bool) {
	s := j.Subtasks
	if s == nil || s.Workers < 1 {
		return Job{}, false
	}
	p := Job{CPU1: s.CPU * float64(s.Workers), Net: s.Net}
	finite := func(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }
	if !finite(p.CPU1) || !finite(p.Net) || p.CPU1+p.Net <= 0 {
		return Job{}, false
	}
	return p, true
}

// Plan places jobs in Harmony's groups. Jobs not profiled yet run alone
// at their minimum first, on nodes of their own, to be measured (as the
// dissertation profiles jobs before grouping them). The other nodes go to
// the groups of the profiled jobs, by arrival order (Group). A group's
// jobs share its nodes, each with one worker and one server per node
// (within their bounds). Running jobs are regrouped only when the new
// grouping's utilisation beats the current one's by MinGain; otherwise
// they stay as they are and only new jobs are grouped, on the free nodes.
// Jobs Algorithm 1 leaves out, which the dissertation queues, run at their
// minimum in the room the groups leave: Caravan leaves no job waiting
// while its minimum fits.
func (h *Harmony) Plan(req *planner.Request) (*planner.Decision, error) {
	jobs := slices.Clone(req.Jobs)
	planner.SortJobs(jobs)
	slices.SortStableFunc(jobs, func(a, b *planner.Job) int { return cmp.Compare(a.Job.SubmitTime, b.Job.SubmitTime) })
	c := planner.NewCluster(req.Nodes)
	out := map[*planner.Job]*structs.Placement{}
	used := make([]bool, len(c.Nodes))

	// Jobs to profile, alone at their minimum.
	var profiled []*planner.Job
	var profiles []Job
	for _, j := range jobs {
		if p, ok := profile(j); ok {
			profiled, profiles = append(profiled, j), append(profiles, p)
			continue
		}
		out[j] = h.alone(c, j, used)
	}

	free := make([]int, 0, len(c.Nodes))
	for i := range c.Nodes {
		if !used[i] {
			free = append(free, i)
		}
	}
	groups, free := h.grouping(c, profiled, profiles, free, out)
	for k, members := range groups.Groups {
		nodes := free[:groups.Machines[k]]
		free = free[groups.Machines[k]:]
		for _, x := range members {
			out[profiled[x]] = place(c, profiled[x], nodes, len(members))
		}
	}
	// Caravan leaves no job waiting while its minimum fits: jobs left out
	// of the groups run at their minimum in the room that is left.
	var placer *placement.Placer
	var dec planner.Decision
	for _, j := range jobs {
		p := out[j]
		if p == nil || p.Paused() {
			if placer == nil {
				placer = placement.New(c)
			}
			p = backfill(c, placer, j, p)
		}
		dec.Placements = append(dec.Placements, p)
	}
	planner.SortPlacements(dec.Placements)
	return &dec, nil
}

// backfill runs a job outside the groups at its minimum where there is
// room, or returns it paused with why (the reason of paused, if given).
func backfill(c *planner.Cluster, placer *placement.Placer, j *planner.Job, paused *structs.Placement) *structs.Placement {
	psb, wb := j.Bounds()
	t := c.JobTasks(j)
	if nodes, ok := placer.Place(t.PS, psb.Min, t.Worker, wb.Min); ok {
		return &structs.Placement{Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: psb.Min, NumWorkers: wb.Min, Nodes: nodes,
			Reason: "harmony: at its minimum outside the groups, in the room they leave"}
	}
	if paused != nil {
		return paused
	}
	return planner.Paused(j, "harmony: waiting for room")
}

// alone places a job to be profiled at its minimum on nodes no group
// uses, keeping a running placement of that size.
func (h *Harmony) alone(c *planner.Cluster, j *planner.Job, used []bool) *structs.Placement {
	psb, wb := j.Bounds()
	t := c.JobTasks(j)
	p := c.KeepCurrent(j.Current, t, psb.Min, wb.Min)
	if p == nil {
		nodes, ok := placement.New(c).Place(t.PS, psb.Min, t.Worker, wb.Min)
		if !ok {
			return planner.Paused(j, "harmony: waiting for room to profile it")
		}
		p = &structs.Placement{Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: psb.Min, NumWorkers: wb.Min, Nodes: nodes}
	}
	for _, nt := range p.Nodes {
		if i, ok := c.NodeIndex(nt.NodeID); ok {
			used[i] = true
		}
	}
	p.Reason = "harmony: alone at its minimum while its computation and communication are measured"
	return p
}

// grouping groups the profiled jobs on the free nodes. The incremental
// grouping keeps the running groups where they are and groups only the
// other jobs, on the nodes those leave; a fresh grouping regroups
// everything. The fresh one is taken only when its utilisation beats the
// incremental one's by MinGain, so that jobs move only for a real gain.
// Kept placements are written to out. It returns the grouping still to
// place, of indexes into jobs, and the nodes to place it on.
func (h *Harmony) grouping(c *planner.Cluster, jobs []*planner.Job, profiles []Job, free []int, out map[*planner.Job]*structs.Placement) (*Grouping, []int) {
	fresh := Group(profiles, len(free), h.opts)
	cur, curNodes := current(c, jobs, free)
	if len(cur.Groups) == 0 {
		return fresh, free
	}
	taken := map[int]bool{}
	grouped := map[int]bool{}
	for k, members := range cur.Groups {
		for _, x := range members {
			grouped[x] = true
		}
		for _, i := range curNodes[k] {
			taken[i] = true
		}
	}
	var rest []int
	for _, i := range free {
		if !taken[i] {
			rest = append(rest, i)
		}
	}
	var others []int
	var otherProfiles []Job
	for x := range jobs {
		if !grouped[x] {
			others = append(others, x)
			otherProfiles = append(otherProfiles, profiles[x])
		}
	}
	added := Group(otherProfiles, len(rest), h.opts)
	incremental := &Grouping{Groups: slices.Clone(cur.Groups), Machines: slices.Clone(cur.Machines)}
	for k, members := range added.Groups {
		for y := range members {
			added.Groups[k][y] = others[members[y]]
		}
		incremental.Groups = append(incremental.Groups, added.Groups[k])
		incremental.Machines = append(incremental.Machines, added.Machines[k])
	}
	total, alpha := len(free), h.opts.CPUWeight
	if fresh.Utilisation(profiles, total, alpha) >= incremental.Utilisation(profiles, total, alpha)*(1+h.opts.MinGain) {
		return fresh, free
	}
	for k, members := range cur.Groups {
		for _, x := range members {
			j := jobs[x]
			if kept := c.KeepCurrent(j.Current, c.JobTasks(j), j.Current.NumPS, j.Current.NumWorkers); kept != nil {
				kept.Reason = fmt.Sprintf("harmony: kept in its group of %d jobs on %d nodes (regrouping would gain under %.0f%%)",
					len(members), len(curNodes[k]), 100*h.opts.MinGain)
				out[j] = kept
			}
		}
	}
	return added, rest
}

// current returns the groups of running jobs, from their placements:
// jobs on the same set of free nodes form a group. It returns each
// group's nodes beside it.
func current(c *planner.Cluster, jobs []*planner.Job, free []int) (*Grouping, [][]int) {
	isFree := map[int]bool{}
	for _, i := range free {
		isFree[i] = true
	}
	bySet := map[string]int{}
	g := &Grouping{}
	var nodes [][]int
	for x, j := range jobs {
		if j.Current == nil || j.Current.Paused() {
			continue
		}
		var set []int
		ok := true
		for _, nt := range j.Current.Nodes {
			i, known := c.NodeIndex(nt.NodeID)
			if !known || !isFree[i] {
				ok = false
				break
			}
			set = append(set, i)
		}
		if !ok {
			continue
		}
		slices.Sort(set)
		key := fmt.Sprint(set)
		k, seen := bySet[key]
		if !seen {
			k = len(g.Groups)
			bySet[key] = k
			g.Groups = append(g.Groups, nil)
			g.Machines = append(g.Machines, len(set))
			nodes = append(nodes, set)
		}
		g.Groups[k] = append(g.Groups[k], x)
	}
	return g, nodes
}

// place runs a job of a group of size jobs on nodes, one worker and one
// server per node within its bounds; paused when its bounds or the
// nodes' capacity do not allow it.
func place(c *planner.Cluster, j *planner.Job, nodes []int, size int) *structs.Placement {
	psb, wb := j.Bounds()
	m := len(nodes)
	w := min(m, wb.Max)
	ps := 0
	if j.HasPS() {
		ps = min(m, psb.Max)
	}
	if w < wb.Min || j.HasPS() && ps < psb.Min {
		return planner.Paused(j, fmt.Sprintf("harmony: its group has %d nodes, its bounds need more", m))
	}
	t := c.JobTasks(j)
	p := &structs.Placement{Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: ps, NumWorkers: w,
		Reason: fmt.Sprintf("harmony: in a group of %d jobs on %d nodes", size, m)}
	for k, i := range nodes[:max(w, ps)] {
		nt := &structs.NodeTasks{NodeID: c.Nodes[i].ID}
		if k < ps {
			nt.PS = 1
		}
		if k < w {
			nt.Workers = 1
		}
		if !c.FitsPair(i, t.PS, nt.PS, t.Worker, nt.Workers) {
			return planner.Paused(j, "harmony: its group's nodes lack room for its tasks: "+strings.TrimSpace(c.Describe(i)))
		}
		p.Nodes = append(p.Nodes, nt)
	}
	for _, nt := range p.Nodes {
		i, _ := c.NodeIndex(nt.NodeID)
		c.Take(i, t.PS, nt.PS)
		c.Take(i, t.Worker, nt.Workers)
	}
	return p
}
