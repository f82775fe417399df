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
	phaseWarmup = 3
	// phaseMeasured is the iterations every job completes at least
	// within the measurement.
	phaseMeasured = 12
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
	var find func(int) int
	find = func(x int) int {
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
		rem     []float64 // work left per node of the job
		finish  []float64 // completion times of its iterations
	}
	st := make([]state, len(comp))
	// queue[r][n]: subtasks ready or running on local node n's resource r
	// (0 CPU, 1 network), in the order they became ready.
	queue := [2][][]subtask{make([][]subtask, len(global)), make([][]subtask, len(global))}
	busy := [2][]float64{make([]float64, len(global)), make([]float64, len(global))}
	draw := func(cv float64) float64 {
		if cv <= 0 {
			return 1
		}
		// Log-normal of mean 1 and relative standard deviation cv.
		s := math.Sqrt(math.Log1p(cv * cv))
		return math.Exp(s*rng.NormFloat64() - s*s/2)
	}
	begin := func(k, phase int) {
		j, s := &jobs[comp[k]], &st[k]
		s.phase, s.pending = phase, len(j.nodes)
		if phase == 0 {
			s.factor = draw(j.cv)
		}
		for at, n := range j.nodes {
			w := j.net
			if phase == 0 {
				w = j.cpu[at]
			}
			s.rem[at] = w * s.factor
			ln := local[n]
			queue[phase][ln] = append(queue[phase][ln], subtask{k, at})
		}
	}
	for k := range comp {
		st[k].rem = make([]float64, len(jobs[comp[k]].nodes))
		begin(k, 0)
	}
	now, start := 0.0, -1.0
	var busyAtStart [2][]float64
	minDone := func() int {
		m := math.MaxInt
		for k := range st {
			m = min(m, st[k].done)
		}
		return m
	}
	// served reports the rate at which subtask i of the queue q is served.
	served := func(q []subtask, i int) float64 {
		if coordinated {
			if i == 0 {
				return 1
			}
			return 0
		}
		return 1 / float64(len(q))
	}
	for events := 0; events < phaseMaxEvents; events++ {
		dt := math.Inf(1)
		for r := range queue {
			for _, q := range queue[r] {
				for i, t := range q {
					if rate := served(q, i); rate > 0 {
						dt = min(dt, st[t.job].rem[t.at]/rate)
					}
				}
			}
		}
		if math.IsInf(dt, 1) {
			break // nothing to do: every job's work is zero
		}
		now += dt
		var ended []subtask
		for r := range queue {
			for n, q := range queue[r] {
				if len(q) == 0 {
					continue
				}
				busy[r][n] += dt
				for i, t := range q {
					rate := served(q, i)
					if rate == 0 {
						continue
					}
					rem := &st[t.job].rem[t.at]
					*rem -= dt * rate
					if *rem <= 1e-9*max(dt, 1) {
						*rem = -1 // ended, dropped from the queue below
						ended = append(ended, t)
					}
				}
				queue[r][n] = slices.DeleteFunc(q, func(t subtask) bool { return st[t.job].rem[t.at] < 0 })
			}
		}
		// Phases that ended begin their next, in job order so that ties
		// queue deterministically.
		slices.SortFunc(ended, func(a, b subtask) int { return a.job - b.job })
		for _, t := range ended {
			s := &st[t.job]
			s.pending--
			if s.pending > 0 {
				continue
			}
			if s.phase == 0 {
				begin(t.job, 1)
				continue
			}
			s.done++
			s.finish = append(s.finish, now)
			begin(t.job, 0)
		}
		if start < 0 && minDone() >= phaseWarmup {
			start = now
			busyAtStart = [2][]float64{slices.Clone(busy[0]), slices.Clone(busy[1])}
		}
		if start >= 0 && minDone() >= phaseWarmup+phaseMeasured {
			break
		}
	}
	if start < 0 {
		start, busyAtStart = 0, [2][]float64{make([]float64, len(global)), make([]float64, len(global))}
	}
	span := now - start
	for k, x := range comp {
		// Iterations completed from the window's start on (it starts at
		// one job's completion, which counts).
		f := st[k].finish
		i, _ := slices.BinarySearch(f, start)
		f = f[i:]
		if len(f) >= 2 {
			out.iter[x] = (f[len(f)-1] - f[0]) / float64(len(f)-1)
		} else {
			out.iter[x] = math.Inf(1)
		}
	}
	if span <= 0 {
		return
	}
	for n, g := range global {
		out.cpu[g] = (busy[0][n] - busyAtStart[0][n]) / span
		out.net[g] = (busy[1][n] - busyAtStart[1][n]) / span
	}
}
