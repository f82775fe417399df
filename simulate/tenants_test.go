package simulate

import (
	"testing"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

func tenantQueue(name string, nominal int) *structs.Queue {
	return &structs.Queue{Name: name, Namespaces: []string{"vc-" + name},
		Quota: structs.QueueQuota{GPU: []*structs.GPUQuota{{Type: "*", Nominal: nominal}}}}
}

// TestTenants measures hand-made timelines and checks exact values.
func TestTenants(t *testing.T) {
	queues := []*structs.Queue{tenantQueue("a", 4), tenantQueue("b", 4)}
	cases := []struct {
		name   string
		jobs   []sim.JobResult
		allocs []sim.AllocChange
		want   []TenantOutcome
	}{{
		// a's job waits 10 s for 2 GPUs while b borrows all 8; then it
		// runs on 2 and finishes at 110. b's job finishes at 200.
		name: "reclaim after a wait",
		jobs: []sim.JobResult{
			{Namespace: "vc-a", JobID: "a1", MinGPUs: 2, Arrival: 50, Start: 60, Finish: 110},
			{Namespace: "vc-b", JobID: "b1", MinGPUs: 1, Arrival: 0, Start: 0, Finish: 200},
		},
		allocs: []sim.AllocChange{
			{Time: 0, JobID: "b1", GPUs: 8},
			{Time: 60, JobID: "b1", GPUs: 6},
			{Time: 60, JobID: "a1", GPUs: 2},
			{Time: 110, JobID: "a1", GPUs: 0},
			{Time: 200, JobID: "b1", GPUs: 0},
		},
		want: []TenantOutcome{
			// unmet 2, nominal − held 4: 2 GPUs for 10 s.
			{Queue: "a", Nominal: 4, Jobs: 1, AvgJCT: 60, P99JCT: 60, HeldGPUS: 100, ViolationGPUS: 20, LongestViolationS: 10},
			{Queue: "b", Nominal: 4, Jobs: 1, AvgJCT: 200, P99JCT: 200, HeldGPUS: 60*8 + 140*6},
			{Queue: AllTenants, Nominal: 8, Jobs: 2, AvgJCT: 130, P99JCT: 200, HeldGPUS: 100 + 60*8 + 140*6, ViolationGPUS: 20, LongestViolationS: 10},
		},
	}, {
		// a holds 3 of its 4 and has a second job waiting for 4: the
		// shortfall is nominal − held = 1, not the job's 4; the violation
		// is two intervals (10 s, then 30 s after a 5 s break where a
		// third job ran on the missing GPU), the longest 30 s. A job that
		// never finishes stays pending to the run's end (b's, at 100):
		// b holds 0 of its 4 from 80, the job's minimum 6 > 4.
		name: "shortfall capped by nominal, split intervals, unfinished",
		jobs: []sim.JobResult{
			{Namespace: "vc-a", JobID: "a1", MinGPUs: 3, Arrival: 0, Start: 0, Finish: 60},
			{Namespace: "vc-a", JobID: "a2", MinGPUs: 4, Arrival: 0, Start: 45, Finish: 70},
			{Namespace: "vc-a", JobID: "a3", MinGPUs: 1, Arrival: 10, Start: 10, Finish: 15},
			{Namespace: "vc-b", JobID: "b1", MinGPUs: 6, Arrival: 80, Start: -1, Finish: -1},
		},
		allocs: []sim.AllocChange{
			{Time: 0, JobID: "a1", GPUs: 3},
			{Time: 10, JobID: "a3", GPUs: 1},
			{Time: 15, JobID: "a3", GPUs: 0},
			{Time: 45, JobID: "a2", GPUs: 4},
			{Time: 45.0000000004, JobID: "a1", GPUs: 0}, // the same microsecond
			{Time: 70, JobID: "a2", GPUs: 0},
			{Time: 100, JobID: "a1", GPUs: 0},
		},
		want: []TenantOutcome{
			// a1 finishes at 60 but holds 0 from 45; a2 runs 45–70.
			{Queue: "a", Nominal: 4, Jobs: 3, AvgJCT: (60 + 70 + 5) / 3.0, P99JCT: 70, HeldGPUS: 45*3 + 5*1 + 25*4,
				ViolationGPUS: 10*1 + 30*1, LongestViolationS: 30},
			{Queue: "b", Nominal: 4, Jobs: 1, ViolationGPUS: 20 * 4, LongestViolationS: 20},
			{Queue: AllTenants, Nominal: 8, Jobs: 4, AvgJCT: (60 + 70 + 5) / 3.0, P99JCT: 70, HeldGPUS: 45*3 + 5*1 + 25*4,
				ViolationGPUS: 120, LongestViolationS: 30},
		},
	}, {
		// A namespace no queue names goes to the default queue, nominal
		// 0: never a violation.
		name: "default queue",
		jobs: []sim.JobResult{{Namespace: "other", JobID: "x", MinGPUs: 1, Arrival: 0, Start: 10, Finish: 20}},
		allocs: []sim.AllocChange{
			{Time: 10, JobID: "x", GPUs: 1},
			{Time: 20, JobID: "x", GPUs: 0},
		},
		want: []TenantOutcome{
			{Queue: "a", Nominal: 4},
			{Queue: "b", Nominal: 4},
			{Queue: structs.DefaultQueue, Jobs: 1, AvgJCT: 20, P99JCT: 20, HeldGPUS: 10},
			{Queue: AllTenants, Nominal: 8, Jobs: 1, AvgJCT: 20, P99JCT: 20, HeldGPUS: 10},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Tenants(tc.jobs, tc.allocs, queues)
			must.Eq(t, tc.want, got)
		})
	}
}

// TestTenants_PhillyRun runs the first hour's first 20 jobs of the Philly
// tenants workload under drf without queues, and measures it against the
// queues' quotas: every job belongs to a tenant, the tenants together
// hold what the cluster's usage says was held, and the queues'
// nominals are the cluster's GPUs.
func TestTenants_PhillyRun(t *testing.T) {
	wl, err := LoadWorkload(PhillyTenantsWorkload+":1", 1, 20)
	must.NoError(t, err)
	gpus := 0
	for _, g := range wl.NodeGPUs {
		gpus += g
	}
	queues, err := TenantQueues(wl, gpus, "queues")
	must.NoError(t, err)
	alg, _ := Policy("drf")
	r, err := Run(wl, alg, Options{Cluster: sim.DefaultConfig()})
	must.NoError(t, err)
	must.Nil(t, r.Queues)
	must.Eq(t, gpus, r.TotalGPUs)
	must.Positive(t, r.Collected, must.Sprint("the jobs that ended over 4 h before the last were collected, as an agent's would be"))
	for _, j := range r.Jobs {
		must.StrHasPrefix(t, "vc-", j.Namespace)
		must.Positive(t, j.MinGPUs)
	}
	out := Tenants(r.Jobs, r.Allocs, queues)
	must.Len(t, len(queues)+1, out, must.Sprint("no job in the default queue"))
	all := out[len(out)-1]
	must.Eq(t, AllTenants, all.Queue)
	must.Eq(t, gpus, all.Nominal)
	must.Eq(t, 20, all.Jobs)
	must.Eq(t, r.Summary.AvgJCT, all.AvgJCT)
	must.Eq(t, r.Summary.P99JCT, all.P99JCT)
	held := r.Summary.GPUUtil * r.Summary.Makespan * float64(r.TotalGPUs)
	must.Between(t, held-1e-3*held, all.HeldGPUS, held+1e-3*held)

	// summary.json reports tenants of the runs that held queues only.
	must.MapEmpty(t, NewReport("w", "c", 1, []*Result{r}).Tenants)
	r.Queues = queues
	must.Eq(t, map[string][]TenantOutcome{"drf": out}, NewReport("w", "c", 1, []*Result{r}).Tenants)
}
