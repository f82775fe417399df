package gavel

import (
	"maps"
	"math"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/structs"
)

// gpu is the device type whose instances Gavel counts.
const gpu = "gpu"

// round is one request as Gavel sees it: the GPU types, each with its
// own nodes' free capacity, the jobs in arrival order, and the (job,
// type) pairs where a job's request can run.
type round struct {
	req   *planner.Request
	types []*gpuType
	jobs  []*job
	// pairs lists, job by job in arrival order and then type by type
	// in name order, the types each job's request fits on when empty.
	pairs []pair
	// typeOf maps a node ID to its type's index.
	typeOf map[string]int
}

// gpuType is the nodes of one GPU type (structs.Node.GPUType; "" for the
// nodes without GPUs) as a cluster of their own, so that a job placed on
// it never spans two types.
type gpuType struct {
	name string
	c    *planner.Cluster
	// gpus is the type's healthy GPUs: the capacity of the program.
	gpus int
}

// job is one job with what Gavel reads of it.
type job struct {
	view *planner.Job
	// ps and workers are its fixed request; scale its GPUs (gavel.py
	// scale_factor: the workload's num_replicas).
	ps, workers, scale int
	// tasks are its tasks on each type's cluster, by type index.
	tasks []planner.JobTasks
}

// pair is a job on a GPU type its request fits on, with the job's
// throughput there.
type pair struct {
	job, typ int
	// throughput is the job's optimizer steps a second at its request
	// on the type (gavel.py predict_throughput).
	throughput float64
}

func newRound(req *planner.Request) *round {
	r := &round{req: req, typeOf: make(map[string]int, len(req.Nodes))}
	byType := map[string][]*structs.Node{}
	for _, n := range req.Nodes {
		byType[n.GPUType()] = append(byType[n.GPUType()], n)
	}
	for _, name := range slices.Sorted(maps.Keys(byType)) {
		t := &gpuType{name: name, c: planner.NewCluster(byType[name])}
		t.gpus = t.c.FreeDeviceTotal(gpu)
		for _, n := range byType[name] {
			r.typeOf[n.ID] = len(r.types)
		}
		r.types = append(r.types, t)
	}
	views := slices.Clone(req.Jobs)
	planner.SortArrival(views)
	r.jobs = make([]*job, len(views))
	for i, v := range views {
		ps, w := v.FixedRequest()
		j := &job{view: v, ps: ps, workers: w, tasks: make([]planner.JobTasks, len(r.types))}
		for k, t := range r.types {
			j.tasks[k] = t.c.JobTasks(v)
		}
		if len(r.types) > 0 {
			tk := j.tasks[0]
			j.scale = w * tk.Worker.DeviceCounts[gpu]
			if tk.PS != nil {
				j.scale += ps * tk.PS.DeviceCounts[gpu]
			}
		}
		r.jobs[i] = j
		if j.scale == 0 {
			continue // not Gavel's: see schedule
		}
		for k := range r.types {
			if perNode := r.perNode(j, k); perNode > 0 {
				r.pairs = append(r.pairs, pair{job: i, typ: k, throughput: r.throughput(j, k, perNode)})
			}
		}
	}
	return r
}

// perNode is the most workers of job j one node of type k holds when
// empty, among the nodes that may run them, or 0 when the type's nodes
// together cannot hold the job's request: then the job never runs there.
func (r *round) perNode(j *job, k int) int {
	t := r.types[k]
	w := j.tasks[k].Worker
	if j.scale > t.gpus {
		return 0
	}
	most, total := 0, 0
	for i, n := range t.c.Nodes {
		if !t.c.Feasible(i, w) {
			continue
		}
		cpu, mem, _ := t.c.Free(i)
		fit := j.workers
		if w.CPU > 0 {
			fit = min(fit, cpu/w.CPU)
		}
		if w.MemoryMB > 0 {
			fit = min(fit, mem/w.MemoryMB)
		}
		if g := w.DeviceCounts[gpu]; g > 0 {
			fit = min(fit, gpus(n)/g)
		}
		if w.DistinctHosts {
			fit = min(fit, 1)
		}
		most = max(most, fit)
		total += fit
	}
	if total < j.workers {
		return 0
	}
	return most
}

// gpus is node n's healthy GPUs.
func gpus(n *structs.Node) int {
	c := 0
	for _, d := range n.Devices {
		if d.Type == gpu {
			c += d.HealthyCount()
		}
	}
	return c
}

// throughput is job j's optimizer steps a second at its request on type
// k, its workers packed perNode a node (gavel.py predict_throughput):
// from its throughput model on the type (Job.PerfByType), else its model
// of all types together (Job.Perf), else 1 on every type, so that a job
// without a model counts the same wherever it runs.
func (r *round) throughput(j *job, k, perNode int) float64 {
	v := j.view
	fit := v.PerfByType[r.types[k].name]
	if fit == nil {
		fit = v.Perf
	}
	if fit == nil {
		return 1
	}
	nodes := (j.workers + perNode - 1) / perNode
	batch := max(v.Job.Training.GlobalBatchSize, 1)
	var lim goodput.Limits
	if b := v.Job.Training.BatchSize; b != nil {
		lim = goodput.Limits{MaxLocal: b.MaxLocal, Accumulation: b.MaxLocal > 0}
	}
	c := (*goodput.Model)(nil).Fixed(nodes, j.workers, batch, lim)
	step := fit.Params.StepTime(nodes, j.workers, float64(c.Local), c.Accum)
	if !(step > 0) || math.IsInf(step, 0) {
		return 0
	}
	return 1 / step
}

// ranOn returns the GPU type the placement's workers ran on: that of its
// first node with workers; false for a paused or unknown placement.
func (r *round) ranOn(p *structs.Placement) (string, bool) {
	if p == nil || p.Paused() {
		return "", false
	}
	for _, nt := range p.Nodes {
		if nt.Workers == 0 {
			continue
		}
		if k, ok := r.typeOf[nt.NodeID]; ok {
			return r.types[k].name, true
		}
	}
	return "", false
}
