package pollux

import (
	"encoding/binary"
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/structs"
)

// epsilon is added to every speed-up in the power mean (pollux.py
// _evaluate's 1e-3), so that a paused job counts without dividing by 0.
const epsilon = 1e-3

// seed fixes the search's random numbers, so that a request always gets
// the same decision.
const seed = 0x9011c5

// problem is one round's search: the jobs in the order they take
// capacity, the nodes' capacity in a few dimensions, and scratch space.
// Its methods are not safe for concurrent use.
type problem struct {
	opts Options
	req  *planner.Request
	c    *planner.Cluster
	jobs []*job
	// n nodes; k dimensions of capacity: CPU, memory, then device
	// instances of each type some job asks for. capacity[i*k+d].
	n, k     int
	capacity []int
	// stride is the most entries an individual holds for a job
	// (Options.MaxNodes); job j's entries are [off[j], off[j+1]) (width).
	stride int
	off    []int
	p      float64
	// weights is the sum of the jobs' weights.
	weights float64
	rng     *rand.Rand
	// evaluated counts the allocations evaluated (Options.Budget).
	evaluated int
	// scratch, reused by every individual
	used, free []int
	owner      []int32
	perm       []int
	spare      []*individual
	// classes interns the jobs' demand, cap and feasible by their
	// content (newJob); capScratch and keyScratch build the key.
	classes    map[string]*class
	capScratch []int32
	keyScratch []byte
}

// class is what jobs of the same worker demand and feasible nodes share.
type class struct {
	demand   []int
	cap      []int32
	feasible []int32
}

// job is one job of the search with what the search needs of it.
type job struct {
	view  *planner.Job
	tasks planner.JobTasks
	// minW and maxR bound its workers; minPS is the servers a PS job
	// runs.
	minW, maxR, minPS int
	// demand of one worker in the problem's dimensions; share its
	// dominant share of the cluster.
	demand []int
	share  float64
	// cap[i] is the most workers node i holds when empty, before maxR
	// (maxRep); feasible lists the nodes where it is positive. demand,
	// cap and feasible are shared by the jobs of one class.
	cap      []int32
	feasible []int32
	// model is nil without a fitted throughput model; adaptive jobs
	// choose their batch within lim.
	model    *goodput.Model
	adaptive bool
	lim      goodput.Limits
	// fairReplicas and base are the fair share's replicas and goodput.
	fairReplicas int
	base         float64
	// restart multiplies the speed-up of an allocation other than the
	// current one.
	restart float64
	// current is the job's allocation now, sorted by node.
	current []entry
	// weight is the job's weight in the power mean (Options.Weight).
	weight float64
	// memo caches scaled speed-ups by nodes × (maxR+1) + replicas; NaN
	// when not computed yet. Jobs of one speedupKey share it.
	memo []float64
}

// entry is a job's workers on one node.
type entry struct {
	node, count int32
}

func newProblem(req *planner.Request, opts Options) *problem {
	pr := &problem{opts: opts, req: req, c: planner.NewCluster(req.Nodes), n: len(req.Nodes), stride: opts.MaxNodes, p: *opts.Fairness}
	pr.rng = rand.New(rand.NewPCG(seed, uint64(len(req.Jobs))))
	views := slices.Clone(req.Jobs)
	planner.SortArrival(views)
	if opts.Order != nil {
		slices.SortStableFunc(views, opts.Order)
	}

	// Dimensions: CPU, memory, and each device type a job asks for.
	types := map[string]int{}
	var typeNames []string
	tasks := make([]planner.JobTasks, len(views))
	for i, v := range views {
		tasks[i] = pr.c.JobTasks(v)
		for _, t := range slices.Sorted(maps.Keys(tasks[i].Worker.DeviceCounts)) {
			if _, ok := types[t]; !ok {
				types[t] = 2 + len(typeNames)
				typeNames = append(typeNames, t)
			}
		}
	}
	pr.k = 2 + len(typeNames)
	pr.capacity = make([]int, pr.n*pr.k)
	total := make([]float64, pr.k)
	for i, node := range req.Nodes {
		row := pr.capacity[i*pr.k : (i+1)*pr.k]
		row[0], row[1] = node.CPU, node.MemoryMB
		for _, d := range node.Devices {
			if t, ok := types[d.Type]; ok {
				row[t] += d.HealthyCount()
			}
		}
		for d, v := range row {
			total[d] += float64(v)
		}
	}
	pr.used, pr.free = make([]int, pr.n*pr.k), make([]int, pr.n*pr.k)
	pr.owner = make([]int32, pr.n)
	pr.perm = make([]int, pr.stride)
	pr.classes, pr.capScratch = map[string]*class{}, make([]int32, pr.n)

	pr.jobs = make([]*job, len(views))
	pr.off = make([]int, len(views)+1)
	for i, v := range views {
		pr.jobs[i] = pr.newJob(v, tasks[i], types, total)
		pr.weights += pr.jobs[i].weight
		// A job whose workers are repaired to at most maxR spans at most
		// maxR nodes, and a mutation adds one node before the repair: it
		// needs no more entries than that, which keeps an individual,
		// copied for every offspring, small.
		pr.off[i+1] = pr.off[i] + min(pr.stride, pr.jobs[i].maxR+1)
	}
	// Jobs of the same model, batch rules, dominant share and most
	// replicas have the same speed-up at every placement: they share one
	// memo (and fair share), so that a round computes each goodput table
	// once, not once a job.
	memos := map[speedupKey]*job{}
	for _, j := range pr.jobs {
		k := j.speedupKey()
		if first, ok := memos[k]; ok {
			j.fairReplicas, j.base, j.memo = first.fairReplicas, first.base, first.memo
			continue
		}
		j.fairShare(len(pr.jobs), pr.n)
		j.memo = make([]float64, (pr.opts.MaxNodes+1)*(j.maxR+1))
		for i := range j.memo {
			j.memo[i] = math.NaN()
		}
		memos[k] = j
	}
	return pr
}

func (pr *problem) newJob(v *planner.Job, tasks planner.JobTasks, types map[string]int, total []float64) *job {
	psb, wb := v.Bounds()
	j := &job{view: v, tasks: tasks, minW: max(wb.Min, 1), demand: make([]int, pr.k), weight: 1}
	if pr.opts.Weight != nil {
		j.weight = pr.opts.Weight(v)
	}
	if v.HasPS() {
		j.minPS = max(psb.Min, 1)
	}
	w := tasks.Worker
	j.demand[0], j.demand[1] = w.CPU, w.MemoryMB
	for t, c := range w.DeviceCounts {
		j.demand[types[t]] = c
	}
	for d, c := range j.demand {
		if total[d] > 0 {
			j.share = max(j.share, float64(c)/total[d])
		}
	}
	if j.share == 0 {
		j.share = 1 / float64(max(pr.n, 1))
	}

	// The most replicas (simulator.py get_pollux_job_info): the bounds,
	// twice the most replicas measured (one before any), and no more
	// than the largest batch over the smallest local batch.
	j.maxR = wb.Max
	t := v.Job.Training
	if v.Perf != nil {
		j.maxR = min(j.maxR, max(2*v.Perf.MaxReplicas, 1))
	} else {
		j.maxR = 1
	}
	if b := t.BatchSize; b != nil {
		j.adaptive = true
		lo, hi := b.LocalBounds()
		j.lim = goodput.Limits{MinBatch: b.Min, MaxBatch: b.Max, MinLocal: lo, MaxLocal: hi, Accumulation: true}
		j.maxR = min(j.maxR, max(b.Max/lo, 1))
	}
	j.maxR = max(j.maxR, j.minW)
	if v.Perf != nil {
		j.model = &goodput.Model{Perf: v.Perf.Params, RefBatch: max(t.GlobalBatchSize, 1)}
		if v.Grad != nil {
			j.model.Grad = *v.Grad
		}
	}

	// What each node holds of one worker is the same for every job of
	// the same worker demand and feasible nodes: jobs share it (their
	// class), so that the search's inner loops read a few arrays that
	// stay in cache instead of one per job.
	capRow := pr.capScratch
	for i := range pr.n {
		capRow[i] = 0
		if !pr.c.Feasible(i, w) {
			continue
		}
		m := math.MaxInt32
		for d, c := range j.demand {
			if c > 0 {
				m = min(m, pr.capacity[i*pr.k+d]/c)
			}
		}
		if w.DistinctHosts {
			m = min(m, 1)
		}
		capRow[i] = int32(m)
	}
	key := pr.keyScratch[:0]
	for _, c := range j.demand {
		key = binary.LittleEndian.AppendUint64(key, uint64(c))
	}
	for _, c := range capRow {
		key = binary.LittleEndian.AppendUint32(key, uint32(c))
	}
	pr.keyScratch = key
	cl, ok := pr.classes[string(key)]
	if !ok {
		cl = &class{demand: j.demand, cap: slices.Clone(capRow)}
		for i, c := range cl.cap {
			if c > 0 {
				cl.feasible = append(cl.feasible, int32(i))
			}
		}
		pr.classes[string(key)] = cl
	}
	j.demand, j.cap, j.feasible = cl.demand, cl.cap, cl.feasible

	// The restart penalty (pollux.py _evaluate): age in seconds.
	delay := pr.opts.RestartDelay.Seconds()
	age := max(float64(pr.req.Now-v.Job.SubmitTime)/1e9, 0)
	j.restart = max(age-float64(v.Restarts)*delay, 0) / (age + delay)

	if cur := v.Current; cur != nil {
		for _, nt := range cur.Nodes {
			if i, ok := pr.c.NodeIndex(nt.NodeID); ok && nt.Workers > 0 {
				j.current = addEntry(j.current, int32(i), int32(nt.Workers))
			}
		}
	}
	return j
}

// width is the most entries an individual holds for job j.
func (pr *problem) width(j int) int { return pr.off[j+1] - pr.off[j] }

// maxRep is the most workers node i holds of the job when empty.
func (j *job) maxRep(i int32) int32 { return min(j.cap[i], int32(j.maxR)) }

// addEntry adds count workers on node to entries sorted by node.
func addEntry(entries []entry, node, count int32) []entry {
	k, found := slices.BinarySearchFunc(entries, node, func(e entry, n int32) int { return int(e.node - n) })
	if found {
		entries[k].count += count
		return entries
	}
	return slices.Insert(entries, k, entry{node, count})
}

// speedupKey is what a job's speed-ups depend on (speedup).
type speedupKey struct {
	model      goodput.Model
	hasModel   bool
	adaptive   bool
	lim        goodput.Limits
	fixedBatch int
	share      float64
	maxR       int
}

func (j *job) speedupKey() speedupKey {
	k := speedupKey{hasModel: j.model != nil, adaptive: j.adaptive, lim: j.lim,
		fixedBatch: j.view.Job.Training.GlobalBatchSize, share: j.share, maxR: j.maxR}
	if j.model != nil {
		k.model = *j.model
	}
	return k
}

// fairShare sets the job's fair share and its goodput there
// (pollux.py Problem.__init__): ⌈1/(share·jobs)⌉ replicas on
// ⌈nodes·share⌉ nodes.
func (j *job) fairShare(jobs, nodes int) {
	j.fairReplicas = max(int(math.Ceil(1/j.share/float64(jobs)-1e-9)), 1)
	if j.model == nil {
		return
	}
	fairNodes := min(max(int(math.Ceil(float64(nodes)*j.share-1e-9)), 1), j.fairReplicas)
	for r := j.fairReplicas; r >= 1 && j.base <= 0; r-- {
		j.base = j.goodput(min(fairNodes, r), r)
	}
}

// goodput is the job's goodput with replicas over nodes, at the best
// batch for an adaptive job; 0 when no batch keeps its bounds.
func (j *job) goodput(nodes, replicas int) float64 {
	if j.adaptive {
		c, _ := j.model.Optimize(nodes, replicas, j.lim)
		return c.Goodput
	}
	return j.model.Fixed(nodes, replicas, j.view.Job.Training.GlobalBatchSize, goodput.Limits{}).Goodput
}

// speedup is the job's scaled speed-up with replicas over nodes
// (pollux.py _evaluate), before the restart penalty: its goodput over its
// fair share's, times share × cluster nodes; replicas over fair replicas
// without a model.
func (pr *problem) speedup(j *job, nodes, replicas int) float64 {
	if replicas <= 0 {
		return 0
	}
	idx := -1
	if nodes <= pr.opts.MaxNodes && replicas <= j.maxR {
		idx = nodes*(j.maxR+1) + replicas
		if v := j.memo[idx]; !math.IsNaN(v) {
			return v
		}
	}
	var s float64
	switch {
	case j.model == nil:
		s = float64(replicas) / float64(j.fairReplicas)
	case j.base > 0:
		s = j.goodput(nodes, replicas) / j.base
	}
	s *= j.share * float64(pr.n)
	if idx >= 0 {
		j.memo[idx] = s
	}
	return s
}

// term is a speed-up's term of the power mean's sum.
func (pr *problem) term(s float64) float64 {
	switch pr.p {
	case -1:
		return 1 / (s + epsilon)
	case 0:
		return math.Log(max(s, epsilon))
	}
	return math.Pow(s+epsilon, pr.p)
}

// mean is the weighted power mean of terms summing, weighted, to sum
// over jobs of weights summing to weights.
func (pr *problem) mean(sum, weights float64) float64 {
	if weights <= 0 {
		return 0
	}
	switch pr.p {
	case -1:
		return weights / sum
	case 0:
		return math.Exp(sum / weights)
	}
	return math.Pow(sum/weights, 1/pr.p)
}

// batch is the batch an adaptive job trains at with replicas over nodes:
// the best its goodput model finds, else, before it has one, the
// artifact's start (simulator.py update_local_bsz): the reference batch,
// or the smallest local batch on every replica if that is more. nil for a
// job whose batch is fixed, or when no batch keeps its bounds.
func (j *job) batch(nodes, replicas int) *structs.Batch {
	if !j.adaptive || replicas <= 0 {
		return nil
	}
	if j.model != nil {
		if c, ok := j.model.Optimize(nodes, replicas, j.lim); ok {
			return &structs.Batch{Global: c.Global, Local: c.Local, AccumSteps: c.Accum}
		}
		return nil
	}
	ref := j.view.Job.Training.GlobalBatchSize
	b := min(max(ref, j.lim.MinLocal*replicas), j.lim.MaxBatch)
	local, accum := goodput.Split(float64(b), replicas, ref, j.lim)
	global := replicas * local * (accum + 1)
	if local < j.lim.MinLocal || local > j.lim.MaxLocal || global < j.lim.MinBatch || global > j.lim.MaxBatch {
		return nil
	}
	return &structs.Batch{Global: global, Local: local, AccumSteps: accum}
}
