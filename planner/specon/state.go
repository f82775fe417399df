package specon

import (
	"fmt"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// state is one Plan's view: the base decision as SpeCon changes it, each
// job's category and mark, and the capacity the decision leaves.
type state struct {
	req  *planner.Request
	opts Options
	jobs []*planner.Job // sorted by key
	out  []*structs.Placement
	mon  []Monitor
	mark []mark
	c    *planner.Cluster
}

func newState(req *planner.Request, dec *planner.Decision, opts Options) (*state, error) {
	st := &state{req: req, opts: opts, jobs: slices.Clone(req.Jobs)}
	planner.SortJobs(st.jobs)
	byKey := make(map[structs.JobKey]*structs.Placement, len(dec.Placements))
	for _, p := range dec.Placements {
		byKey[p.Key()] = p
	}
	st.out = make([]*structs.Placement, len(st.jobs))
	st.mon = make([]Monitor, len(st.jobs))
	st.mark = make([]mark, len(st.jobs))
	for i, j := range st.jobs {
		p := byKey[j.Job.Key()]
		if p == nil {
			return nil, fmt.Errorf("specon: base %s left job %q without a placement", opts.Base, j.Job.ID)
		}
		p = p.Copy()
		st.out[i] = p
		st.mark[i] = parseMark(j.Current)
		if st.mark[i].migrated && !p.Paused() {
			// Algorithm 1 line 3 monitors only jobs not yet migrated; a
			// migrated job stays in CC, and keeps its mark while it runs.
			st.mon[i] = Monitor{Category: Converged}
			p.Reason = st.mark[i].reason(p.Reason)
			continue
		}
		st.mark[i] = mark{}
		st.mon[i] = Categorize(j.Progress, opts.Interval, opts.Alpha)
	}
	st.recount()
	return st, nil
}

// placements returns the decision's placements.
func (st *state) placements() []*structs.Placement { return slices.Clone(st.out) }

// recount rebuilds the capacity the decision leaves. Moves are few, so a
// rebuild after each keeps device accounting exact without a release.
func (st *state) recount() {
	c := planner.NewCluster(st.req.Nodes)
	for i, p := range st.out {
		if p.Paused() {
			continue
		}
		t := c.JobTasks(st.jobs[i])
		for _, nt := range p.Nodes {
			n, ok := c.NodeIndex(nt.NodeID)
			if !ok {
				continue // CheckDecision reports the base's unknown node
			}
			if nt.PS > 0 {
				c.Take(n, t.PS, nt.PS)
			}
			c.Take(n, t.Worker, nt.Workers)
		}
	}
	st.c = c
}

// host returns the node index job i runs on when it is movable: placed on
// one node and running there now, as the base kept it. A job on several
// nodes is counted on each (tally) but never moved: the paper's containers
// each run on one worker.
func (st *state) host(i int) (int, bool) {
	p := st.out[i]
	if p.Paused() || len(p.Nodes) != 1 || !p.SameTasks(st.jobs[i].Current) {
		return 0, false
	}
	return st.c.NodeIndex(p.Nodes[0].NodeID)
}

// fits reports whether job i's tasks on its one node fit on node n.
func (st *state) fits(i, n int) bool {
	nt := st.out[i].Nodes[0]
	t := st.c.JobTasks(st.jobs[i])
	return st.c.FitsPair(n, t.PS, nt.PS, t.Worker, nt.Workers)
}

// move places job i's tasks on node n instead, with a reason.
func (st *state) move(i, n int, reason string) {
	p := st.out[i]
	nt := *p.Nodes[0]
	nt.NodeID = st.c.Nodes[n].ID
	st.out[i] = &structs.Placement{
		Namespace: p.Namespace, JobID: p.JobID, NumPS: p.NumPS, NumWorkers: p.NumWorkers,
		Nodes: []*structs.NodeTasks{&nt}, Batch: p.Batch, Reason: reason,
	}
	st.recount()
}

// tally counts, per node, the running jobs in each category (a job on
// several nodes counts on each) and the running jobs, |w_i|.
func (st *state) tally() (cat [][3]int, jobs []int) {
	cat = make([][3]int, len(st.c.Nodes))
	jobs = make([]int, len(st.c.Nodes))
	for i, p := range st.out {
		if p.Paused() {
			continue
		}
		for _, nt := range p.Nodes {
			if n, ok := st.c.NodeIndex(nt.NodeID); ok {
				cat[n][st.mon[i].Category]++
				jobs[n]++
			}
		}
	}
	return cat, jobs
}

// load is R(w, t): node n's dominant used share of CPU, memory and
// device instances under the decision, in [0, 1].
func (st *state) load(n int) float64 {
	node := st.c.Nodes[n]
	cpu, mem, devs := st.c.Free(n)
	r := 0.0
	if node.CPU > 0 {
		r = max(r, 1-float64(cpu)/float64(node.CPU))
	}
	if node.MemoryMB > 0 {
		r = max(r, 1-float64(mem)/float64(node.MemoryMB))
	}
	total := 0
	for _, d := range node.Devices {
		total += d.HealthyCount()
	}
	if total > 0 {
		r = max(r, 1-float64(devs)/float64(total))
	}
	return r
}
