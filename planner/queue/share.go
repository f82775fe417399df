package queue

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"sort"

	"github.com/caravan-sched/caravan/structs"
)

// Resources Apply enforces besides the GPU types: CPU and memory, each one
// untyped resource.
const (
	dimCPU    = "cpu"
	dimMemory = "memory"
)

// unlimited is the entitlement of a queue in a resource it does not limit.
const unlimited = math.MaxInt / 4

// dim is one resource Apply shares: the GPUs of one type (as nodes report
// it, Node.GPUType), or CPU (MHz) or memory (MB).
type dim struct {
	name string
	gpu  bool
	// capacity is what the cluster has of it: free in the request plus
	// what held placements take.
	capacity int
}

// share is a queue's standing in one resource.
type share struct {
	// enforced is false for CPU or memory when the queue does not limit
	// it; GPUs are always enforced (a type no quota names has nominal 0).
	enforced bool
	nominal  int
	// entry is the index of the queue's GPU quota that counts this type,
	// -1 when none does (or for CPU and memory).
	entry int
	// label names the resource in reasons: the quota's type, else the
	// node's.
	label string
	// demand is what the queue's jobs would use at their maximum; usage
	// what they use, held placements included, as Apply trims and fills.
	demand, usage int
	// guaranteed = min(demand, nominal); lent is what the queue offers
	// its cohort; borrowed what it may take beyond its nominal.
	guaranteed, lent, borrowed, entitled int
	// capped is set when the queue's borrowing limit stopped it short of
	// its demand.
	capped bool
	// freed is what Apply trimmed of the queue's usage.
	freed int
}

// over reports whether the queue uses more than it is entitled to.
func (s *share) over() bool { return s.enforced && s.usage > s.entitled }

// headroom is what the queue may still use.
func (s *share) headroom() int {
	if !s.enforced {
		return unlimited
	}
	return s.entitled - s.usage
}

// queueState is one queue with its share of each resource, indexed like
// the dims.
type queueState struct {
	name   string
	cohort string
	weight float64
	quota  *structs.QueueQuota
	shares []share
	// jobs are the indexes of the queue's jobs in Apply's job list.
	jobs []int
	// started is set when fill started one of the queue's jobs.
	started bool
}

// limits are what remains of a GPU quota's borrowing and lending limits
// (-1 for none), spent type by type when one quota counts several.
type limits struct{ borrow, lend int }

// nominals sets each queue's nominal quota per resource. A GPU quota
// that counts one type of the cluster gives that type its nominal. One
// that counts several ("*") is split over them in proportion to what of
// each type's capacity the one-type quotas of all queues leave (its
// spare; the capacity itself when none is spare): each type gets the
// floor of its exact share, and the units rounding leaves go one at a
// time to the largest fractions, ties by type name, first among the
// types whose nominals, summed over the queues, are still below their
// capacity, the queues taken in name order. So when the queues'
// nominals sum to at most the cluster's GPUs, the nominals on a type sum
// to at most its capacity: no queue's nominal is backed by GPUs another
// queue's nominal counts. The split ignores demand: a queue's nominal of
// a type none of its jobs can use is guaranteed to nobody, and lent.
func nominals(dims []dim, qs []*queueState) [][]limits {
	out := make([][]limits, len(qs))
	for qi, q := range qs {
		out[qi] = make([]limits, len(q.quota.GPU))
		for e, g := range q.quota.GPU {
			out[qi][e] = limits{borrow: -1, lend: -1}
			if g == nil {
				continue
			}
			if g.BorrowingLimit != nil {
				out[qi][e].borrow = *g.BorrowingLimit
			}
			if g.LendingLimit != nil {
				out[qi][e].lend = *g.LendingLimit
			}
		}
		for d := range dims {
			s := &q.shares[d]
			s.entry = -1
			switch {
			case dims[d].gpu:
				s.enforced, s.label = true, dims[d].name
				if g := q.quota.GPUQuotaFor(dims[d].name); g != nil {
					s.entry = slices.Index(q.quota.GPU, g)
					if g.Type != "*" {
						s.label = g.Type
					}
				}
			case dims[d].name == dimCPU:
				s.enforced, s.nominal, s.label = q.quota.CPU > 0, q.quota.CPU, "CPU"
			case dims[d].name == dimMemory:
				s.enforced, s.nominal, s.label = q.quota.MemoryMB > 0, q.quota.MemoryMB, "memory"
			}
		}
	}
	splitGPUNominals(dims, qs)
	return out
}

// split is a GPU quota of a queue that counts several types of the
// cluster, being divided over them.
type split struct {
	q       *queueState
	nominal int
	counted []int // dims, in name order
	// frac is what rounding down left of each counted type's exact
	// share, as a numerator over base.
	frac []int
	base int
}

// splitGPUNominals sets the GPU nominals of every queue by the rules of
// nominals.
func splitGPUNominals(dims []dim, qs []*queueState) {
	sum := make([]int, len(dims)) // nominals on each type so far
	var splits []*split
	for _, q := range qs {
		for e, g := range q.quota.GPU {
			if g == nil {
				continue
			}
			var counted []int
			for d := range dims {
				if dims[d].gpu && q.shares[d].entry == e {
					counted = append(counted, d)
				}
			}
			switch len(counted) {
			case 0:
			case 1:
				q.shares[counted[0]].nominal += g.Nominal
				sum[counted[0]] += g.Nominal
			default:
				splits = append(splits, &split{q: q, nominal: g.Nominal, counted: counted})
			}
		}
	}
	if len(splits) == 0 {
		return
	}
	spare := make([]int, len(dims))
	for d := range dims {
		spare[d] = max(dims[d].capacity-sum[d], 0)
	}
	for _, sp := range splits {
		weight := func(d int) int { return spare[d] }
		for _, d := range sp.counted {
			sp.base += spare[d]
		}
		if sp.base == 0 {
			weight = func(d int) int { return max(dims[d].capacity, 1) }
			for _, d := range sp.counted {
				sp.base += weight(d)
			}
		}
		sp.frac = make([]int, len(sp.counted))
		total := sp.nominal
		for k, d := range sp.counted {
			n, frac := mulDiv(total, weight(d), sp.base)
			sp.frac[k] = frac
			sp.q.shares[d].nominal += n
			sum[d] += n
			sp.nominal -= n
		}
	}
	// The units rounding left, queue by queue (splits are in queue name
	// order): the largest fraction among the types with room, else the
	// largest fraction; a type given a unit drops to the back.
	for _, sp := range splits {
		order := make([]int, len(sp.counted))
		for k := range order {
			order[k] = k
		}
		slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(sp.frac[y], sp.frac[x]) })
		for ; sp.nominal > 0; sp.nominal-- {
			pick := slices.IndexFunc(order, func(k int) bool { return sum[sp.counted[k]] < dims[sp.counted[k]].capacity })
			if pick < 0 {
				pick = 0
			}
			k := order[pick]
			d := sp.counted[k]
			sp.q.shares[d].nominal++
			sum[d]++
			order = append(slices.Delete(order, pick, pick+1), k)
		}
	}
}

// mulDiv returns a·b/c and its remainder, for 0 ≤ a, 0 ≤ b ≤ c, 0 < c,
// without overflowing a·b: quotas are bounded (structs.Queue.Validate)
// but their products with capacities need not fit in an int.
func mulDiv(a, b, c int) (q, r int) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	uq, ur := bits.Div64(hi, lo, uint64(c))
	return int(uq), int(ur)
}

// lendable returns what queue q offers its cohort of idle, the idle
// nominal of its share s: idle within what remains of its GPU quota's
// lending limit (lim are q's limits), which it spends; 0 for a queue
// outside any cohort, which lends to no one.
func lendable(q *queueState, s *share, lim []limits, idle int) int {
	if q.cohort == "" || idle <= 0 {
		return 0
	}
	if s.entry >= 0 {
		if l := &lim[s.entry]; l.lend >= 0 {
			idle = min(idle, l.lend)
			l.lend -= idle
		}
	}
	return idle
}

// entitle computes every queue's entitlement in resource d: its
// guaranteed share, min(demand, nominal), plus what it borrows by
// weighted water-filling, first from what the queues of its cohort lend
// (their idle nominal, within their lending limits), then from the
// capacity no queue's nominal covers, shared by all queues; each within
// its borrowing limit.
func entitle(d int, dm dim, qs []*queueState, lim [][]limits) {
	claimed := 0
	for qi, q := range qs {
		s := &q.shares[d]
		if !s.enforced {
			s.entitled = unlimited
			continue
		}
		claimed += s.nominal
		s.guaranteed = min(s.demand, s.nominal)
		s.lent = lendable(q, s, lim[qi], s.nominal-s.guaranteed)
	}
	wants := make([]int, len(qs))
	for qi, q := range qs {
		s := &q.shares[d]
		if !s.enforced || s.demand <= s.nominal {
			continue
		}
		wants[qi] = s.demand - s.nominal
		if s.entry >= 0 {
			if b := lim[qi][s.entry].borrow; b >= 0 && b < wants[qi] {
				wants[qi], s.capped = b, true
			}
		}
	}
	// First each cohort's own pool, cohorts in name order.
	var cohorts []string
	for _, q := range qs {
		if q.cohort != "" && !slices.Contains(cohorts, q.cohort) {
			cohorts = append(cohorts, q.cohort)
		}
	}
	slices.Sort(cohorts)
	for _, c := range cohorts {
		pool := 0
		var members []int
		for qi, q := range qs {
			if q.cohort == c && q.shares[d].enforced {
				pool += q.shares[d].lent
				members = append(members, qi)
			}
		}
		waterFill(qs, members, wants, d, pool)
	}
	// Then the unclaimed capacity, for every queue.
	all := make([]int, 0, len(qs))
	for qi, q := range qs {
		if q.shares[d].enforced {
			all = append(all, qi)
		}
	}
	waterFill(qs, all, wants, d, max(dm.capacity-claimed, 0))
	for qi, q := range qs {
		s := &q.shares[d]
		if !s.enforced {
			continue
		}
		s.entitled = s.guaranteed + s.borrowed
		if s.entry >= 0 && lim[qi][s.entry].borrow >= 0 {
			lim[qi][s.entry].borrow -= s.borrowed
		}
	}
}

// waterFill shares pool among the queues members by weight: each gets
// pool·weight/Σweight, none more than it wants, what one leaves going to
// the others. Shares are whole units; the units a split leaves over go one
// each to the queues with the largest fractions, ties by name. It adds
// each queue's share to its borrowed and takes it from wants.
func waterFill(qs []*queueState, members, wants []int, d, pool int) {
	var order []int
	for _, qi := range members {
		if wants[qi] > 0 {
			order = append(order, qi)
		}
	}
	if pool <= 0 || len(order) == 0 {
		return
	}
	ratio := func(qi int) float64 { return float64(wants[qi]) / qs[qi].weight }
	sort.SliceStable(order, func(a, b int) bool {
		ra, rb := ratio(order[a]), ratio(order[b])
		return ra < rb || ra == rb && qs[order[a]].name < qs[order[b]].name
	})
	weight := 0.0
	for _, qi := range order {
		weight += qs[qi].weight
	}
	give := func(qi, n int) {
		qs[qi].shares[d].borrowed += n
		wants[qi] -= n
		pool -= n
	}
	k := 0
	for ; k < len(order); k++ {
		qi := order[k]
		if float64(wants[qi]) > float64(pool)*qs[qi].weight/weight {
			break
		}
		weight -= qs[qi].weight
		give(qi, wants[qi])
	}
	if k == len(order) {
		return
	}
	// None of the rest is satisfied: each gets its fair fraction.
	rest := order[k:]
	frac := make([]float64, len(rest))
	total := pool
	for r, qi := range rest {
		exact := float64(total) * qs[qi].weight / weight
		n := min(int(exact), wants[qi])
		frac[r] = exact - float64(n)
		give(qi, n)
	}
	idx := make([]int, len(rest))
	for r := range idx {
		idx[r] = r
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(frac[b], frac[a]), cmp.Compare(qs[rest[a]].name, qs[rest[b]].name))
	})
	for pool > 0 {
		gave := false
		for _, r := range idx {
			if pool > 0 && wants[rest[r]] > 0 {
				give(rest[r], 1)
				gave = true
			}
		}
		if !gave {
			return
		}
	}
}
