package dorm

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// Tie-breaks below the utilisation of any task: among assignments of equal
// utilisation (eq. 10) the MILP prefers fewer adjusted jobs, then less
// fairness loss, P1's (eq. 5) other two objectives.
const (
	adjustPenalty = 1e-6
	lossPenalty   = 1e-7
)

// excessPenalty is what a unit of fairness loss above eq. 15's bound
// costs in the objective: far more than all the utilisation (at most one
// per resource type) it could buy, so the MILP exceeds the budget only
// when eq. 16 and the capacities leave it no way to meet it, and then by
// as little as they allow.
const excessPenalty = 1e3

// job is one application of P2 and its columns (0-based indexes into the
// model's columns; -1 where a job's task may not run on a node).
type job struct {
	view       *planner.Job
	tasks      planner.JobTasks
	minP, maxP int
	minW, maxW int
	// shareP and shareW are one server's and one worker's share of each
	// resource type (d_k / Σ_h c_hk); nil without the role.
	shareP, shareW []float64
	// dominant are the resource types that can be the job's dominant one
	// (candidates); with more than one, s is the column of its dominant
	// share and y the binaries choosing which type attains it.
	dominant []int
	s        int
	y        []int
	// fair is ŝ_i, the job's dominant share under DRF.
	fair float64
	// running: the job is in A^t ∩ A^{t-1}; curP and curW are x^{t-1} by
	// node, and gone counts tasks on nodes no longer in the request.
	running    bool
	curP, curW []int
	gone       int
	z, l, r    int
	p, w       []int
}

// model is P2 for one request, as a CPLEX LP file.
type model struct {
	jobs  []*job
	nodes []*structs.Node
	cols  []string
	// types are the resource types M: "cpu", "memory", then device types.
	types []string
	// lossBound and adjustBound are eq. 15's and eq. 16's right-hand sides.
	lossBound   float64
	adjustBound int
	// excess is the column of the fairness loss above lossBound.
	excess  int
	running int
	lp      strings.Builder
}

func (m *model) col(name string) int {
	m.cols = append(m.cols, name)
	return len(m.cols) - 1
}

// demand returns task t's demand of resource type k.
func demand(t *planner.Task, k string) float64 {
	switch k {
	case "cpu":
		return float64(t.CPU)
	case "memory":
		return float64(t.MemoryMB)
	}
	return float64(t.DeviceCounts[k])
}

// nodeCapacity returns the free capacity of node i by resource type.
func nodeCapacity(c *planner.Cluster, i int, k string) float64 {
	switch k {
	case "cpu":
		cpu, _, _ := c.Free(i)
		return float64(cpu)
	case "memory":
		_, mem, _ := c.Free(i)
		return float64(mem)
	}
	n := 0
	for g, free := range c.FreeDevices(i) {
		if c.Nodes[i].Devices[g].Type == k {
			n += free
		}
	}
	return float64(n)
}

// newModel builds P2 for the request's jobs (sorted) over the cluster's
// resources, with their DRF shares fair (ŝ by job) and the thresholds.
func newModel(req *planner.Request, views []*planner.Job, res resources, fair map[structs.JobKey]float64, theta1, theta2 float64) *model {
	c := planner.NewCluster(req.Nodes)
	m := &model{nodes: req.Nodes, types: res.types}
	util := func(t *planner.Task) float64 {
		u := 0.0
		for _, v := range res.shareOf(t) {
			u += v
		}
		return u
	}

	// Columns: the excess over eq. 15's bound, then per job z, l, s and
	// y (with several candidate dominant types), r (if running), then p
	// and x per node.
	m.excess = m.col("excess")
	for ji, v := range views {
		ps, workers := v.Bounds()
		j := &job{view: v, tasks: c.JobTasks(v), minW: max(workers.Min, 1), maxW: workers.Max, fair: fair[v.Job.Key()], r: -1, s: -1}
		j.shareW = res.shareOf(j.tasks.Worker)
		if v.HasPS() {
			j.minP, j.maxP = max(ps.Min, 1), ps.Max
			j.shareP = res.shareOf(j.tasks.PS)
		}
		j.dominant = candidates(j.shareP, j.shareW, len(res.types))
		j.z = m.col("z" + strconv.Itoa(ji))
		j.l = m.col("l" + strconv.Itoa(ji))
		if len(j.dominant) > 1 {
			j.s = m.col("s" + strconv.Itoa(ji))
			for _, k := range j.dominant {
				j.y = append(j.y, m.col("y"+strconv.Itoa(ji)+"_"+strconv.Itoa(k)))
			}
		}
		if cur := v.Current; cur != nil && !cur.Paused() {
			j.running = true
			m.running++
			j.r = m.col("r" + strconv.Itoa(ji))
			j.curP, j.curW = make([]int, len(req.Nodes)), make([]int, len(req.Nodes))
			for _, nt := range cur.Nodes {
				i, ok := c.NodeIndex(nt.NodeID)
				if !ok {
					j.gone += nt.PS + nt.Workers
					continue
				}
				// A node may hold several entries, at different task sizes.
				j.curP[i] += nt.PS
				j.curW[i] += nt.Workers
			}
		}
		j.p, j.w = make([]int, len(req.Nodes)), make([]int, len(req.Nodes))
		for i := range req.Nodes {
			j.p[i], j.w[i] = -1, -1
			if j.maxP > 0 && c.Feasible(i, j.tasks.PS) && c.Fits(i, j.tasks.PS, 1) {
				j.p[i] = m.col("p" + strconv.Itoa(ji) + "_" + strconv.Itoa(i))
			}
			if j.maxW > 0 && c.Feasible(i, j.tasks.Worker) && c.Fits(i, j.tasks.Worker, 1) {
				j.w[i] = m.col("x" + strconv.Itoa(ji) + "_" + strconv.Itoa(i))
			}
		}
		m.jobs = append(m.jobs, j)
	}

	mtypes := float64(len(m.types))
	m.lossBound = max(0, math.Ceil(theta1*2*mtypes-1e-9))
	m.adjustBound = int(math.Ceil(theta2*float64(m.running) - 1e-9))

	// Objective (eq. 10), every column once, in column order.
	lp := &m.lp
	lp.WriteString("\\ Dorm P2 (SMARTCOMP'17 eqs. 10-18), generated by Caravan\nMaximize\n obj:")
	obj := make([]float64, len(m.cols))
	obj[m.excess] = -excessPenalty
	for _, j := range m.jobs {
		obj[j.l] = -lossPenalty
		if j.r >= 0 {
			obj[j.r] = -adjustPenalty
		}
		for i := range m.nodes {
			if j.p[i] >= 0 {
				obj[j.p[i]] = util(j.tasks.PS)
			}
			if j.w[i] >= 0 {
				obj[j.w[i]] = util(j.tasks.Worker)
			}
		}
	}
	e := m.expr()
	for k, v := range obj {
		e.term(v, k)
	}
	e.end()
	lp.WriteString("Subject To\n")

	// Eq. 6: node capacities.
	for i := range m.nodes {
		for _, k := range m.types {
			e := m.row(fmt.Sprintf("cap_%d_%s", i, sanitize(k)))
			for _, j := range m.jobs {
				if j.p[i] >= 0 {
					e.term(demand(j.tasks.PS, k), j.p[i])
				}
				if j.w[i] >= 0 {
					e.term(demand(j.tasks.Worker, k), j.w[i])
				}
			}
			e.cmp("<=", nodeCapacity(c, i, k))
		}
	}
	for ji, j := range m.jobs {
		// Eqs. 7-8 with the admission variable z.
		bounds := func(name string, cols []int, lo, hi int) {
			e := m.row(fmt.Sprintf("%smin%d", name, ji))
			for _, k := range cols {
				if k >= 0 {
					e.term(1, k)
				}
			}
			e.term(-float64(lo), j.z)
			e.cmp(">=", 0)
			e = m.row(fmt.Sprintf("%smax%d", name, ji))
			for _, k := range cols {
				if k >= 0 {
					e.term(1, k)
				}
			}
			e.term(-float64(hi), j.z)
			e.cmp("<=", 0)
		}
		bounds("w", j.w, j.minW, j.maxW)
		if j.maxP > 0 {
			bounds("p", j.p, j.minP, j.maxP)
		}
		// Eqs. 11-12: l ≥ |s − ŝ|, s the job's dominant share (eq. 2).
		m.fairnessRows(ji, j)
		// Eqs. 13-14.
		if !j.running {
			continue
		}
		bigM := float64(max(j.maxW, j.maxP, 1))
		for i := range m.nodes {
			bigM = max(bigM, float64(j.curW[i]), float64(j.curP[i]))
		}
		if j.gone > 0 {
			e := m.row(fmt.Sprintf("gone%d", ji))
			e.term(1, j.r)
			e.cmp(">=", 1)
		}
		adjust := func(name string, cols, cur []int) {
			for i := range m.nodes {
				if cols[i] < 0 {
					if cur[i] > 0 {
						e := m.row(fmt.Sprintf("%s%d_%d", name, ji, i))
						e.term(1, j.r)
						e.cmp(">=", 1)
					}
					continue
				}
				e := m.row(fmt.Sprintf("%sdn%d_%d", name, ji, i))
				e.term(bigM, j.r)
				e.term(1, cols[i])
				e.cmp(">=", float64(cur[i]))
				e = m.row(fmt.Sprintf("%sup%d_%d", name, ji, i))
				e.term(bigM, j.r)
				e.term(-1, cols[i])
				e.cmp(">=", -float64(cur[i]))
			}
		}
		adjust("aw", j.w, j.curW)
		if j.maxP > 0 {
			adjust("ap", j.p, j.curP)
		}
	}
	// Eq. 15, elastic: Σ l − excess ≤ bound.
	e = m.row("fairness")
	for _, j := range m.jobs {
		e.term(1, j.l)
	}
	e.term(-1, m.excess)
	e.cmp("<=", m.lossBound)
	// Eq. 16.
	if m.running > 0 {
		e := m.row("adjust")
		for _, j := range m.jobs {
			if j.r >= 0 {
				e.term(1, j.r)
			}
		}
		e.cmp("<=", float64(m.adjustBound))
	}

	// Bounds, integers (eq. 9), binaries (eq. 18 and z).
	lp.WriteString("Bounds\n")
	fmt.Fprintf(lp, " %s >= 0\n", m.cols[m.excess])
	var generals, binaries []string
	for _, j := range m.jobs {
		fmt.Fprintf(lp, " %s >= 0\n", m.cols[j.l])
		binaries = append(binaries, m.cols[j.z])
		for _, y := range j.y {
			binaries = append(binaries, m.cols[y])
		}
		if j.s >= 0 {
			fmt.Fprintf(lp, " 0 <= %s <= 1\n", m.cols[j.s])
		}
		if j.r >= 0 {
			binaries = append(binaries, m.cols[j.r])
		}
		for i := range m.nodes {
			for _, k := range []struct {
				col   int
				t     *planner.Task
				bound int
			}{{j.p[i], j.tasks.PS, j.maxP}, {j.w[i], j.tasks.Worker, j.maxW}} {
				if k.col < 0 {
					continue
				}
				ub := k.bound
				if k.t.DistinctHosts {
					ub = 1
				}
				fmt.Fprintf(lp, " 0 <= %s <= %d\n", m.cols[k.col], ub)
				generals = append(generals, m.cols[k.col])
			}
		}
	}
	writeList(lp, "Generals", generals)
	writeList(lp, "Binaries", binaries)
	lp.WriteString("End\n")
	return m
}

func writeList(b *strings.Builder, head string, names []string) {
	if len(names) == 0 {
		return
	}
	b.WriteString(head + "\n")
	for k, n := range names {
		b.WriteString(" " + n)
		if k%16 == 15 {
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// expr writes one linear expression of the LP file, a few terms a line.
type expr struct {
	m     *model
	n     int
	empty bool
}

func (m *model) expr() *expr { return &expr{m: m, empty: true} }

func (m *model) row(name string) *expr {
	m.lp.WriteString(" " + name + ":")
	return m.expr()
}

func (e *expr) term(coef float64, col int) {
	b := &e.m.lp
	if e.n > 0 && e.n%8 == 0 {
		b.WriteString("\n  ")
	}
	sign := "+"
	if coef < 0 {
		sign, coef = "-", -coef
	}
	b.WriteString(" " + sign + " " + strconv.FormatFloat(coef, 'g', 15, 64) + " " + e.m.cols[col])
	e.n++
	e.empty = false
}

// end finishes the objective.
func (e *expr) end() {
	e.m.lp.WriteString("\n")
}

// cmp finishes a constraint with its sense and right-hand side. A row
// without terms gets a zero term of the first column.
func (e *expr) cmp(sense string, rhs float64) {
	b := &e.m.lp
	if e.empty {
		b.WriteString(" 0 " + e.m.cols[0])
	}
	b.WriteString(" " + sense + " " + strconv.FormatFloat(rhs, 'g', 15, 64) + "\n")
}

// candidates returns the resource types that may be a job's dominant one:
// those whose share no other type's share is at least for both its roles
// (the first of equals kept). A job whose roles share one dominant type
// has one candidate, and its dominant share is linear in its tasks.
func candidates(shareP, shareW []float64, types int) []int {
	var out []int
	for k := range types {
		dominated := false
		for o := range types {
			if o == k {
				continue
			}
			geP, geW := at(shareP, o) >= at(shareP, k), at(shareW, o) >= at(shareW, k)
			eq := at(shareP, o) == at(shareP, k) && at(shareW, o) == at(shareW, k)
			if geP && geW && (!eq || o < k) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, k)
		}
	}
	return out
}

// share writes a_k, the job's share of resource type k, into e with sign.
func (m *model) share(e *expr, j *job, k int, sign float64) {
	for i := range m.nodes {
		if j.p[i] >= 0 && at(j.shareP, k) != 0 {
			e.term(sign*at(j.shareP, k), j.p[i])
		}
		if j.w[i] >= 0 && at(j.shareW, k) != 0 {
			e.term(sign*at(j.shareW, k), j.w[i])
		}
	}
}

// fairnessRows writes eqs. 11 and 12 for job j. With one candidate type k
// the dominant share s is a_k, linear. With several, s = max_k a_k is
// linearised with binaries y_k: s ≥ a_k for every k, s ≤ a_k + (1 − y_k)
// (shares are at most 1), Σ y_k = 1.
func (m *model) fairnessRows(ji int, j *job) {
	// sTerm writes sign·s.
	sTerm := func(e *expr, sign float64) { m.share(e, j, j.dominant[0], sign) }
	if j.s >= 0 {
		sTerm = func(e *expr, sign float64) { e.term(sign, j.s) }
		for n, k := range j.dominant {
			e := m.row(fmt.Sprintf("smax%d_%d", ji, k))
			e.term(1, j.s)
			m.share(e, j, k, -1)
			e.cmp(">=", 0)
			e = m.row(fmt.Sprintf("sarg%d_%d", ji, k))
			e.term(1, j.s)
			m.share(e, j, k, -1)
			e.term(1, j.y[n])
			e.cmp("<=", 1)
		}
		e := m.row(fmt.Sprintf("sone%d", ji))
		for _, y := range j.y {
			e.term(1, y)
		}
		e.cmp("=", 1)
	}
	// l − s ≥ −ŝ and l + s ≥ ŝ.
	e := m.row(fmt.Sprintf("lhi%d", ji))
	e.term(1, j.l)
	sTerm(e, -1)
	e.cmp(">=", -j.fair)
	e = m.row(fmt.Sprintf("llo%d", ji))
	e.term(1, j.l)
	sTerm(e, 1)
	e.cmp(">=", j.fair)
}
