package sim

import (
	"math"
	"math/rand/v2"
	"slices"
)

// The ground truth of Harmony's workload on shared nodes: a discrete-event
// simulation of the phases of the jobs, from first principles, not from
// Harmony's performance model (eq. 4.1 is what the planner predicts; this
// is what then happens).
//
// A job is synchronous PS training (chapter 2, Figure 2.2): every
// iteration is a computation subtask on each of its nodes (its worker
// computes, CPU) followed by a communication subtask on each of its nodes
// (push and pull, network), and a phase starts on all of its nodes only
// when the previous one has ended on all of them (the job's barrier; §4.3.1,
// Figure 4.6: "when all distributed COMM subtasks of job C are complete,
// the COMP subtask of C is enqueued"). Each node has one CPU and one
// network, each doing one second of work per second. A subtask is an
// amount of work in seconds of its resource: a worker's computation on
// node i is CPU1/w per worker there, its communication Net.
//
// Jobs sharing a node use its resources in one of two ways:
//
//   - coordinated (Harmony's subtask executor, §4.3.1): each node runs one
//     CPU subtask and one network subtask at a time, the others waiting in
//     a FIFO queue per resource in the order they became ready ("the
//     subtask executors of the workers run the queued subtasks in the
//     provided order"; a CPU subtask "uses almost all of the provided CPU
//     resources");
//   - uncoordinated (naive co-location, §4.1, Figure 4.4a): every subtask
//     ready on a resource runs, and those running share it equally
//     (processor sharing), so overlapping phases of different jobs stretch
//     each other.
//
// Iterations vary: each iteration of a job scales its subtasks by a
// factor of mean 1 and relative standard deviation its app's in Table 2.1
// (NMF 1.0 s of 48.3 s, LDA 1.8 of 94.5, MLR 0.7 of 32.4, Lasso 0.5 of
// 28.9), the same on all of its nodes. Alone, a job iterates in
// max_i C_i + Net on average, Table 2.1's time.
//
// Nothing here groups jobs, predicts a cycle or sums subtasks: the
// iteration times and utilisations are measured on the simulated
// timeline, after a warm-up.

// phaseJob is one job of a phase simulation: the nodes it has workers on,
// the computation work of its subtask on each (seconds of that node's
// CPU), the communication work on each (seconds of its network), and the
// relative standard deviation of its iterations.
type phaseJob struct {
	nodes []int
	cpu   []float64
	net   float64
	cv    float64
}

// phaseOutcome is what a phase simulation measured: each job's mean
// iteration time and, per node, the share of the time its CPU and its
// network were busy.
type phaseOutcome struct {
	iter     []float64
	cpu, net map[int]float64
}

// Phase simulation constants.
const (
	// phaseWarmup is the iterations every job completes before the
	// measurement starts, so that the queues reach their steady order.
	phaseWarmup = 2
	// phaseMeasured is the iterations every job completes at least
	// within the measurement.
	phaseMeasured = 8
	// phaseMaxEvents bounds one simulation; a component that reaches it is
	// measured over what it ran.
	phaseMaxEvents = 400_000
)

// simulatePhases runs jobs on their nodes, coordinated or not, until every
// job has done phaseWarmup + phaseMeasured iterations, and measures from
// the time every job has done phaseWarmup. Jobs that share no node with
// each other (directly or through others) are simulated apart.
// Deterministic for rng's state.
func simulatePhases(jobs []phaseJob, coordinated bool, rng *rand.Rand) phaseOutcome {
	out := phaseOutcome{iter: make([]float64, len(jobs)), cpu: map[int]float64{}, net: map[int]float64{}}
	for _, comp := range phaseComponents(jobs) {
		simulateComponent(jobs, comp, coordinated, rng, &out)
	}
	return out
}

// phaseComponents splits jobs into groups that share nodes, each in job
// order, the groups in order of their first job.
func phaseComponents(jobs []phaseJob) [][]int {
	parent := make([]int, len(jobs))
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	owner := map[int]int{}
	for x, j := range jobs {
		for _, n := range j.nodes {
			if o, ok := owner[n]; ok {
				a, b := find(o), find(x)
				if a != b {
					parent[max(a, b)] = min(a, b)
				}
			} else {
				owner[n] = x
			}
		}
	}
	index := map[int]int{}
	var out [][]int
	for x := range jobs {
		r := find(x)
		k, ok := index[r]
		if !ok {
			k = len(out)
			index[r] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], x)
	}
	return out
}

// subtask is a job's subtask on one of its nodes: job index and the
// index of the node in the job's nodes.
type subtask struct{ job, at int }

// resource is one node's CPU or network in a phase simulation: the
// subtasks ready or running on it in the order they became ready, their
// work left as of last, its busy time up to last, and when its next
// subtask ends if nothing changes.
type resource struct {
	queue []subtask
	rem   []float64 // parallel to queue
	last  float64
	busy  float64
	next  float64
}

// advance brings r to time now: the running subtasks do their work (the
// head alone when coordinated, all at equal shares when not).
func (r *resource) advance(now float64, coordinated bool) {
	dt := now - r.last
	r.last = now
	if dt <= 0 || len(r.queue) == 0 {
		return
	}
	r.busy += dt
	if coordinated {
		r.rem[0] -= dt
		return
	}
	share := dt / float64(len(r.queue))
	for i := range r.rem {
		r.rem[i] -= share
	}
}

// plan sets r.next from now, r being up to date.
func (r *resource) plan(coordinated bool) {
	switch {
	case len(r.queue) == 0:
		r.next = math.Inf(1)
	case coordinated:
		r.next = r.last + max(r.rem[0], 0)
	default:
		r.next = r.last + max(slices.Min(r.rem), 0)*float64(len(r.queue))
	}
}

// simulateComponent simulates the jobs comp (indices into jobs) and adds
// their iterations and their nodes' utilisation to out.
func simulateComponent(jobs []phaseJob, comp []int, coordinated bool, rng *rand.Rand, out *phaseOutcome) {
	// Local node numbering.
	local := map[int]int{}
	var global []int
	for _, x := range comp {
		for _, n := range jobs[x].nodes {
			if _, ok := local[n]; !ok {
				local[n] = len(global)
				global = append(global, n)
			}
		}
	}
	type state struct {
		phase   int // 0 computing, 1 communicating
		pending int // nodes still working on the phase
		done    int // iterations completed
		factor  float64
		node    []int     // local node of each of the job's nodes
		finish  []float64 // completion times of its iterations
	}
	st := make([]state, len(comp))
	// res[2n] is local node n's CPU, res[2n+1] its network.
	res := make([]resource, 2*len(global))
	for i := range res {
		res[i].next = math.Inf(1)
	}
	draw := func(cv float64) float64 {
		if cv <= 0 {
			return 1
		}
		// Log-normal of mean 1 and relative standard deviation cv.
		s := math.Sqrt(math.Log1p(cv * cv))
		return math.Exp(s*rng.NormFloat64() - s*s/2)
	}
	now := 0.0
	begin := func(k, phase int) {
		j, s := &jobs[comp[k]], &st[k]
		s.phase, s.pending = phase, len(j.nodes)
		if phase == 0 {
			s.factor = draw(j.cv)
		}
		for at := range j.nodes {
			w := j.net
			if phase == 0 {
				w = j.cpu[at]
			}
			r := &res[2*s.node[at]+phase]
			r.advance(now, coordinated)
			r.queue = append(r.queue, subtask{k, at})
			r.rem = append(r.rem, w*s.factor)
			r.plan(coordinated)
		}
	}
	for k, x := range comp {
		st[k].node = make([]int, len(jobs[x].nodes))
		for at, n := range jobs[x].nodes {
			st[k].node[at] = local[n]
		}
		begin(k, 0)
	}
	start := -1.0
	var busyAtStart []float64
	minDone := func() int {
		m := math.MaxInt
		for k := range st {
			m = min(m, st[k].done)
		}
		return m
	}
	var ended []subtask
	for events := 0; events < phaseMaxEvents; events++ {
		t := math.Inf(1)
		for i := range res {
			t = min(t, res[i].next)
		}
		if math.IsInf(t, 1) {
			break // nothing to do: every job's work is zero
		}
		now = t
		ended = ended[:0]
		for i := range res {
			r := &res[i]
			if r.next > now {
				continue
			}
			r.advance(now, coordinated)
			eps := 1e-9 * max(now, 1)
			keep := 0
			for q, sub := range r.queue {
				if r.rem[q] <= eps && (!coordinated || q == 0) {
					ended = append(ended, sub)
					continue
				}
				r.queue[keep], r.rem[keep] = sub, r.rem[q]
				keep++
			}
			r.queue, r.rem = r.queue[:keep], r.rem[:keep]
			r.plan(coordinated)
		}
		// Phases that ended begin their next, in job order so that ties
		// queue deterministically.
		slices.SortFunc(ended, func(a, b subtask) int { return a.job - b.job })
		for _, e := range ended {
			s := &st[e.job]
			s.pending--
			if s.pending > 0 {
				continue
			}
			if s.phase == 0 {
				begin(e.job, 1)
				continue
			}
			s.done++
			s.finish = append(s.finish, now)
			begin(e.job, 0)
		}
		if start < 0 && minDone() >= phaseWarmup {
			start = now
			busyAtStart = make([]float64, len(res))
			for i := range res {
				res[i].advance(now, coordinated)
				busyAtStart[i] = res[i].busy
			}
		}
		if start >= 0 && minDone() >= phaseWarmup+phaseMeasured {
			break
		}
	}
	for i := range res {
		res[i].advance(now, coordinated)
	}
	if start < 0 {
		start, busyAtStart = 0, make([]float64, len(res))
	}
	span := now - start
	for k, x := range comp {
		// Iterations completed from the window's start on (it starts at
		// one job's completion, which counts).
		f := st[k].finish
		i, _ := slices.BinarySearch(f, start)
		f = f[i:]
		switch {
		case len(f) >= 2:
			out.iter[x] = (f[len(f)-1] - f[0]) / float64(len(f)-1)
		case st[k].done > 0:
			// Cut short by phaseMaxEvents: its mean since the start.
			out.iter[x] = st[k].finish[st[k].done-1] / float64(st[k].done)
		default:
			// Not one iteration yet: at least the time simulated.
			out.iter[x] = now
		}
	}
	if span <= 0 {
		return
	}
	for n, g := range global {
		out.cpu[g] = (res[2*n].busy - busyAtStart[2*n]) / span
		out.net[g] = (res[2*n+1].busy - busyAtStart[2*n+1]) / span
	}
}
