package straggler

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/model"
	"github.com/caravan-sched/caravan/structs"
)

// Config tunes straggler handling; zero fields take their defaults.
type Config struct {
	// Ratio: a task is slow when its speed is below Ratio times the
	// median speed of its role (default 0.5, Optimus §5.2).
	Ratio float64
	// Window is how long a task must have been slow in every committed
	// report before it is replaced (default 60s), and Reports in how
	// many committed reports at least (default 1: a report stands until
	// the next commit, see the package doc).
	Window  time.Duration
	Reports int
}

// Defaults returns c with its zero fields set to the defaults.
func (c Config) Defaults() Config {
	c.Ratio = cmp.Or(c.Ratio, 0.5)
	c.Window = cmp.Or(c.Window, time.Minute)
	c.Reports = cmp.Or(c.Reports, 1)
	return c
}

// psUsageMargin is how much more CPU than the median server's a slow
// server may use and still be taken for a machine problem (DLRover
// §5.4): above it, the server's workload is taken to be unbalanced, and
// it is left to the algorithm to give it more resources.
const psUsageMargin = 1.1

// Straggler is one slow task of a job.
type Straggler struct {
	// Role is structs.RoleWorker or structs.RolePS.
	Role   string
	Rank   int
	NodeID string
	// CPU and MemoryMB are the task's size (its limits), 0 when
	// unknown.
	CPU, MemoryMB int
	// StepTimeS is its time per step and MedianStepTimeS the median
	// time of its role's tasks, in seconds.
	StepTimeS, MedianStepTimeS float64
	// Since is when it was first seen slow in a row of reports, Last the
	// latest of them, and Reports how many there were.
	Since, Last int64
	Reports     int
}

// Slow returns the tasks of usage u whose speed is below ratio times the
// median of their role's, workers by rank and then servers by rank. A
// role needs at least two tasks with a measured step time. A slow server
// counts only when its CPU is at most psUsageMargin times the median
// server's (DLRover §5.4, D:222): a slow server that uses more than its
// peers has more of the work, and moving it would not help.
func Slow(u *structs.JobUsage, ratio float64) []Straggler {
	if u == nil {
		return nil
	}
	var out []Straggler
	for _, role := range []string{structs.RoleWorker, structs.RolePS} {
		var tasks []*structs.TaskUsage
		var speeds, cpus []float64
		for _, t := range u.Tasks {
			if t.Role == role && t.TaskStepTimeS > 0 {
				tasks = append(tasks, t)
				speeds = append(speeds, 1/t.TaskStepTimeS)
				cpus = append(cpus, t.CPUMHz)
			}
		}
		if len(tasks) < 2 {
			continue
		}
		median, medianCPU := model.Median(speeds), model.Median(cpus)
		var slow []Straggler
		for _, t := range tasks {
			if 1/t.TaskStepTimeS >= ratio*median || role == structs.RolePS && t.CPUMHz > psUsageMargin*medianCPU {
				continue
			}
			slow = append(slow, Straggler{Role: role, Rank: t.Rank, NodeID: t.NodeID, CPU: t.CPULimitMHz, MemoryMB: t.MemoryLimitMB,
				StepTimeS: t.TaskStepTimeS, MedianStepTimeS: 1 / median, Since: u.Time, Last: u.Time, Reports: 1})
		}
		slices.SortFunc(slow, func(a, b Straggler) int { return cmp.Compare(a.Rank, b.Rank) })
		out = append(out, slow...)
	}
	return out
}

// Tracker remembers, per job, the tasks slow in every usage report
// since some time. It is deterministic: the same calls give the same
// answers. It is not safe for concurrent use; its state is not
// replicated, so a new leader starts the windows again.
type Tracker struct {
	cfg  Config
	jobs map[structs.JobKey]map[task]*tracked
}

// task names one task where it runs.
type task struct {
	role string
	rank int
	node string
}

// tracked is a straggler and whether Tick has said it is due.
type tracked struct {
	Straggler
	told bool
}

// NewTracker returns a tracker with cfg (defaults for zero fields).
func NewTracker(cfg Config) *Tracker {
	return &Tracker{cfg: cfg.Defaults(), jobs: map[structs.JobKey]map[task]*tracked{}}
}

// Config returns the tracker's configuration, defaults filled.
func (t *Tracker) Config() Config { return t.cfg }

// Observe takes a job's usage report, stamped u.Time: tasks slow in it
// continue their run of reports or start one; the others end theirs.
func (t *Tracker) Observe(u *structs.JobUsage) {
	if u == nil {
		return
	}
	key := u.Key()
	prev := t.jobs[key]
	next := map[task]*tracked{}
	for _, s := range Slow(u, t.cfg.Ratio) {
		k := task{s.Role, s.Rank, s.NodeID}
		p, ok := prev[k]
		switch {
		case ok && u.Time <= p.Last:
			next[k] = p // the same report again, or an older one
		case ok:
			s.Since, s.Reports = p.Since, p.Reports+1
			next[k] = &tracked{Straggler: s, told: p.told}
		default:
			next[k] = &tracked{Straggler: s}
		}
	}
	if len(next) == 0 {
		delete(t.jobs, key)
	} else {
		t.jobs[key] = next
	}
}

// Tick reports whether a task of some job became due (Due) by now since
// the last call: a report stands until the next, so a window ends with a
// report or between two. The leader calls it at each step, and plans at
// once when it is true.
func (t *Tracker) Tick(now int64) bool {
	became := false
	for _, ts := range t.jobs {
		for _, s := range ts {
			if !s.told && t.due(s.Straggler, now) {
				s.told, became = true, true
			}
		}
	}
	return became
}

func (t *Tracker) due(s Straggler, now int64) bool {
	return s.Reports >= t.cfg.Reports && now-s.Since >= int64(t.cfg.Window)
}

// Reset forgets a job: its placement changed, or it ended.
func (t *Tracker) Reset(key structs.JobKey) { delete(t.jobs, key) }

// Due returns a job's tasks that have been slow for the window and
// enough reports at now: workers, then servers, each by rank.
func (t *Tracker) Due(key structs.JobKey, now int64) []Straggler {
	var out []Straggler
	for _, k := range slices.SortedFunc(maps.Keys(t.jobs[key]), func(a, b task) int {
		return cmp.Or(-cmp.Compare(a.role, b.role), cmp.Compare(a.rank, b.rank), cmp.Compare(a.node, b.node))
	}) {
		if s := t.jobs[key][k]; t.due(s.Straggler, now) {
			out = append(out, s.Straggler)
		}
	}
	return out
}

// Outcome is what Apply did about one straggler.
type Outcome struct {
	Job       structs.JobKey
	Straggler Straggler
	// To is the node the worker moved to; empty when it was not moved,
	// and Why says why not.
	To  string
	Why string
}

// Apply moves each straggler of found (by job) in dec off its node, one
// task of its role at the straggler's size, to the feasible node with the most free
// CPU once every placement of dec is taken (the lowest index among
// equals), keeping distinct_hosts, and records an ActionStragglerReplaced
// on the job's placement. The placements it changes are copies; dec's
// others are untouched. The reason quotes cfg's ratio and the time
// since each straggler was first seen slow, at req.Now. A job whose
// decided placement runs no task of the straggler's role on its node is
// left alone (the algorithm moved it already). It
// returns what it did for each straggler, in job and rank order.
func Apply(req *planner.Request, dec *planner.Decision, found map[structs.JobKey][]Straggler, cfg Config) []Outcome {
	cfg = cfg.Defaults()
	if len(found) == 0 {
		return nil
	}
	jobs := make(map[structs.JobKey]*planner.Job, len(req.Jobs))
	for _, j := range req.Jobs {
		jobs[j.Job.Key()] = j
	}
	c := planner.NewCluster(req.Nodes)
	tasks := map[structs.JobKey]planner.JobTasks{}
	for _, p := range dec.Placements {
		j := jobs[p.Key()]
		if j == nil {
			continue
		}
		tasks[p.Key()] = c.JobTasks(j)
		for _, nt := range p.Nodes {
			if i, ok := c.NodeIndex(nt.NodeID); ok {
				ps, w := tasks[p.Key()].For(nt)
				if nt.PS > 0 {
					c.Take(i, ps, nt.PS)
				}
				c.Take(i, w, nt.Workers)
			}
		}
	}
	var out []Outcome
	for _, key := range slices.SortedFunc(maps.Keys(found), structs.JobKey.Compare) {
		k := slices.IndexFunc(dec.Placements, func(p *structs.Placement) bool { return p.Key() == key })
		if k < 0 || jobs[key] == nil {
			continue
		}
		p := dec.Placements[k].Copy()
		moved := false
		for _, s := range found[key] {
			o := move(c, p, tasks[key], s, cfg.Ratio, req.Now)
			o.Job = key
			out = append(out, o)
			moved = moved || o.To != ""
		}
		if moved {
			dec.Placements[k] = p
		}
	}
	return out
}

// move moves straggler s of placement p to another node of c.
func move(c *planner.Cluster, p *structs.Placement, t planner.JobTasks, s Straggler, ratio float64, now int64) Outcome {
	o := Outcome{Straggler: s}
	ps := s.Role == structs.RolePS
	// count and size are the straggler's role's entry fields.
	count := func(nt *structs.NodeTasks) *int {
		if ps {
			return &nt.PS
		}
		return &nt.Workers
	}
	size := func(nt *structs.NodeTasks) *structs.TaskSize {
		if ps {
			return &nt.PSSize
		}
		return &nt.WorkerSize
	}
	sized := func(nt *structs.NodeTasks) *planner.Task {
		p, w := t.For(nt)
		if ps {
			return p
		}
		return w
	}
	var from *structs.NodeTasks
	for _, nt := range p.Nodes {
		if nt.NodeID != s.NodeID || *count(nt) == 0 {
			continue
		}
		r := sized(nt)
		if from == nil || (s.CPU == 0 || s.CPU == r.CPU) && (s.MemoryMB == 0 || s.MemoryMB == r.MemoryMB) {
			from = nt
		}
	}
	if from == nil {
		o.Why = fmt.Sprintf("the decision runs no %s of the job on its node", roleName(s.Role))
		return o
	}
	r := sized(from)
	onNode := map[string]int{}
	for _, nt := range p.Nodes {
		onNode[nt.NodeID] += *count(nt)
	}
	best, bestCPU := -1, -1
	for i, n := range c.Nodes {
		if n.ID == s.NodeID || r.DistinctHosts && onNode[n.ID] > 0 || !c.Fits(i, r, 1) {
			continue
		}
		if cpu, _, _ := c.Free(i); cpu > bestCPU {
			best, bestCPU = i, cpu
		}
	}
	if best < 0 {
		o.Why = "no other node has room for it"
		return o
	}
	c.Take(best, r, 1)
	o.To = c.Nodes[best].ID
	*count(from)--
	sz := *size(from)
	if *count(from) == 0 {
		*size(from) = structs.TaskSize{}
	}
	to := slices.IndexFunc(p.Nodes, func(nt *structs.NodeTasks) bool {
		return nt.NodeID == o.To && (*count(nt) == 0 || *size(nt) == sz)
	})
	if to < 0 {
		p.Nodes = append(p.Nodes, &structs.NodeTasks{NodeID: o.To})
		to = len(p.Nodes) - 1
	}
	*count(p.Nodes[to])++
	*size(p.Nodes[to]) = sz
	p.Nodes = slices.DeleteFunc(p.Nodes, func(nt *structs.NodeTasks) bool { return nt.PS == 0 && nt.Workers == 0 })
	structs.SortNodeTasks(p.Nodes)
	rule := "Optimus §5.2"
	if ps {
		rule = "DLRover §5.4: its CPU is not above its peers', so the machine is taken to be at fault"
	}
	reason := fmt.Sprintf("%s %d takes %.3gs a step, %.1f× the median %s's %.3gs, in %d reports over %s (below %.2g of the median speed, %s): moved from %s to %s",
		roleName(s.Role), s.Rank, s.StepTimeS, s.StepTimeS/s.MedianStepTimeS, roleName(s.Role), s.MedianStepTimeS, s.Reports,
		time.Duration(now-s.Since).Round(time.Second), ratio, rule, s.NodeID, o.To)
	p.Actions = append(p.Actions, &structs.TaskAction{Kind: structs.ActionStragglerReplaced, Role: cmp.Or(s.Role, structs.RoleWorker), Rank: s.Rank, NodeID: s.NodeID,
		Reason: reason, Details: map[string]string{"From": s.NodeID, "To": o.To,
			"StepTimeS": fmt.Sprintf("%.3g", s.StepTimeS), "MedianStepTimeS": fmt.Sprintf("%.3g", s.MedianStepTimeS)}})
	return o
}

// roleName is how reasons name a task of role.
func roleName(role string) string {
	if role == structs.RolePS {
		return "parameter server"
	}
	return "worker"
}
