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

// WaitingReason starts the reason of a profiled job Harmony leaves
// waiting because grouping it would not raise U (Algorithm 1 stopped
// before it, or dynamic regrouping let it wait, L979), room or not.
const WaitingReason = "harmony: profiled, waiting"

// Options are the thresholds of dynamic regrouping (L979) that the text
// parameterises; DefaultOptions are the dissertation's.
type Options struct {
	// Similarity is how close, relatively, a waiting job's iteration time
	// and comp/comm ratio must be to a finished job's for it to replace
	// that job in its group (L979: "within 5%"). In [0, 1).
	Similarity float64
	// MinGain is the least relative gain in U (Util.Gain) for which
	// Harmony regroups, and for which a regrouping that moves more jobs is
	// preferred to one that moves fewer (L979: "less than 5%"). In [0, 1).
	MinGain float64
}

// DefaultOptions are the dissertation's thresholds: 5% and 5%.
func DefaultOptions() Options { return Options{Similarity: 0.05, MinGain: 0.05} }

// Harmony implements planner.Algorithm.
type Harmony struct {
	opts Options
}

var (
	_ planner.Algorithm    = (*Harmony)(nil)
	_ planner.Describer    = (*Harmony)(nil)
	_ planner.Configurable = (*Harmony)(nil)
)

// New returns Harmony with DefaultOptions.
func New() planner.Algorithm { return &Harmony{opts: DefaultOptions()} }

// Name returns "harmony".
func (*Harmony) Name() string { return Name }

// Capabilities: Harmony groups jobs by their measured subtasks
// (planner.Describer).
func (*Harmony) Capabilities() planner.Capabilities {
	return planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorSubtasks}}
}

// SetConfig sets similarity and min_gain, each a number in [0, 1); keys
// left out take their defaults, unknown keys are errors. It checks every
// key before it changes anything.
func (h *Harmony) SetConfig(options map[string]string) error {
	o := DefaultOptions()
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v, err := strconv.ParseFloat(options[k], 64)
		bad := err != nil || !(v >= 0 && v < 1)
		switch k {
		case "similarity":
			o.Similarity = v
		case "min_gain":
			o.MinGain = v
		default:
			errs = append(errs, fmt.Errorf("unknown option %q; harmony takes similarity and min_gain", k))
			continue
		}
		if bad {
			errs = append(errs, fmt.Errorf("%s = %q: must be a number in [0, 1)", k, options[k]))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	h.opts = o
	return nil
}

// profile is a job's Harmony profile from its measured subtasks: the
// computation of an iteration on one machine (a step's computation at w
// workers, times w, as eq. 4.2 scales it) and its communication. ok is
// false when the job has not been measured or the measurement is not
// finite and positive.
func profile(j *planner.Job) (Job, bool) {
	s := j.Subtasks
	if s == nil || s.Workers < 1 {
		return Job{}, false
	}
	p := Job{CPU1: s.CPU * float64(s.Workers), Net: s.Net}
	finite := func(x float64) bool { return x >= 0 && !math.IsInf(x, 1) && !math.IsNaN(x) }
	if !finite(p.CPU1) || !finite(p.Net) || p.CPU1+p.Net <= 0 {
		return Job{}, false
	}
	return p, true
}

// group is a job group as Plan sees it: its nodes and its jobs, profiled
// (by index into the plan's profiled list) and not yet profiled.
type group struct {
	nodes      []int
	profiled   []int
	profiling  []*planner.Job
	recorded   int     // profiled jobs the group had when last planned; 0: unknown
	fresh      int     // of profiled, those profiled since the last plan
	cpu1, net  float64 // their sums then
	vacancy    bool
	regrouped  bool
	newMembers []int
}

// plan is one Plan call's state.
type plan struct {
	h        *Harmony
	c        *planner.Cluster
	jobs     []*planner.Job // arrival order
	profiled []*planner.Job
	profiles []Job
	groups   []*group
	free     []int // nodes in no group, ascending
	waiting  []int // profiled jobs in no group, arrival order
	fresh    []int // profiled jobs profiled since the last plan, arrival order
	out      map[*planner.Job]*structs.Placement
}

// Plan groups the request's jobs as §4.3.2 describes; see the package doc
// for the steps. It is deterministic and stateless: the groups running
// now are read from the jobs' current placements (jobs on the same set of
// nodes form a group), and what a group held when it was last planned
// from the reason Harmony wrote into their placements.
func (h *Harmony) Plan(req *planner.Request) (*planner.Decision, error) {
	p := &plan{h: h, c: planner.NewCluster(req.Nodes), out: map[*planner.Job]*structs.Placement{}}
	p.jobs = slices.Clone(req.Jobs)
	planner.SortJobs(p.jobs)
	slices.SortStableFunc(p.jobs, func(a, b *planner.Job) int { return cmp.Compare(a.Job.SubmitTime, b.Job.SubmitTime) })
	index := map[*planner.Job]int{}
	for _, j := range p.jobs {
		if prof, ok := profile(j); ok {
			index[j] = len(p.profiled)
			p.profiled, p.profiles = append(p.profiled, j), append(p.profiles, prof)
		}
	}
	p.current(index)
	p.regroup()
	p.place()
	var dec planner.Decision
	for _, j := range p.jobs {
		dec.Placements = append(dec.Placements, p.out[j])
	}
	planner.SortPlacements(dec.Placements)
	return &dec, nil
}

// current derives the running groups from current placements: jobs on
// the same set of nodes form a group; a group whose nodes overlap an
// earlier one's (by arrival of its first job) is not a group, and its jobs
// wait to be grouped again.
func (p *plan) current(index map[*planner.Job]int) {
	bySet := map[string]*group{}
	owner := make([]*group, len(p.c.Nodes))
	for _, j := range p.jobs {
		if j.Current == nil || j.Current.Paused() {
			continue
		}
		set := make([]int, 0, len(j.Current.Nodes))
		ok := true
		for _, nt := range j.Current.Nodes {
			i, known := p.c.NodeIndex(nt.NodeID)
			if !known {
				ok = false
				break
			}
			set = append(set, i)
		}
		if !ok {
			continue
		}
		slices.Sort(set)
		set = slices.Compact(set)
		key := fmt.Sprint(set)
		g := bySet[key]
		if g == nil {
			clash := false
			for _, i := range set {
				clash = clash || owner[i] != nil
			}
			if clash {
				continue
			}
			g = &group{nodes: set}
			bySet[key] = g
			p.groups = append(p.groups, g)
			for _, i := range set {
				owner[i] = g
			}
		}
		if g.recorded == 0 {
			g.recorded, g.cpu1, g.net = parseReason(j.Current.Reason)
		}
		if x, ok := index[j]; ok {
			g.profiled = append(g.profiled, x)
			if profiling(j.Current.Reason) {
				// Profiled since the last plan: it carries on where it
				// runs until Harmony handles it (L813, L979 case 1).
				p.fresh = append(p.fresh, x)
				g.fresh++
			}
		} else {
			g.profiling = append(g.profiling, j)
		}
	}
	grouped := map[int]bool{}
	for _, g := range p.groups {
		for _, x := range g.profiled {
			grouped[x] = true
		}
		g.vacancy = g.recorded > len(g.profiled)-g.fresh
	}
	for x := range p.profiled {
		if !grouped[x] {
			p.waiting = append(p.waiting, x)
		}
	}
	for i := range p.c.Nodes {
		if owner[i] == nil {
			p.free = append(p.free, i)
		}
	}
}

// profiling reports whether a placement's reason is one Harmony gives a
// job while it is profiled.
func profiling(reason string) bool {
	return reason == profilingReason || strings.HasPrefix(reason, aloneReason)
}

// reasonFormat is what Harmony records in a grouped job's placement: the
// group's profiled jobs and their sums, so that the next Plan can tell
// that a job of the group finished and what it was (dynamic regrouping,
// L979).
const reasonFormat = "harmony: in a group of %d jobs on %d nodes (sum cpu1 %g s, sum net %g s)"

func parseReason(reason string) (n int, cpu1, net float64) {
	k := strings.Index(reason, "harmony: in a group of ")
	if k < 0 {
		return 0, 0, 0
	}
	var m int
	if _, err := fmt.Sscanf(reason[k:], reasonFormat, &n, &m, &cpu1, &net); err != nil {
		return 0, 0, 0
	}
	return n, cpu1, net
}

// pure reports whether a group holds only jobs not profiled yet: the naive
// groups of the initial profiling (L813).
func (g *group) pure() bool { return len(g.profiled)+len(g.newMembers) == 0 }

// regroup decides the groups of the profiled jobs (L977–979).
func (p *plan) regroup() {
	normal := 0
	for _, g := range p.groups {
		if !g.pure() {
			normal++
		}
	}
	// The naive start (L813): no group Harmony formed yet, every job runs
	// alone to be profiled (or has been).
	initial := true
	for _, g := range p.groups {
		initial = initial && g.recorded == 0 && len(g.profiled)+len(g.profiling) == 1
	}
	profilingNow := false
	for _, g := range p.groups {
		profilingNow = profilingNow || len(g.profiling) > 0
	}
	switch {
	case initial && profilingNow:
		// The initial profiling phase ends when every job started in it
		// is profiled (L813); until then the groups stay.
		return
	case initial:
		// Every job ran alone to be profiled: Algorithm 1 over all of
		// them on all the machines.
		p.widen(true)
		return
	}
	hadVacancy := false
	for _, g := range p.groups {
		hadVacancy = hadVacancy || g.vacancy
	}
	if hadVacancy && p.replace() {
		return
	}
	// Free nodes are machines no group holds: a group whose jobs all
	// finished left them, or they were never grouped (Algorithm 1 gives
	// every machine to a group, L973). Regrouping takes them up.
	vacancy := len(p.free) > 0 && (len(p.waiting) > 0 || normal > 0)
	for _, g := range p.groups {
		vacancy = vacancy || g.vacancy
	}
	if vacancy {
		p.widen(false)
		return
	}
	switch {
	case len(p.waiting) == 0 && len(p.fresh) > 0:
		// Newly profiled jobs, with no other job waiting: each joins
		// the group where U is highest, or waits (L979 case 1).
		for _, x := range slices.Clone(p.fresh) {
			p.take(x)
			p.join(x)
		}
	case len(p.waiting) == 1 && len(p.fresh) == 0:
		x := p.waiting[0]
		p.waiting = nil
		p.join(x)
	}
}

// replace is the first repair of a group whose job finished (L979): a
// waiting profiled job within Similarity of the finished job in iteration
// time and comp/comm ratio takes its place, or else a set of waiting jobs
// whose sums are (greedily: the longest first while the sum of iteration
// times stays within bounds). The finished jobs' profile is the group's
// recorded sums less its current ones. It reports whether every vacancy
// was filled.
func (p *plan) replace() bool {
	all := true
	for _, g := range p.groups {
		if !g.vacancy {
			continue
		}
		var c, n float64
		for _, x := range g.profiled {
			if !p.isFresh(x) { // the record leaves newly profiled jobs out
				c += p.profiles[x].CPU1
				n += p.profiles[x].Net
			}
		}
		gone := Job{CPU1: math.Max(0, g.cpu1-c), Net: math.Max(0, g.net-n)}
		m := float64(len(g.nodes))
		sim := p.h.opts.Similarity
		similar := func(x Job) bool {
			it, ig := x.Itr(m), gone.Itr(m)
			if ig <= 0 || x.Net <= 0 || gone.Net <= 0 {
				return false
			}
			rx, rg := x.CPU(m)/x.Net, gone.CPU(m)/gone.Net
			return math.Abs(it-ig) <= sim*ig && math.Abs(rx-rg) <= sim*rg
		}
		// Candidates: the paused (waiting) and the newly profiled jobs,
		// "profiled/paused jobs" (L979), in arrival order.
		cands := p.replacements()
		pick := -1
		for k, x := range cands {
			if similar(p.profiles[x]) {
				pick = k
				break
			}
		}
		var chosen []int
		if pick >= 0 {
			chosen = []int{pick}
		} else {
			order := make([]int, len(cands))
			for k := range order {
				order[k] = k
			}
			slices.SortStableFunc(order, func(a, b int) int {
				return cmp.Compare(p.profiles[cands[b]].Itr(m), p.profiles[cands[a]].Itr(m))
			})
			var sum Job
			for _, k := range order {
				x := p.profiles[cands[k]]
				if (Job{CPU1: sum.CPU1 + x.CPU1, Net: sum.Net + x.Net}).Itr(m) <= (1+sim)*gone.Itr(m) {
					sum.CPU1 += x.CPU1
					sum.Net += x.Net
					chosen = append(chosen, k)
				}
			}
			if len(chosen) < 2 || !similar(sum) {
				chosen = nil
			}
		}
		if len(chosen) == 0 {
			all = false
			continue
		}
		slices.Sort(chosen)
		for _, k := range chosen {
			p.take(cands[k])
			g.newMembers = append(g.newMembers, cands[k])
		}
		g.vacancy = false
	}
	return all
}

// replacements are the jobs that may replace a finished one: waiting and
// newly profiled, in arrival order.
func (p *plan) replacements() []int {
	out := slices.Concat(p.waiting, p.fresh)
	slices.Sort(out) // profiled indexes are in arrival order
	return slices.Compact(out)
}

// take removes profiled job x from the waiting jobs, the newly profiled
// ones and the group it runs in, so that it can be placed elsewhere.
func (p *plan) take(x int) {
	p.waiting = slices.DeleteFunc(p.waiting, func(y int) bool { return y == x })
	p.fresh = slices.DeleteFunc(p.fresh, func(y int) bool { return y == x })
	for _, g := range p.groups {
		g.profiled = slices.DeleteFunc(g.profiled, func(y int) bool { return y == x })
	}
}

// join is case (1) of L979: a newly profiled job, not in any group,
// joins the group where U is highest, if that improves U over it waiting;
// else it waits.
func (p *plan) join(x int) {
	keep := p.grouping(nil, nil)
	base := keep.UtilisationOver(p.profiles, len(p.c.Nodes))
	best, bestU := -1, base
	for k, g := range p.groups {
		if g.pure() {
			continue
		}
		try := p.grouping(map[int][]int{k: {x}}, nil)
		if u := try.UtilisationOver(p.profiles, len(p.c.Nodes)); u.Better(bestU) {
			best, bestU = k, u
		}
	}
	if best < 0 {
		p.waiting = append(p.waiting, x)
		return
	}
	p.groups[best].newMembers = append(p.groups[best].newMembers, x)
}

// grouping is the current grouping of profiled jobs, with extra members
// added to groups (by index) and the groups of drop left out.
func (p *plan) grouping(extra map[int][]int, drop map[int]bool) *Grouping {
	g := &Grouping{}
	for k, gr := range p.groups {
		if gr.pure() && len(extra[k]) == 0 || drop[k] {
			continue
		}
		members := slices.Concat(gr.profiled, gr.newMembers, extra[k])
		if len(members) == 0 {
			continue
		}
		g.Groups = append(g.Groups, members)
		g.Machines = append(g.Machines, len(gr.nodes))
	}
	return g
}

// candidate is one regrouping decision of widen: the groups it dissolves
// and Algorithm 1's grouping of their jobs and the waiting ones.
type candidate struct {
	drop  map[int]bool
	jobs  []int     // the profiled jobs it schedules, arrival order
	nodes []int     // the nodes it schedules them on
	g     *Grouping // indexes into jobs
	u     Util      // U of the whole cluster with it
}

// widen is the regrouping of L979 when replacement fails: Algorithm 1 over
// the waiting jobs and the jobs of a set of groups, on their nodes and the
// free ones, the set widening from the groups with a vacancy plus the
// group with the fewest jobs, one group (the fewest jobs next) at a time.
// Among the decisions, one that involves more jobs is taken only when it
// gains MinGain over the one before; the decision is applied only when it
// gains MinGain over keeping the groups. With all, at the end of the
// initial profiling, Algorithm 1 groups every job and its decision is
// applied as it is: the naive groups of profiling are not a grouping to
// keep (L776: once profiled, a job "is assigned to a job group by the job
// scheduler").
func (p *plan) widen(all bool) {
	order := make([]int, 0, len(p.groups))
	var start []int
	for k, g := range p.groups {
		switch {
		case len(g.profiling) > 0:
			// groups profiling a new job are left alone
		case g.vacancy:
			start = append(start, k)
		default:
			order = append(order, k)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(len(p.groups[a].profiled), len(p.groups[b].profiled))
	})
	var sets [][]int
	if all {
		sets = [][]int{slices.Concat(start, order)}
	} else {
		if len(p.free) > 0 && len(start) == 0 && len(p.waiting) > 0 {
			sets = append(sets, nil)
		}
		cur := slices.Clone(start)
		for _, k := range order {
			cur = append(cur, k)
			sets = append(sets, slices.Clone(cur))
		}
		if len(order) == 0 && len(start) > 0 {
			sets = append(sets, start)
		}
	}
	total := len(p.c.Nodes)
	keepU := p.grouping(nil, nil).UtilisationOver(p.profiles, total)
	var chosen *candidate
	for _, set := range sets {
		cd := &candidate{drop: map[int]bool{}, nodes: slices.Clone(p.free)}
		cd.jobs = slices.Clone(p.waiting)
		for _, k := range set {
			cd.drop[k] = true
			cd.jobs = append(cd.jobs, p.groups[k].profiled...)
			cd.jobs = append(cd.jobs, p.groups[k].newMembers...)
			cd.nodes = append(cd.nodes, p.groups[k].nodes...)
		}
		slices.Sort(cd.jobs) // profiled indexes are in arrival order
		slices.Sort(cd.nodes)
		if len(cd.jobs) == 0 || len(cd.nodes) == 0 {
			continue
		}
		sub := make([]Job, len(cd.jobs))
		for y, x := range cd.jobs {
			sub[y] = p.profiles[x]
		}
		cd.g = Group(sub, len(cd.nodes))
		whole := p.grouping(nil, cd.drop)
		for k, members := range cd.g.Groups {
			mapped := make([]int, len(members))
			for y, m := range members {
				mapped[y] = cd.jobs[m]
			}
			whole.Groups = append(whole.Groups, mapped)
			whole.Machines = append(whole.Machines, cd.g.Machines[k])
		}
		cd.u = whole.UtilisationOver(p.profiles, total)
		if chosen == nil || cd.u.Gain(chosen.u) >= p.h.opts.MinGain {
			chosen = cd
		}
	}
	if chosen == nil || !all && chosen.u.Gain(keepU) < p.h.opts.MinGain {
		return
	}
	for k := range chosen.drop {
		p.groups[k].profiled = nil
		p.groups[k].newMembers = nil
		p.groups[k].regrouped = true
	}
	p.free = chosen.nodes
	p.waiting = nil
	in := map[int]bool{}
	for k, members := range chosen.g.Groups {
		g := &group{nodes: p.free[:chosen.g.Machines[k]], regrouped: true}
		p.free = p.free[chosen.g.Machines[k]:]
		for _, y := range members {
			g.newMembers = append(g.newMembers, chosen.jobs[y])
			in[chosen.jobs[y]] = true
		}
		p.groups = append(p.groups, g)
	}
	for _, x := range chosen.jobs {
		if !in[x] {
			p.waiting = append(p.waiting, x)
		}
	}
}

// place turns the groups into placements: kept jobs keep theirs, new
// members and regrouped jobs run one worker and one server on every node
// of their group (within their bounds), waiting profiled jobs are paused,
// and jobs not profiled yet are placed to be profiled (L813, L825).
func (p *plan) place() {
	for _, g := range p.groups {
		if g.regrouped && len(g.newMembers) == 0 && len(g.profiling) == 0 {
			continue // dissolved
		}
		// Newly profiled jobs not handled yet carry on as they are and
		// keep their reason, to be handled later; the group's record
		// leaves them out.
		n := 0
		var c, nt float64
		for _, x := range slices.Concat(g.profiled, g.newMembers) {
			if !p.isFresh(x) || slices.Contains(g.newMembers, x) {
				n++
				c += p.profiles[x].CPU1
				nt += p.profiles[x].Net
			}
		}
		reason := fmt.Sprintf(reasonFormat, n, len(g.nodes), c, nt)
		for _, x := range g.profiled {
			j := p.profiled[x]
			if kept := p.c.KeepCurrent(j.Current, p.c.JobTasks(j), j.Current.NumPS, j.Current.NumWorkers); kept != nil {
				if !p.isFresh(x) {
					kept.Reason = reason
				}
				p.out[j] = kept
			} else {
				g.newMembers = append(g.newMembers, x)
			}
		}
		var profiling []*planner.Job
		for _, j := range g.profiling {
			if kept := p.c.KeepCurrent(j.Current, p.c.JobTasks(j), j.Current.NumPS, j.Current.NumWorkers); kept != nil {
				kept.Reason = profilingReason
				p.out[j] = kept
				profiling = append(profiling, j)
			}
		}
		g.profiling = profiling
		for _, x := range g.newMembers {
			j := p.profiled[x]
			pl := placeInGroup(p.c, j, g.nodes)
			if pl == nil {
				pl = planner.Paused(j, WaitingReason+": its group's nodes lack room for its tasks")
			} else {
				pl.Reason = reason
			}
			p.out[j] = pl
		}
	}
	for _, x := range p.waiting {
		j := p.profiled[x]
		if p.out[j] == nil {
			p.out[j] = planner.Paused(j, WaitingReason+": grouping it would not raise utilisation")
		}
	}
	p.profile()
}

// profile places the jobs not profiled yet and not running (§4.3.2
// "Profiling"): with no job groups, each alone at its minimum on free
// nodes, as many as fit (L813); otherwise in a group already profiling
// another new job, else the group with the fewest machines (L825), the
// next one when a group's nodes lack room; else alone on free nodes; else
// they wait.
func (p *plan) profile() {
	var cands []*group
	for _, g := range p.groups {
		if !(g.regrouped && len(g.newMembers) == 0 && len(g.profiling) == 0) && !g.pure() {
			cands = append(cands, g)
		}
	}
	slices.SortStableFunc(cands, func(a, b *group) int {
		pa, pb := len(a.profiling) > 0, len(b.profiling) > 0
		if pa != pb {
			if pa {
				return -1
			}
			return 1
		}
		return cmp.Compare(len(a.nodes), len(b.nodes))
	})
	isFree := make([]bool, len(p.c.Nodes))
	for _, i := range p.free {
		isFree[i] = true
	}
	for _, j := range p.jobs {
		if p.out[j] != nil {
			continue
		}
		if _, ok := profile(j); ok {
			continue
		}
		var pl *structs.Placement
		if free := p.freeCount(isFree); free > 0 {
			// Machines no group holds: profile it there, alone at its
			// minimum, as at initialisation (L813).
			pl = p.alone(j, isFree)
			if !pl.Paused() {
				p.out[j] = pl
				continue
			}
			pl = nil
		}
		for _, g := range cands {
			if pl = placeInGroup(p.c, j, g.nodes); pl != nil {
				pl.Reason = profilingReason
				g.profiling = append(g.profiling, j)
				break
			}
		}
		if pl == nil {
			pl = p.alone(j, isFree)
		}
		p.out[j] = pl
	}
	// The Placer picks among the most available nodes, so a job it could
	// not place may fit once others took theirs: one more try each.
	for _, j := range p.jobs {
		if pl := p.out[j]; pl.Paused() && pl.Reason == waitingToProfile {
			p.out[j] = p.anywhere(j)
		}
	}
}

func (p *plan) freeCount(isFree []bool) int {
	n := 0
	for _, f := range isFree {
		if f {
			n++
		}
	}
	return n
}

// isFresh reports whether profiled job x was profiled since the last plan.
func (p *plan) isFresh(x int) bool { return slices.Contains(p.fresh, x) }

// waitingToProfile is the reason of a job not profiled yet that has no room.
const waitingToProfile = "harmony: waiting for room to be profiled"

// anywhere runs a job at its minimum wherever there is room, to be
// profiled, or returns it paused.
func (p *plan) anywhere(j *planner.Job) *structs.Placement {
	psb, wb := j.Bounds()
	t := p.c.JobTasks(j)
	ps := 0
	if j.HasPS() {
		ps = max(psb.Min, 1)
	}
	nts, ok := placement.New(p.c).Place(t.PS, ps, t.Worker, max(wb.Min, 1))
	if !ok {
		return planner.Paused(j, waitingToProfile)
	}
	return &structs.Placement{Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: ps, NumWorkers: max(wb.Min, 1), Nodes: nts,
		Reason: aloneReason + " (no group or free nodes had room)"}
}

// alone runs a job at its minimum, one worker and one server per node, on
// free nodes, keeping its current placement when that is such.
func (p *plan) alone(j *planner.Job, isFree []bool) *structs.Placement {
	psb, wb := j.Bounds()
	n := max(wb.Min, 1)
	if j.HasPS() {
		n = max(n, psb.Min)
	}
	var nodes []int
	if j.Current != nil && !j.Current.Paused() {
		for _, nt := range j.Current.Nodes {
			if i, ok := p.c.NodeIndex(nt.NodeID); ok && isFree[i] {
				nodes = append(nodes, i)
			}
		}
		if len(nodes) != n {
			nodes = nil
		}
	}
	for _, i := range p.free {
		if len(nodes) == n {
			break
		}
		if isFree[i] && !slices.Contains(nodes, i) {
			nodes = append(nodes, i)
		}
	}
	var pl *structs.Placement
	if len(nodes) == n {
		slices.Sort(nodes)
		pl = placeOn(p.c, j, nodes)
	}
	if pl == nil || pl.Paused() {
		// No free nodes hold it: its minimum wherever there is room.
		return p.anywhere(j)
	}
	for _, i := range nodes {
		isFree[i] = false
	}
	pl.Reason = aloneReason
	return pl
}

// profilingReason is the reason of a job profiled in a group (L825);
// aloneReason starts that of a job profiled alone (L813).
const (
	profilingReason = "harmony: being profiled in a group"
	aloneReason     = "harmony: alone at its minimum while it is profiled"
)

// placeInGroup runs a job on its group's nodes, those of them that hold
// one of its workers and one of its servers (all of them on a cluster of
// like nodes); nil when fewer than its minimum do.
func placeInGroup(c *planner.Cluster, j *planner.Job, nodes []int) *structs.Placement {
	t := c.JobTasks(j)
	ps := 0
	if j.HasPS() {
		ps = 1
	}
	fit := make([]int, 0, len(nodes))
	for _, i := range nodes {
		if c.FitsPair(i, t.PS, ps, t.Worker, 1) {
			fit = append(fit, i)
		}
	}
	if len(fit) == 0 {
		return nil
	}
	if pl := placeOn(c, j, fit); !pl.Paused() {
		return pl
	}
	return nil
}

// placeOn runs a job on nodes, one worker and one server per node within
// its bounds (L1040: a worker and a server of every job on each machine);
// paused when its bounds or the nodes' capacity do not allow it.
func placeOn(c *planner.Cluster, j *planner.Job, nodes []int) *structs.Placement {
	psb, wb := j.Bounds()
	m := len(nodes)
	w := min(m, wb.Max)
	ps := 0
	if j.HasPS() {
		ps = min(m, psb.Max)
	}
	if w < max(wb.Min, 1) || j.HasPS() && ps < max(psb.Min, 1) {
		return planner.Paused(j, fmt.Sprintf("harmony: its group has %d nodes, its bounds need more", m))
	}
	t := c.JobTasks(j)
	p := &structs.Placement{Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: ps, NumWorkers: w}
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
		if nt.PS > 0 {
			c.Take(i, t.PS, nt.PS)
		}
		c.Take(i, t.Worker, nt.Workers)
	}
	return p
}
