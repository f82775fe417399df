package simulate

import (
	"cmp"
	"math"
	"slices"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/structs"
	"gonum.org/v1/gonum/stat"
)

// AllTenants is the Queue of the TenantOutcome that sums every tenant.
const AllTenants = "all"

// TenantOutcome is what one tenant, the jobs of one queue, got in a run
// (issue 32). Times are seconds, GPU time GPU-seconds.
type TenantOutcome struct {
	// Queue is the queue the tenant's jobs belong to (structs.QueueFor of
	// their namespace), or AllTenants.
	Queue string
	// Nominal is the queue's nominal GPUs, its GPU quotas' summed; for
	// AllTenants every queue's.
	Nominal int
	// Jobs counts the tenant's jobs; AvgJCT and P99JCT (nearest rank) are
	// over those that finished, from their arrival.
	Jobs           int
	AvgJCT, P99JCT float64
	// HeldGPUS is the GPU time the tenant's jobs held.
	HeldGPUS float64
	// ViolationGPUS is the tenant's guarantee violations: the GPU time by
	// which it held less than its nominal while it had pending demand,
	// ∫ max(0, min(unmet(t), Nominal − held(t))) dt, where held(t) is
	// what the tenant's jobs hold and unmet(t) sums, over its pending
	// jobs, what each lacks of its minimum (sim.JobResult.MinGPUs − what
	// it holds). A job is pending from its arrival to its finish (to the
	// end of the run if it never finishes) while it holds less than its
	// minimum: not running at all, or below it. LongestViolationS is the
	// longest interval in which that integrand stays above 0. For
	// AllTenants, the sum of the tenants' and the longest of theirs.
	ViolationGPUS     float64
	LongestViolationS float64
}

// Tenants measures each queue's tenant in a run from its jobs and their
// allocation timeline (Result.Jobs, Result.Allocs), against the nominal
// quotas of queues, which need not be the queues the run had: a run
// without queues is measured against the quotas the others promise. The
// outcomes are in the order of queues, then structs.DefaultQueue if a job
// maps to it, then AllTenants. Times are taken to the microsecond, as
// the fairness measures do, so that the virtual clock's nanosecond
// rounding does not split one instant. The run ends at its last arrival,
// finish or change of allocation. It is deterministic and reads its
// arguments only.
func Tenants(jobs []sim.JobResult, allocs []sim.AllocChange, queues []*structs.Queue) []TenantOutcome {
	order := make([]string, 0, len(queues)+1)
	nominal := map[string]int{}
	for _, q := range queues {
		order = append(order, q.Name)
		for _, g := range q.Quota.GPU {
			if g != nil {
				nominal[q.Name] += g.Nominal
			}
		}
	}
	queueOf := make(map[string]string, len(jobs)) // job ID → queue
	byQueue := map[string][]int{}
	end := 0.0
	for i, j := range jobs {
		q := structs.QueueFor(queues, j.Namespace)
		queueOf[j.JobID] = q
		byQueue[q] = append(byQueue[q], i)
		end = max(end, micro(j.Arrival), micro(j.Finish))
	}
	if _, ok := nominal[structs.DefaultQueue]; !ok && len(byQueue[structs.DefaultQueue]) > 0 {
		order = append(order, structs.DefaultQueue)
	}
	for _, a := range allocs {
		end = max(end, micro(a.Time))
	}
	all := TenantOutcome{Queue: AllTenants}
	var allJCTs []float64
	out := make([]TenantOutcome, 0, len(order)+1)
	for _, q := range order {
		o := TenantOutcome{Queue: q, Nominal: nominal[q]}
		var jcts []float64
		for _, i := range byQueue[q] {
			o.Jobs++
			if j := jobs[i]; j.Finish >= 0 {
				jcts = append(jcts, j.Finish-j.Arrival)
			}
		}
		o.AvgJCT, o.P99JCT = meanP99(jcts)
		o.HeldGPUS, o.ViolationGPUS, o.LongestViolationS = violations(jobs, byQueue[q], allocs, queueOf, q, o.Nominal, end)
		out = append(out, o)
		allJCTs = append(allJCTs, jcts...)
		all.Nominal += o.Nominal
		all.Jobs += o.Jobs
		all.HeldGPUS += o.HeldGPUS
		all.ViolationGPUS += o.ViolationGPUS
		all.LongestViolationS = max(all.LongestViolationS, o.LongestViolationS)
	}
	all.AvgJCT, all.P99JCT = meanP99(allJCTs)
	return append(out, all)
}

// micro rounds a time to the microsecond; a negative one (a job that
// never finished) stays as it is.
func micro(t float64) float64 {
	if t < 0 {
		return t
	}
	return math.Round(t*1e6) / 1e6
}

func meanP99(v []float64) (mean, p99 float64) {
	if len(v) == 0 {
		return 0, 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return stat.Mean(v, nil), stat.Quantile(0.99, stat.Empirical, v, nil)
}

// tenantEvent is a change of one job of a tenant at a time: it arrives,
// finishes, or holds gpus from then on.
type tenantEvent struct {
	at   float64
	job  int // index into the tenant's jobs
	kind int // eventArrive, eventFinish or eventHold
	gpus int
}

const (
	eventArrive = iota
	eventHold
	eventFinish
)

// violations sweeps one tenant's timeline up to end and returns the GPU
// time it held, its violation GPU time and its longest violation (see
// TenantOutcome).
func violations(jobs []sim.JobResult, mine []int, allocs []sim.AllocChange, queueOf map[string]string, queue string, nominal int, end float64) (held, viol, longest float64) {
	local := make(map[string]int, len(mine)) // job ID → index into mine
	var events []tenantEvent
	for k, i := range mine {
		j := jobs[i]
		local[j.JobID] = k
		events = append(events, tenantEvent{at: micro(j.Arrival), job: k, kind: eventArrive})
		if j.Finish >= 0 {
			events = append(events, tenantEvent{at: micro(j.Finish), job: k, kind: eventFinish})
		}
	}
	for _, a := range allocs {
		if queueOf[a.JobID] != queue {
			continue
		}
		if k, ok := local[a.JobID]; ok {
			events = append(events, tenantEvent{at: micro(a.Time), job: k, kind: eventHold, gpus: a.GPUs})
		}
	}
	// Stable: the changes of one job at one instant keep their order, the
	// last one standing.
	slices.SortStableFunc(events, func(a, b tenantEvent) int { return cmp.Compare(a.at, b.at) })
	holds := make([]int, len(mine))
	active := make([]bool, len(mine))
	total := 0
	from := -1.0 // start of the current violation, -1 when none
	for e := 0; e < len(events); {
		t := events[e].at
		for ; e < len(events) && events[e].at == t; e++ {
			ev := events[e]
			switch ev.kind {
			case eventArrive:
				active[ev.job] = true
			case eventFinish:
				active[ev.job] = false
			case eventHold:
				total += ev.gpus - holds[ev.job]
				holds[ev.job] = ev.gpus
			}
		}
		next := end
		if e < len(events) {
			next = events[e].at
		}
		unmet := 0
		for k, i := range mine {
			if active[k] && holds[k] < jobs[i].MinGPUs {
				unmet += jobs[i].MinGPUs - holds[k]
			}
		}
		short := min(unmet, nominal-total)
		dt := max(next-t, 0)
		held += float64(total) * dt
		switch {
		case short > 0:
			viol += float64(short) * dt
			if from < 0 {
				from = t
			}
			longest = max(longest, next-from)
		default:
			from = -1
		}
	}
	return held, viol, longest
}
