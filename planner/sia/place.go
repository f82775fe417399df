package sia

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
)

// place puts every job with a chosen configuration on nodes of its type,
// writing its placement to out; a job it cannot place keeps out nil. It
// follows Sia's Placer (§2, "Decoupled allocation and placement"): a job
// whose configuration is unchanged keeps its nodes; a partial-node
// configuration takes one node, the fullest that fits; a whole-node
// configuration takes whole free nodes. When keeping placements
// fragments a type so that a configuration finds no nodes, the type is
// placed again from scratch, largest first, which the configurations
// guarantee to fit on nodes of equal size (the Submesh Shape Covering
// argument of §3.2) — Sia's eviction, of every job of the type at once —
// if that places them all.
func place(c *planner.Cluster, ts []*gpuType, jobs []*job, out []*structs.Placement) {
	for k, t := range ts {
		var idx []int
		for i, j := range jobs {
			if j.chosen != nil && j.chosen.typ == k {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			continue
		}
		before := c.Clone()
		if placeType(c, t, jobs, idx, out, true) {
			continue
		}
		// The re-packing replaces what keeping placed only when it places
		// every job of the type: on nodes of unequal sizes (an unhealthy
		// GPU, less CPU) it may not, and would move running jobs for
		// nothing.
		trial := make([]*structs.Placement, len(out))
		if placeType(before, t, jobs, idx, trial, false) {
			*c = *before
			for _, i := range idx {
				out[i] = trial[i]
			}
		}
	}
}

// placeType places the jobs idx of one type, keeping the placements of
// jobs whose configuration is unchanged when keep is set, and reports
// whether every job found nodes.
func placeType(c *planner.Cluster, t *gpuType, jobs []*job, idx []int, out []*structs.Placement, keep bool) bool {
	rest := idx[:0:0]
	for _, i := range idx {
		j := jobs[i]
		if keep && j.current != nil && *j.current == j.chosen.config {
			w := j.chosen.gpus / j.per
			if p := c.KeepCurrent(j.view.Current, j.tasks, 0, w); p != nil {
				out[i] = j.placement(p.Nodes, t.name)
				continue
			}
		}
		rest = append(rest, i)
	}
	slices.SortStableFunc(rest, func(a, b int) int {
		return cmp.Or(cmp.Compare(jobs[b].chosen.gpus, jobs[a].chosen.gpus), cmp.Compare(jobs[a].view.Job.ID, jobs[b].view.Job.ID))
	})
	all := true
	for _, i := range rest {
		if nodes := take(c, t, jobs[i]); nodes != nil {
			out[i] = jobs[i].placement(nodes, t.name)
		} else {
			all = false
		}
	}
	return all
}

// take finds nodes of type t for a job's chosen configuration and takes
// them; nil when none fit. One node: the fit with the fewest free GPUs
// (best fit), the job's own node on a tie. Several: whole nodes, each
// taking an equal share of the workers, the job's own nodes first.
func take(c *planner.Cluster, t *gpuType, j *job) []*structs.NodeTasks {
	cf, w := j.chosen.config, j.chosen.gpus/j.per
	own := map[string]bool{}
	if cur := j.view.Current; cur != nil {
		for _, nt := range cur.Nodes {
			own[nt.NodeID] = true
		}
	}
	nodeID := func(i int) string { return c.Nodes[i].ID }
	if cf.nodes == 1 {
		best, bestFree := -1, 0
		for _, i := range t.nodes {
			if !c.Fits(i, j.tasks.Worker, w) {
				continue
			}
			free := freeGPUs(c, i)
			if best < 0 || free < bestFree || free == bestFree && own[nodeID(i)] && !own[nodeID(best)] {
				best, bestFree = i, free
			}
		}
		if best < 0 {
			return nil
		}
		c.Take(best, j.tasks.Worker, w)
		return []*structs.NodeTasks{{NodeID: nodeID(best), Workers: w}}
	}
	per := w / cf.nodes
	cands := slices.Clone(t.nodes)
	slices.SortStableFunc(cands, func(a, b int) int {
		ownA, ownB := own[nodeID(a)], own[nodeID(b)]
		switch {
		case ownA && !ownB:
			return -1
		case ownB && !ownA:
			return 1
		}
		return 0
	})
	var picked []int
	for _, i := range cands {
		if freeGPUs(c, i) == t.perNode && c.Fits(i, j.tasks.Worker, per) {
			picked = append(picked, i)
			if len(picked) == cf.nodes {
				break
			}
		}
	}
	if len(picked) < cf.nodes {
		return nil
	}
	slices.Sort(picked)
	var nodes []*structs.NodeTasks
	for _, i := range picked {
		c.Take(i, j.tasks.Worker, per)
		nodes = append(nodes, &structs.NodeTasks{NodeID: nodeID(i), Workers: per})
	}
	return nodes
}

// placement is the job's placement on nodes of type typ at its chosen
// configuration.
func (j *job) placement(nodes []*structs.NodeTasks, typ string) *structs.Placement {
	r := j.chosen
	return &structs.Placement{
		Namespace: j.view.Job.Namespace, JobID: j.view.Job.ID, NumWorkers: r.gpus / j.per, Nodes: nodes, Batch: j.est.batch(r.typ, r.nodes, r.gpus/j.per),
		Reason: fmt.Sprintf("sia: %d GPUs of %s over %d nodes, normalised goodput %.2f", r.gpus, typ, r.nodes, r.goodput),
	}
}

// fill places, at their minimum in the room the selection leaves, the jobs
// it left out, so that no job waits while its minimum fits: a GPU
// all-reduce job on nodes of one type, as a configuration of §3.2 where
// one takes it, else spread as the even placer spreads it; a
// parameter-server job whose workers take GPUs with them on one type
// (fillPS); a job whose workers take no GPU wherever the even placer puts
// it.
func fill(c *planner.Cluster, ts []*gpuType, jobs []*job, out []*structs.Placement) {
	for i, j := range jobs {
		if out[i] != nil {
			continue
		}
		min := j.view.Minimum()
		if j.per > 0 && j.view.HasPS() {
			out[i] = fillPS(c, ts, j, min)
			continue
		}
		if j.per == 0 {
			if nodes, ok := placement.New(c).Place(j.tasks.PS, min.PS, j.tasks.Worker, min.Workers); ok {
				out[i] = &structs.Placement{
					Namespace: j.view.Job.Namespace, JobID: j.view.Job.ID, NumPS: min.PS, NumWorkers: min.Workers, Nodes: nodes,
					Reason: "sia: " + j.why + "; runs at its minimum in the room left",
				}
			}
			continue
		}
		for k, t := range ts {
			// Only a type the job has a model of, or any before it has
			// one: a type without a model while others have one is where
			// it was not seen to run (estimator.goodput).
			if !j.est.none && j.est.models[k] == nil {
				continue
			}
			if nodes := fillType(c, t, j, k, min.Workers); nodes != nil {
				out[i] = j.placement(nodes, t.name)
				out[i].Reason += "; its minimum, in the room the selection left"
				break
			}
		}
	}
}

// BatchReason ends the reason of a parameter-server job Sia leaves
// paused because its batch at its minimum is larger than any measured on
// each GPU type it has a model of: it may fit none of their memories.
const BatchReason = "its local batch is larger than any measured on every GPU type it has a model of"

// fillPS places a parameter-server job whose workers take GPUs at its
// minimum, its workers on nodes of one GPU type and its parameter servers
// wherever the even placer puts them; nil when no type takes it. Sia does
// not scale such a job (§3 is about all-reduce jobs), but the job's speed
// still depends on the type and its batch may not fit every type's
// memory, so the types are ranked by its estimated goodput at its
// minimum: only those it has a model of (any before it has one), the
// others discounted by its restart factor (Eq. 2) against the one it runs
// on, whose placement it keeps while that ranks first and fits. A type
// where a model per type puts the estimate at 0 (the batch larger than
// any measured there) is left out: the job's batch may not fit its
// memory. With one model for all types, such types rank last but are
// still tried, as fill places an all-reduce job at its minimum on any
// type it has a model of.
func fillPS(c *planner.Cluster, ts []*gpuType, j *job, min structs.Shape) *structs.Placement {
	type option struct {
		k       int
		goodput float64
	}
	var opts []option
	for k := range ts {
		if !j.est.none && j.est.models[k] == nil {
			continue
		}
		g := j.est.goodput(config{typ: k, nodes: 1, gpus: min.Workers * j.per}, min.Workers)
		if g <= 0 && j.est.typed {
			j.why = BatchReason
			continue
		}
		if j.current == nil || j.current.typ != k {
			g *= j.restart
		}
		opts = append(opts, option{k, g})
	}
	slices.SortStableFunc(opts, func(a, b option) int { return cmp.Compare(b.goodput, a.goodput) })
	for _, o := range opts {
		t := ts[o.k]
		reason := fmt.Sprintf("sia: %s; its minimum, workers on %s (estimated goodput %.3g)", j.why, t.name, o.goodput)
		if j.current != nil && j.current.typ == o.k {
			if p := c.KeepCurrent(j.view.Current, j.tasks, min.PS, min.Workers); p != nil {
				p.Reason = reason
				return p
			}
		}
		trial := c.Clone()
		workers := fillType(trial, t, j, o.k, min.Workers)
		if workers == nil {
			continue
		}
		ps, ok := placement.New(trial).Place(j.tasks.PS, min.PS, j.tasks.Worker, 0)
		if !ok {
			continue
		}
		*c = *trial
		return &structs.Placement{
			Namespace: j.view.Job.Namespace, JobID: j.view.Job.ID, NumPS: min.PS, NumWorkers: min.Workers,
			Nodes: mergeNodes(ps, workers), Reason: reason,
		}
	}
	return nil
}

// mergeNodes joins two placements' per-node tasks, sorted by node ID.
func mergeNodes(a, b []*structs.NodeTasks) []*structs.NodeTasks {
	byID := map[string]*structs.NodeTasks{}
	for _, nt := range slices.Concat(a, b) {
		m := byID[nt.NodeID]
		if m == nil {
			m = &structs.NodeTasks{NodeID: nt.NodeID}
			byID[nt.NodeID] = m
		}
		m.PS += nt.PS
		m.Workers += nt.Workers
	}
	out := slices.Collect(maps.Values(byID))
	slices.SortFunc(out, func(x, y *structs.NodeTasks) int { return strings.Compare(x.NodeID, y.NodeID) })
	return out
}

// fillType places w workers of job j on nodes of type t, the k-th: as a
// configuration of §3.2 when one holds them, else spread by the even
// placer over nodes of t alone. It takes the capacity and returns the
// nodes, or nil, changing nothing, when they do not fit.
func fillType(c *planner.Cluster, t *gpuType, j *job, k, w int) []*structs.NodeTasks {
	g := w * j.per
	cf := config{typ: k, nodes: 1, gpus: g}
	if g > t.perNode {
		cf.nodes = (g + t.perNode - 1) / t.perNode
	}
	j.chosen = &row{config: cf}
	if r := slices.IndexFunc(j.rows, func(r row) bool { return r.config == cf }); r >= 0 {
		j.chosen = &j.rows[r]
	}
	if w%cf.nodes == 0 && g/cf.nodes <= t.perNode && (!j.tasks.Worker.DistinctHosts || w == cf.nodes) {
		if nodes := take(c, t, j); nodes != nil {
			return nodes
		}
	}
	// Spread: each node of the type, the freest first, takes as many
	// workers as fit, which places them whenever the type can.
	// Each node's free GPUs are read once, not at every comparison.
	type freeNode struct{ i, free int }
	order := make([]freeNode, len(t.nodes))
	for x, i := range t.nodes {
		order[x] = freeNode{i, freeGPUs(c, i)}
	}
	slices.SortStableFunc(order, func(a, b freeNode) int { return cmp.Compare(b.free, a.free) })
	trial := c.Clone()
	var nodes []*structs.NodeTasks
	left := w
	for _, o := range order {
		i := o.i
		// A node where one worker does not fit takes none: one check, not
		// one per worker left, on each full node of the type.
		if !trial.Fits(i, j.tasks.Worker, 1) {
			continue
		}
		n := left
		if j.tasks.Worker.DistinctHosts {
			n = 1
		}
		for n > 0 && !trial.Fits(i, j.tasks.Worker, n) {
			n--
		}
		if n > 0 {
			trial.Take(i, j.tasks.Worker, n)
			nodes = append(nodes, &structs.NodeTasks{NodeID: c.Nodes[i].ID, Workers: n})
			left -= n
		}
		if left == 0 {
			break
		}
	}
	if left > 0 {
		j.chosen = nil
		return nil
	}
	*c = *trial
	slices.SortFunc(nodes, func(a, b *structs.NodeTasks) int { return strings.Compare(a.NodeID, b.NodeID) })
	j.chosen = &row{config: config{typ: k, nodes: len(nodes), gpus: g}}
	return nodes
}
