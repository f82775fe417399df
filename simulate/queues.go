package simulate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/structs"
)

// TenantCohort is the cohort of the queues TenantQueues gives with
// borrowing.
const TenantCohort = "tenants"

// QueueVariants are the queue set-ups TenantQueues builds for a workload
// of tenants (sim.Workload.Tenants), by name, from one queue per tenant
// (its name and only namespace the tenant's namespace) with its nominal
// GPUs (TenantNominals) of any GPU type:
//
//   - "none": no queues; every tenant shares the cluster freely;
//   - "static": each queue has no cohort, borrowing_limit 0 and
//     lending_limit 0: a tenant uses only its quota (Philly's own virtual
//     clusters);
//   - "queues": every queue in TenantCohort, with no limits: a tenant
//     borrows what others leave idle and reclaims its quota by shrinking
//     the borrowers (planner/queue).
//
// Each is given freshly built queues, which it may modify and return.
var QueueVariants = map[string]func(base []*structs.Queue) []*structs.Queue{
	"none": func([]*structs.Queue) []*structs.Queue { return nil },
	"static": func(base []*structs.Queue) []*structs.Queue {
		for _, q := range base {
			q.Quota.GPU[0].BorrowingLimit, q.Quota.GPU[0].LendingLimit = new(0), new(0)
		}
		return base
	},
	"queues": func(base []*structs.Queue) []*structs.Queue {
		for _, q := range base {
			q.Cohort = TenantCohort
		}
		return base
	},
}

// TenantQueues returns the queues of variant (QueueVariants) for wl's
// tenants on a cluster of gpus GPUs, canonicalized and valid, in the
// order of wl.Tenants. The same workload, GPUs and variant give the same
// queues.
func TenantQueues(wl *sim.Workload, gpus int, variant string) ([]*structs.Queue, error) {
	build, ok := QueueVariants[variant]
	if !ok {
		return nil, fmt.Errorf("unknown queue variant %q; the variants are %s", variant, strings.Join(slices.Sorted(maps.Keys(QueueVariants)), ", "))
	}
	nominals, err := TenantNominals(wl, gpus)
	if err != nil {
		return nil, err
	}
	base := make([]*structs.Queue, len(wl.Tenants))
	for i, t := range wl.Tenants {
		base[i] = &structs.Queue{
			Name: t.Namespace, Namespaces: []string{t.Namespace},
			Quota: structs.QueueQuota{GPU: []*structs.GPUQuota{{Type: "*", Nominal: nominals[i]}}},
		}
	}
	queues := build(base)
	for _, q := range queues {
		q.Canonicalize()
		if err := q.Validate(); err != nil {
			return nil, fmt.Errorf("queue %q: %w", q.Name, err)
		}
	}
	return queues, nil
}

// TenantNominals splits gpus GPUs over wl's tenants in proportion to
// their GPU time (sim.Tenant.GPUSeconds), in the order of wl.Tenants,
// summing to gpus: each gets at least its floor, the GPUs its widest job
// needs to start under any policy (its elastic minimum, its fixed
// request, or its adaptive minimum, times a task's GPUs), so that no job
// waits forever under static partitioning; a tenant whose proportional
// share is below its floor gets the floor, and the others share the rest
// in proportion, again; fractions are rounded by largest remainder, ties
// (within 1e-9) to the tenant listed first.
func TenantNominals(wl *sim.Workload, gpus int) ([]int, error) {
	n := len(wl.Tenants)
	if n == 0 {
		return nil, fmt.Errorf("workload %s has no tenants", wl.Name)
	}
	index := map[string]int{}
	for i, t := range wl.Tenants {
		index[t.Namespace] = i
	}
	floor := make([]int, n)
	for i := range wl.Arrivals {
		a := &wl.Arrivals[i]
		t, ok := index[a.Job.Namespace]
		if !ok {
			continue
		}
		worker, _ := sim.TaskResources(a.Job)
		need := max(a.Job.Elastic.Workers.Min, a.RequestWorkers)
		if a.Adaptive != nil {
			need = max(need, a.Adaptive.Elastic.Workers.Min)
		}
		floor[t] = max(floor[t], need*worker.GPUs)
	}
	fixed := make([]bool, n)
	out := make([]int, n)
	for {
		left, weight := gpus, 0.0
		for i, t := range wl.Tenants {
			if fixed[i] {
				left -= floor[i]
			} else {
				weight += t.GPUSeconds
			}
		}
		if left < 0 {
			return nil, fmt.Errorf("workload %s: its tenants' widest jobs need %d GPUs, more than the %d of the cluster", wl.Name, sumInts(floor), gpus)
		}
		changed := false
		share := make([]float64, n)
		for i, t := range wl.Tenants {
			if fixed[i] {
				continue
			}
			if weight > 0 {
				share[i] = float64(left) * t.GPUSeconds / weight
			}
			if share[i] < float64(floor[i]) {
				fixed[i], changed = true, true
			}
		}
		if changed {
			continue
		}
		// Largest remainder over the tenants not at their floor.
		rest := left
		var order []int
		for i := range n {
			if fixed[i] {
				out[i] = floor[i]
				continue
			}
			out[i] = int(math.Floor(share[i]))
			rest -= out[i]
			order = append(order, i)
		}
		// Remainders within 1e-9 of each other tie: floating-point
		// rounding does not pick the winner.
		frac := func(i int) float64 { return math.Round((share[i]-math.Floor(share[i]))*1e9) / 1e9 }
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(frac(b), frac(a)) })
		if len(order) == 0 {
			// Every tenant at its floor: the first, the largest, takes
			// what is left.
			out[0] += rest
			return out, nil
		}
		for k := 0; rest > 0; k++ {
			out[order[k%len(order)]]++
			rest--
		}
		return out, nil
	}
}

func sumInts(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}

// applyQueues stores the run's queues in its server, before any job is
// submitted, as `caravan queue apply` does.
func applyQueues(client *api.Client, qs []*structs.Queue) error {
	if len(qs) == 0 {
		return nil
	}
	var out []*api.Queue
	b, err := json.Marshal(qs)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		return fmt.Errorf("encode queues: %w", err)
	}
	if _, _, err := client.Queues().Upsert(out, nil); err != nil {
		return fmt.Errorf("apply queues: %w", err)
	}
	return nil
}
