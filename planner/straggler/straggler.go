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
	// Ratio: a worker is slow when its speed is below Ratio times the
	// median worker's (default 0.5, Optimus §5.2).
	Ratio float64
	// Window is how long a worker must have been slow in every report
	// before it is replaced (default 60s), and Reports in how many
	// reports at least (default 3).
	Window  time.Duration
	Reports int
}

// Defaults returns c with its zero fields set to the defaults.
func (c Config) Defaults() Config {
	c.Ratio = cmp.Or(c.Ratio, 0.5)
	c.Window = cmp.Or(c.Window, time.Minute)
	c.Reports = cmp.Or(c.Reports, 3)
	return c
}

// Straggler is one slow worker of a job.
type Straggler struct {
	Rank   int
	NodeID string
	// CPU and MemoryMB are the worker's size (its limits), 0 when
	// unknown.
	CPU, MemoryMB int
	// StepTimeS is its time per step and MedianStepTimeS the median
	// worker's, in seconds.
	StepTimeS, MedianStepTimeS float64
	// Since is when it was first seen slow in a row of reports, Last the
	// latest of them, and Reports how many there were.
	Since, Last int64
	Reports     int
}

// Slow returns the workers of usage u whose speed is below ratio times
// the median worker's, sorted by rank. It needs at least two workers with
// a measured step time.
func Slow(u *structs.JobUsage, ratio float64) []Straggler {
	if u == nil {
		return nil
	}
	var workers []*structs.TaskUsage
	var speeds []float64
	for _, t := range u.Tasks {
		if t.Role == structs.RoleWorker && t.TaskStepTimeS > 0 {
			workers = append(workers, t)
			speeds = append(speeds, 1/t.TaskStepTimeS)
		}
	}
	if len(workers) < 2 {
		return nil
	}
	median := model.Median(speeds)
	var out []Straggler
	for _, t := range workers {
		if 1/t.TaskStepTimeS < ratio*median {
			out = append(out, Straggler{Rank: t.Rank, NodeID: t.NodeID, CPU: t.CPULimitMHz, MemoryMB: t.MemoryLimitMB,
				StepTimeS: t.TaskStepTimeS, MedianStepTimeS: 1 / median, Since: u.Time, Last: u.Time, Reports: 1})
		}
	}
	slices.SortFunc(out, func(a, b Straggler) int { return cmp.Compare(a.Rank, b.Rank) })
	return out
}

// Tracker remembers, per job, the workers slow in every usage report
// since some time. It is deterministic: the same calls give the same
// answers. It is not safe for concurrent use; its state is not
// replicated, so a new leader starts the windows again.
type Tracker struct {
	cfg  Config
	jobs map[structs.JobKey]map[task]Straggler
}

// task names one worker where it runs.
type task struct {
	rank int
	node string
}

// NewTracker returns a tracker with cfg (defaults for zero fields).
func NewTracker(cfg Config) *Tracker {
	return &Tracker{cfg: cfg.Defaults(), jobs: map[structs.JobKey]map[task]Straggler{}}
}

// Config returns the tracker's configuration, defaults filled.
func (t *Tracker) Config() Config { return t.cfg }

// Observe takes a job's usage report, stamped u.Time: workers slow in it
// continue their run of reports or start one; the others end theirs. It
// reports whether a worker became due (Due) with this report.
func (t *Tracker) Observe(u *structs.JobUsage) bool {
	if u == nil {
		return false
	}
	key := u.Key()
	prev := t.jobs[key]
	next := map[task]Straggler{}
	became := false
	for _, s := range Slow(u, t.cfg.Ratio) {
		k := task{s.Rank, s.NodeID}
		p, ok := prev[k]
		if ok && u.Time <= p.Last {
			next[k] = p // the same report again, or an older one
			continue
		}
		if ok {
			s.Since, s.Reports = p.Since, p.Reports+1
		}
		next[k] = s
		became = became || !(ok && t.due(p, p.Last)) && t.due(s, u.Time)
	}
	if len(next) == 0 {
		delete(t.jobs, key)
	} else {
		t.jobs[key] = next
	}
	return became
}

func (t *Tracker) due(s Straggler, now int64) bool {
	return s.Reports >= t.cfg.Reports && now-s.Since >= int64(t.cfg.Window)
}

// Reset forgets a job: its placement changed, or it ended.
func (t *Tracker) Reset(key structs.JobKey) { delete(t.jobs, key) }

// Due returns a job's workers that have been slow for the window and
// enough reports at now, sorted by rank.
func (t *Tracker) Due(key structs.JobKey, now int64) []Straggler {
	var out []Straggler
	for _, k := range slices.SortedFunc(maps.Keys(t.jobs[key]), func(a, b task) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.node, b.node))
	}) {
		if s := t.jobs[key][k]; t.due(s, now) {
			out = append(out, s)
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
// worker at the straggler's size, to the feasible node with the most free
// CPU once every placement of dec is taken (the lowest index among
// equals), keeping distinct_hosts, and records an ActionStragglerReplaced
// on the job's placement. The placements it changes are copies; dec's
// others are untouched. The reason quotes cfg's ratio and the time
// since each straggler was first seen slow, at req.Now. A job whose decided placement runs no worker on
// the straggler's node is left alone (the algorithm moved it already). It
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
	var from *structs.NodeTasks
	for _, nt := range p.Nodes {
		if nt.NodeID != s.NodeID || nt.Workers == 0 {
			continue
		}
		_, w := t.For(nt)
		if from == nil || (s.CPU == 0 || s.CPU == w.CPU) && (s.MemoryMB == 0 || s.MemoryMB == w.MemoryMB) {
			from = nt
		}
	}
	if from == nil {
		o.Why = "the decision runs no worker of the job on its node"
		return o
	}
	_, w := t.For(from)
	onNode := map[string]int{}
	for _, nt := range p.Nodes {
		onNode[nt.NodeID] += nt.Workers
	}
	best, bestCPU := -1, -1
	for i, n := range c.Nodes {
		if n.ID == s.NodeID || w.DistinctHosts && onNode[n.ID] > 0 || !c.Fits(i, w, 1) {
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
	c.Take(best, w, 1)
	o.To = c.Nodes[best].ID
	from.Workers--
	size := from.WorkerSize
	if from.Workers == 0 {
		from.WorkerSize = structs.TaskSize{}
	}
	to := slices.IndexFunc(p.Nodes, func(nt *structs.NodeTasks) bool {
		return nt.NodeID == o.To && (nt.Workers == 0 || nt.WorkerSize == size)
	})
	if to >= 0 {
		p.Nodes[to].Workers++
		p.Nodes[to].WorkerSize = size
	} else {
		p.Nodes = append(p.Nodes, &structs.NodeTasks{NodeID: o.To, Workers: 1, WorkerSize: size})
	}
	p.Nodes = slices.DeleteFunc(p.Nodes, func(nt *structs.NodeTasks) bool { return nt.PS == 0 && nt.Workers == 0 })
	structs.SortNodeTasks(p.Nodes)
	reason := fmt.Sprintf("worker %d takes %.3gs a step, %.1f× the median worker's %.3gs, in %d reports over %s (below %.2g of the median speed, Optimus §5.2): moved from %s to %s",
		s.Rank, s.StepTimeS, s.StepTimeS/s.MedianStepTimeS, s.MedianStepTimeS, s.Reports, time.Duration(now-s.Since).Round(time.Second), ratio, s.NodeID, o.To)
	p.Actions = append(p.Actions, &structs.TaskAction{Kind: structs.ActionStragglerReplaced, Role: structs.RoleWorker, Rank: s.Rank, NodeID: s.NodeID,
		Reason: reason, Details: map[string]string{"from": s.NodeID, "to": o.To,
			"step_time_s": fmt.Sprintf("%.3g", s.StepTimeS), "median_step_time_s": fmt.Sprintf("%.3g", s.MedianStepTimeS)}})
	return o
}
