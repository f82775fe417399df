package placement

import (
	"cmp"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/internal/pq"
	"github.com/caravan-sched/caravan/structs"
)

// Placer places jobs on a cluster, taking their capacity as it goes. It
// keeps the nodes in a max-heap keyed by availability (free CPU, memory and
// devices, each relative to the largest node), so a job's placement costs
// O(k log n) heap operations for k nodes, not a sort of all nodes.
// A Placer is not safe for concurrent use.
type Placer struct {
	c      *planner.Cluster
	heap   pq.Heap[heapItem]
	maxCPU float64
	maxMem float64
	maxDev float64
	// scratch slices reused across Place calls
	popped, feasible []int
	ps, workers      []int
}

// New returns a Placer over c's current free capacity. Placements made
// through the Placer take capacity from c.
func New(c *planner.Cluster) *Placer {
	p := &Placer{c: c}
	for i := range c.Nodes {
		cpu, mem, dev := c.Free(i)
		p.maxCPU = max(p.maxCPU, float64(cpu))
		p.maxMem = max(p.maxMem, float64(mem))
		p.maxDev = max(p.maxDev, float64(dev))
	}
	// A max-heap by score; ties go to the lower node index so that
	// placements are deterministic.
	p.heap.Less = func(x, y heapItem) bool { return x.score > y.score || x.score == y.score && x.node < y.node }
	p.heap.Items = make([]heapItem, 0, len(c.Nodes))
	for i := range c.Nodes {
		p.heap.Items = append(p.heap.Items, heapItem{node: i, score: p.score(i)})
	}
	p.heap.Init()
	return p
}

func (p *Placer) score(i int) float64 {
	cpu, mem, dev := p.c.Free(i)
	s := 0.0
	if p.maxCPU > 0 {
		s += float64(cpu) / p.maxCPU
	}
	if p.maxMem > 0 {
		s += float64(mem) / p.maxMem
	}
	if p.maxDev > 0 {
		s += float64(dev) / p.maxDev
	}
	return s
}

// Place puts nPS tasks ps and nW tasks w of one job on the fewest nodes, among
// the most available ones, that hold them spread evenly: with k nodes, each
// gets ⌊n/k⌋ or ⌈n/k⌉ of each role, the extra workers going to the nodes
// without an extra parameter server. It tries k = 1, 2, … and takes the
// first that fits. On success it takes the capacity and returns the
// per-node counts sorted by node ID; otherwise it changes nothing and
// returns false. ps may be nil when nPS is 0.
func (p *Placer) Place(ps *planner.Task, nPS int, w *planner.Task, nW int) ([]*structs.NodeTasks, bool) {
	total := nPS + nW
	if total == 0 {
		return nil, true
	}
	cpu, mem := w.CPU*nW, w.MemoryMB*nW
	if nPS > 0 {
		cpu, mem = cpu+ps.CPU*nPS, mem+ps.MemoryMB*nPS
	}
	if freeCPU, freeMem := p.c.FreeTotal(); cpu > freeCPU || mem > freeMem {
		return nil, false // the whole cluster has less room than the job needs
	}
	for typ, count := range w.DeviceCounts {
		need := nW * count
		if nPS > 0 {
			need += nPS * ps.DeviceCounts[typ]
		}
		if need > p.c.FreeDeviceTotal(typ) {
			return nil, false
		}
	}
	nodes, ok := p.even(ps, nPS, w, nW)
	p.pushBack()
	if ok {
		return nodes, true
	}
	return p.firstFit(ps, nPS, w, nW)
}

// even tries the even spreads over the top k = 1, 2, … feasible nodes. The
// nodes it pops stay in p.popped for the caller to push back.
func (p *Placer) even(ps *planner.Task, nPS int, w *planner.Task, nW int) ([]*structs.NodeTasks, bool) {
	p.popped, p.feasible = p.popped[:0], p.feasible[:0]
	for k := 1; k <= nPS+nW; k++ {
		for len(p.feasible) < k {
			if p.heap.Len() == 0 {
				return nil, false
			}
			i := p.heap.Pop().node
			p.popped = append(p.popped, i)
			if (nPS == 0 || p.c.Feasible(i, ps)) && (nW == 0 || p.c.Feasible(i, w)) {
				p.feasible = append(p.feasible, i)
			}
		}
		if p.spread(p.feasible[:k], ps, nPS, w, nW) {
			return p.take(ps, w), true
		}
	}
	return nil, false
}

// firstFit is Place's fallback when no even spread fits: each task, parameter
// servers first, goes to the first node in node order with room for it, so
// that a job is placed whenever tasks fit one by one, unevenly. It depends
// only on the free capacity, never on the heap's order. It costs O(nodes)
// per task, and runs only for jobs the even spreads could not place.
func (p *Placer) firstFit(ps *planner.Task, nPS int, w *planner.Task, nW int) ([]*structs.NodeTasks, bool) {
	counts := map[int]*structs.NodeTasks{}
	var order []int
	next := 0
	place := func(t *planner.Task, n int, isPS bool) bool {
		for range n {
			placed := false
			for i := next; i < len(p.c.Nodes); i++ {
				nt := counts[i]
				cps, cw := 0, 0
				if nt != nil {
					cps, cw = nt.PS, nt.Workers
				}
				if isPS {
					cps++
				} else {
					cw++
				}
				if cps > 1 && ps.DistinctHosts || cw > 1 && w.DistinctHosts || !p.c.FitsPair(i, ps, cps, w, cw) {
					continue
				}
				if nt == nil {
					nt = &structs.NodeTasks{NodeID: p.c.Nodes[i].ID}
					counts[i] = nt
					order = append(order, i)
				}
				nt.PS, nt.Workers = cps, cw
				placed = true
				break
			}
			if !placed {
				return false
			}
		}
		return true
	}
	if !place(ps, nPS, true) || !place(w, nW, false) {
		return nil, false
	}
	out := make([]*structs.NodeTasks, 0, len(order))
	for _, i := range order {
		nt := counts[i]
		if nt.PS > 0 {
			p.c.Take(i, ps, nt.PS)
		}
		if nt.Workers > 0 {
			p.c.Take(i, w, nt.Workers)
		}
		p.reheap(i)
		out = append(out, nt)
	}
	slices.SortFunc(out, func(a, b *structs.NodeTasks) int { return cmp.Compare(a.NodeID, b.NodeID) })
	return out, true
}

// reheap restores node i's heap position after its capacity changed outside
// a pop.
func (p *Placer) reheap(i int) {
	for k, it := range p.heap.Items {
		if it.node == i {
			p.heap.Items[k].score = p.score(i)
			p.heap.Init()
			return
		}
	}
}

// spread computes the even split over nodes into p.ps and p.workers and
// reports whether every node can hold its share.
func (p *Placer) spread(nodes []int, ps *planner.Task, nPS int, w *planner.Task, nW int) bool {
	k := len(nodes)
	p.ps, p.workers = p.ps[:0], p.workers[:0]
	extraPS, extraW := nPS%k, nW%k
	for j, i := range nodes {
		sp := nPS / k
		if j < extraPS {
			sp++
		}
		sw := nW / k
		if pos := (j - extraPS + k) % k; pos < extraW {
			sw++
		}
		if sp > 1 && ps.DistinctHosts || sw > 1 && w.DistinctHosts || !p.c.FitsPair(i, ps, sp, w, sw) {
			return false
		}
		p.ps, p.workers = append(p.ps, sp), append(p.workers, sw)
	}
	return true
}

// take commits the last successful spread.
func (p *Placer) take(ps, w *planner.Task) []*structs.NodeTasks {
	out := make([]*structs.NodeTasks, 0, len(p.ps))
	for j := range p.ps {
		i := p.feasible[j]
		if p.ps[j] > 0 {
			p.c.Take(i, ps, p.ps[j])
		}
		if p.workers[j] > 0 {
			p.c.Take(i, w, p.workers[j])
		}
		if p.ps[j]+p.workers[j] > 0 {
			out = append(out, &structs.NodeTasks{NodeID: p.c.Nodes[i].ID, PS: p.ps[j], Workers: p.workers[j]})
		}
	}
	slices.SortFunc(out, func(a, b *structs.NodeTasks) int { return cmp.Compare(a.NodeID, b.NodeID) })
	return out
}

func (p *Placer) pushBack() {
	for _, i := range p.popped {
		p.heap.Push(heapItem{node: i, score: p.score(i)})
	}
	p.popped = p.popped[:0]
}

type heapItem struct {
	node  int
	score float64
}
