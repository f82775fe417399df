package gavel

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
)

// schedule turns the time fractions x and the priorities into one
// placement per job (gavel.py schedule_jobs_on_workers):
//
//  1. the pairs are queued by priority, then x, both descending (then type
//     and arrival, for ties);
//  2. in queue order, a job not yet chosen is chosen for the pair's type
//     when its GPUs fit the type's GPUs left (schedule_jobs_on_workers_helper);
//  3. on each type, the jobs chosen there that run on it keep their
//     placement, and the others, largest first, are placed on the type's
//     nodes (the fewest of the most available, planner/placement);
//  4. a job still without a placement (its tasks did not fit the nodes
//     as its GPUs fit the count) is placed, in queue order, on a type
//     whose nodes have room for its request;
//  5. a job that asks for no GPU, which Gavel does not schedule, keeps
//     its placement or is placed at its request on any nodes, in
//     arrival order;
//  6. every other job waits.
func (r *round) schedule(x, prio []float64) []*structs.Placement {
	order := make([]int, len(r.pairs))
	for p := range order {
		order[p] = p
	}
	slices.SortFunc(order, func(a, b int) int {
		pa, pb := r.pairs[a], r.pairs[b]
		return cmp.Or(cmp.Compare(prio[b], prio[a]), cmp.Compare(x[b], x[a]), cmp.Compare(pa.typ, pb.typ), cmp.Compare(pa.job, pb.job))
	})

	// 2. Choose by GPU count.
	left := make([]int, len(r.types))
	for k, t := range r.types {
		left[k] = t.gpus
	}
	chosen := make([][]int, len(r.types)) // pair indices, in queue order
	taken := make([]bool, len(r.jobs))
	for _, p := range order {
		pr := r.pairs[p]
		j := r.jobs[pr.job]
		if taken[pr.job] || j.scale > left[pr.typ] {
			continue
		}
		left[pr.typ] -= j.scale
		taken[pr.job] = true
		chosen[pr.typ] = append(chosen[pr.typ], p)
	}

	// 3. On each type, keep the chosen jobs that run there, then place
	// the others, the largest first.
	out := make([]*structs.Placement, len(r.jobs))
	for k, t := range r.types {
		ps := chosen[k]
		slices.SortStableFunc(ps, func(a, b int) int { return cmp.Compare(r.jobs[r.pairs[b].job].scale, r.jobs[r.pairs[a].job].scale) })
		for _, p := range ps {
			pr := r.pairs[p]
			j := r.jobs[pr.job]
			if kept := t.c.KeepCurrent(j.view.Current, j.tasks[k], j.ps, j.workers); kept != nil {
				kept.Reason = r.reason(p, x, prio, "kept where it runs")
				out[pr.job] = kept
			}
		}
		placer := placement.New(t.c)
		for _, p := range ps {
			pr := r.pairs[p]
			if out[pr.job] != nil {
				continue
			}
			if pl := r.place(placer, p); pl != nil {
				pl.Reason = r.reason(p, x, prio, "placed")
				out[pr.job] = pl
			}
		}
	}

	// 4. Backfill in queue order.
	placers := make([]*placement.Placer, len(r.types))
	for k, t := range r.types {
		placers[k] = placement.New(t.c)
	}
	for _, p := range order {
		pr := r.pairs[p]
		if out[pr.job] != nil {
			continue
		}
		if pl := r.place(placers[pr.typ], p); pl != nil {
			pl.Reason = r.reason(p, x, prio, "placed in room the chosen jobs left")
			out[pr.job] = pl
		}
	}

	// 5. Jobs that ask for no GPU, on any nodes.
	r.placeCPUJobs(out)

	// 6. The rest wait.
	fits := make([]bool, len(r.jobs))
	for _, pr := range r.pairs {
		fits[pr.job] = true
	}
	for i, j := range r.jobs {
		if out[i] != nil {
			continue
		}
		shape := structs.Shape{PS: j.ps, Workers: j.workers}
		switch {
		case j.scale == 0:
			out[i] = planner.Paused(j.view, fmt.Sprintf("gavel: waiting: its request of %s, which asks for no GPU, fits no set of nodes left this round", shape))
			continue
		case !fits[i]:
			out[i] = planner.Paused(j.view, fmt.Sprintf("gavel: waiting: the nodes of no GPU type can hold its request of %s", shape))
			continue
		}
		out[i] = planner.Paused(j.view, fmt.Sprintf("gavel: waiting: its request of %s (%s) fits no GPU type's room left this round", shape, structs.Plural(j.scale, "GPU")))
	}
	planner.SortPlacements(out)
	return out
}

// place puts pair p's job at its request on the pair type's nodes through
// placer; nil when it does not fit.
func (r *round) place(placer *placement.Placer, p int) *structs.Placement {
	pr := r.pairs[p]
	j := r.jobs[pr.job]
	tk := j.tasks[pr.typ]
	nodes, ok := placer.Place(tk.PS, j.ps, tk.Worker, j.workers)
	if !ok {
		return nil
	}
	return &structs.Placement{
		Namespace: j.view.Job.Namespace, JobID: j.view.Job.ID,
		NumPS: j.ps, NumWorkers: j.workers, Nodes: nodes,
	}
}

// reason says, for people, where pair p's job runs and why.
func (r *round) reason(p int, x, prio []float64, what string) string {
	pr := r.pairs[p]
	j := r.jobs[pr.job]
	name := r.types[pr.typ].name
	if name == "" {
		name = "no GPU"
	}
	return fmt.Sprintf("gavel: %s at its request of %s on %s: %.1f%% of its time there, %.3g steps/s, priority %.3g",
		what, structs.Shape{PS: j.ps, Workers: j.workers}, name, 100*x[p], pr.throughput, prio[p])
}

// placeCPUJobs gives each job of r that asks for no GPU, in arrival
// order, its current placement where it still fits, else its request on
// the fewest of the most available of all nodes, in the room the
// placements in out leave.
func (r *round) placeCPUJobs(out []*structs.Placement) {
	var cpuJobs []int
	for i, j := range r.jobs {
		if j.scale == 0 && out[i] == nil {
			cpuJobs = append(cpuJobs, i)
		}
	}
	if len(cpuJobs) == 0 {
		return
	}
	c := planner.NewCluster(r.req.Nodes)
	for i, p := range out {
		if p == nil {
			continue
		}
		tasks := c.JobTasks(r.jobs[i].view)
		for _, nt := range p.Nodes {
			n, _ := c.NodeIndex(nt.NodeID)
			ps, w := tasks.For(nt)
			c.Take(n, ps, nt.PS)
			c.Take(n, w, nt.Workers)
		}
	}
	for _, i := range cpuJobs {
		j := r.jobs[i]
		tasks := c.JobTasks(j.view)
		if kept := c.KeepCurrent(j.view.Current, tasks, j.ps, j.workers); kept != nil {
			kept.Reason = fmt.Sprintf("gavel: asks for no GPU: kept at its request of %s where it runs", structs.Shape{PS: j.ps, Workers: j.workers})
			out[i] = kept
		}
	}
	placer := placement.New(c)
	for _, i := range cpuJobs {
		j := r.jobs[i]
		if out[i] != nil {
			continue
		}
		tasks := c.JobTasks(j.view)
		if nodes, ok := placer.Place(tasks.PS, j.ps, tasks.Worker, j.workers); ok {
			out[i] = &structs.Placement{
				Namespace: j.view.Job.Namespace, JobID: j.view.Job.ID, NumPS: j.ps, NumWorkers: j.workers, Nodes: nodes,
				Reason: fmt.Sprintf("gavel: asks for no GPU: placed at its request of %s", structs.Shape{PS: j.ps, Workers: j.workers}),
			}
		}
	}
}
