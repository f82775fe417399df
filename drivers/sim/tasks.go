package sim

import (
	"math"
	"slices"
	"time"

	"github.com/caravan-sched/caravan/structs"
)

// OOMFailAfter is how long a job whose task was OOM-killed waits for a
// new placement before it fails: Nomad restarts the task in place, it is
// killed again at the same size, and the restart policy gives up.
const OOMFailAfter = 10 * time.Minute

// Injector is a TaskTruth that injects slow tasks (DLRover §6.2: "we
// randomly select a worker or PS and set the CPU cores to 25%"). The
// simulator ties each to a slot on a node: the first worker (or server)
// of the job's first placement, on its node. The task in that slot gets
// the share of its CPU Slow returns, until the slot is vacated: a
// decision moves it away (ActionStragglerReplaced of its role,
// ActionHotPSReplaced, naming the node) or leaves the node without a task of the role.
type Injector interface {
	Slow() (worker, ps float64)
}

// slowSlot is one injected slow task of a job: on node (an index; -1
// before the job first runs), slowing the role's first task there by
// factor until vacated.
type slowSlot struct {
	factor  float64
	node    int
	vacated bool
}

// taskState is what the simulator keeps of one task of a TaskTruth job
// in its current generation.
type taskState struct {
	oomKills    int
	lastOOM     int64 // virtual nanoseconds
	maxMemoryMB float64
}

// placeTasks lists the tasks of job j's new placement p for its TaskTruth,
// each at its entry's size, and starts a new generation: OOM kills and
// memory peaks count from here. Workers and servers are ranked in the
// order of p's entries.
func (s *Sim) placeTasks(j *job, p *structs.Placement) {
	if _, ok := j.truth.(TaskTruth); !ok {
		return
	}
	if inj, ok := j.truth.(Injector); ok && !j.slowSet {
		w, ps := inj.Slow()
		j.slow, j.slowSet = [2]slowSlot{{factor: w, node: -1}, {factor: ps, node: -1}}, true
	}
	for _, a := range p.Actions {
		k := 0 // the worker's slot
		switch {
		case a.Kind == structs.ActionHotPSReplaced, a.Kind == structs.ActionStragglerReplaced && a.Role == structs.RolePS:
			k = 1
		case a.Kind != structs.ActionStragglerReplaced:
			continue
		}
		if sl := &j.slow[k]; sl.node >= 0 && s.index[a.NodeID] == sl.node {
			sl.vacated = true
		}
	}
	prev := j.tasks
	j.tasks, j.taskState, j.stalled = nil, nil, -1
	ranks := [2]int{}
	for _, nt := range p.Nodes {
		node := s.index[nt.NodeID]
		for k, e := range []struct {
			role string
			r    *structs.Role
			n    int
			size structs.TaskSize
		}{{structs.RoleWorker, j.spec.Worker, nt.Workers, nt.WorkerSize}, {structs.RolePS, psRole(j.spec), nt.PS, nt.PSSize}} {
			if e.r == nil || e.r.Resources == nil {
				continue
			}
			cpu, mem := e.r.Resources.Sized(e.size)
			for range e.n {
				t := SimTask{Role: e.role, Rank: ranks[k], Node: node, CPU: cpu, MemoryMB: mem, Slow: 1}
				ranks[k]++
				sl := &j.slow[k]
				if sl.factor > 0 && sl.node < 0 {
					sl.node = node
				}
				if sl.factor > 0 && !sl.vacated && sl.node == node && !slices.ContainsFunc(j.tasks, func(o SimTask) bool { return o.Role == e.role && o.Node == node }) {
					t.Slow = sl.factor
				}
				j.tasks = append(j.tasks, t)
			}
		}
	}
	keepPSRanks(prev, j.tasks)
	j.taskState = make([]taskState, len(j.tasks))
}

// keepPSRanks gives the servers of a new placement the ranks, and so the
// parameter partitions, of the servers they continue: a server on the same
// node at the same CPU keeps its rank; then one on the same node (resized);
// then the remaining ranks go, in order, to the remaining servers (a hot
// server's replacement takes its partition). Ranks beyond the new count
// are dropped and new servers take the next free ones. This is the
// simulator's assumption of what a trainer restarted from its checkpoint
// does; Caravan's placements carry no ranks (drivers/sim/README.md).
func keepPSRanks(prev, next []SimTask) {
	var old, cur []int
	for i, t := range prev {
		if t.Role == structs.RolePS {
			old = append(old, i)
		}
	}
	for i, t := range next {
		if t.Role == structs.RolePS {
			cur = append(cur, i)
		}
	}
	if len(old) == 0 {
		return
	}
	taken := map[int]bool{} // ranks given
	done := map[int]bool{}  // next indexes ranked
	match := func(same func(o, n SimTask) bool) {
		for _, n := range cur {
			if done[n] {
				continue
			}
			for _, o := range old {
				r := prev[o].Rank
				if !taken[r] && r < len(cur) && same(prev[o], next[n]) {
					next[n].Rank, taken[r], done[n] = r, true, true
					break
				}
			}
		}
	}
	match(func(o, n SimTask) bool { return o.Node == n.Node && o.CPU == n.CPU })
	match(func(o, n SimTask) bool { return o.Node == n.Node })
	match(func(SimTask, SimTask) bool { return true })
	free := 0
	for _, n := range cur {
		if done[n] {
			continue
		}
		for taken[free] {
			free++
		}
		next[n].Rank, taken[free] = free, true
	}
}

// oomAt returns when (virtual seconds) and at which step job j, training
// at rate r from time from, first has a task killed for memory, and the
// task; +Inf when none is before total.
func (j *job) oomAt(from, r, total float64) (at, step float64, task int) {
	tt, ok := j.truth.(TaskTruth)
	if !ok || r <= 0 || j.stalled >= 0 {
		return math.Inf(1), 0, -1
	}
	step, task = tt.OOMStep(j.step, j.tasks)
	if task < 0 || step >= total {
		return math.Inf(1), 0, -1
	}
	return from + (step-j.step)/r, step, task
}

// kill records that task i of job j was OOM-killed at time at: the job
// makes no progress until it is placed again, and fails if that does not
// happen within OOMFailAfter.
func (j *job) kill(i int, at float64) {
	st := &j.taskState[i]
	st.oomKills++
	j.oomKills++
	st.lastOOM = int64(at * 1e9)
	st.maxMemoryMB = float64(j.tasks[i].MemoryMB)
	j.stalled = at
}

// measure records job j's per-task usage at time at, after step steps,
// and folds it into the running means of its shape (JobUsage.ByShape).
func (s *Sim) measure(j *job, step, at float64) {
	tt, ok := j.truth.(TaskTruth)
	if !ok || len(j.tasks) == 0 {
		return
	}
	var use []TaskUse
	if j.stalled < 0 {
		use = tt.Use(step, j.tasks)
	} else {
		use = make([]TaskUse, len(j.tasks))
	}
	u := &structs.JobUsage{Namespace: j.spec.Namespace, JobID: j.spec.ID, Time: int64(at * 1e9)}
	var workerCPU, psCPU float64
	shape := structs.Shape{}
	for i, t := range j.tasks {
		st := &j.taskState[i]
		st.maxMemoryMB = max(st.maxMemoryMB, use[i].MemoryMB)
		u.Tasks = append(u.Tasks, &structs.TaskUsage{
			Role: t.Role, Rank: t.Rank, NodeID: s.nodes[t.Node].ID,
			CPUMHz: use[i].CPUMHz, MemoryMB: use[i].MemoryMB, MaxMemoryMB: st.maxMemoryMB,
			CPULimitMHz: t.CPU, MemoryLimitMB: t.MemoryMB,
			OOMKills: st.oomKills, LastOOM: st.lastOOM, TaskStepTimeS: use[i].StepTimeS,
			Source: structs.UsageSourceSim,
		})
		if t.Role == structs.RolePS {
			psCPU += use[i].CPUMHz
			shape.PS++
		} else {
			workerCPU += use[i].CPUMHz
			shape.Workers++
		}
	}
	slices.SortStableFunc(u.Tasks, func(a, b *structs.TaskUsage) int {
		if a.Role != b.Role {
			if a.Role < b.Role {
				return -1
			}
			return 1
		}
		return a.Rank - b.Rank
	})
	if j.stalled < 0 && shape.Workers > 0 {
		u.ByShape = j.foldShape(shape, workerCPU/float64(shape.Workers), psCPU)
	} else {
		u.ByShape = slices.Clone(j.byShape)
	}
	j.usage = u
}

// foldShape adds one measurement at shape to job j's running means and
// returns a copy of them, at most structs.MaxUsageShapes, oldest first.
func (j *job) foldShape(shape structs.Shape, worker, ps float64) []structs.ShapeUsage {
	i := slices.IndexFunc(j.byShape, func(u structs.ShapeUsage) bool { return u.Shape == shape })
	if i < 0 {
		if len(j.byShape) == structs.MaxUsageShapes {
			j.byShape = j.byShape[1:]
		}
		j.byShape = append(j.byShape, structs.ShapeUsage{Shape: shape})
		i = len(j.byShape) - 1
	}
	m := &j.byShape[i]
	n := float64(m.Measurements)
	m.WorkerCPUMHz = (m.WorkerCPUMHz*n + worker) / (n + 1)
	m.PSCPUMHz = (m.PSCPUMHz*n + ps) / (n + 1)
	m.Measurements++
	return slices.Clone(j.byShape)
}

// JobUsage returns what the tasks of job id used at its latest sample
// (virtual times in nanoseconds), or nil when its truth measures no tasks
// or it has not reported since it was placed.
func (s *Sim) JobUsage(id string) *structs.JobUsage {
	j, ok := s.jobs[id]
	if !ok || j.usage == nil {
		return nil
	}
	return j.usage.Copy()
}
