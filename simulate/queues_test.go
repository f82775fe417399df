package simulate

import (
	"testing"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/queuespec"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// tenantWorkload is a workload of three tenants of GPU time 6:3:1, with
// one job each whose fixed request is the given workers.
func tenantWorkload(requests ...int) *sim.Workload {
	wl := &sim.Workload{Name: "tenants", Tenants: []sim.Tenant{{Namespace: "vc-x", GPUSeconds: 6}, {Namespace: "vc-y", GPUSeconds: 3}, {Namespace: "vc-z", GPUSeconds: 1}}}
	for i, req := range requests {
		j := &structs.Job{ID: wl.Tenants[i].Namespace + "-job", Namespace: wl.Tenants[i].Namespace,
			Elastic: &structs.Elastic{Workers: structs.Bounds{Min: 1, Max: 8}},
			Worker:  &structs.Role{Resources: &structs.Resources{Devices: []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}}}}
		wl.Arrivals = append(wl.Arrivals, sim.Arrival{Job: j, RequestWorkers: req})
	}
	return wl
}

func TestTenantNominals(t *testing.T) {
	cases := []struct {
		name     string
		requests []int
		gpus     int
		want     []int
	}{
		{"proportional", []int{1, 1, 1}, 10, []int{6, 3, 1}},
		// 6:3 of the 8 left is 5.33 and 2.67: the larger remainder
		// gets the unit.
		{"floor, then the rest in proportion", []int{1, 1, 2}, 10, []int{5, 3, 2}},
		{"largest remainder", []int{1, 1, 1}, 16, []int{10, 5, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TenantNominals(tenantWorkload(tc.requests...), tc.gpus)
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
		})
	}
	_, err := TenantNominals(tenantWorkload(8, 8, 8), 16)
	must.ErrorContains(t, err, "need 24 GPUs")
}

// TestTenantQueues checks each variant's queues, and that they are what
// a queue file written from them reads back as.
func TestTenantQueues(t *testing.T) {
	wl := tenantWorkload(1, 1, 1)
	none, err := TenantQueues(wl, 10, "none")
	must.NoError(t, err)
	must.Nil(t, none)

	static, err := TenantQueues(wl, 10, "static")
	must.NoError(t, err)
	must.Len(t, 3, static)
	for i, q := range static {
		must.Eq(t, wl.Tenants[i].Namespace, q.Name)
		must.Eq(t, []string{q.Name}, q.Namespaces)
		must.Eq(t, "", q.Cohort)
		must.Eq(t, 0, *q.Quota.GPU[0].BorrowingLimit)
		must.Eq(t, 0, *q.Quota.GPU[0].LendingLimit)
	}
	must.Eq(t, []int{6, 3, 1}, []int{static[0].Quota.GPU[0].Nominal, static[1].Quota.GPU[0].Nominal, static[2].Quota.GPU[0].Nominal})

	queues, err := TenantQueues(wl, 10, "queues")
	must.NoError(t, err)
	for i, q := range queues {
		must.Eq(t, TenantCohort, q.Cohort)
		must.Nil(t, q.Quota.GPU[0].BorrowingLimit)
		must.Nil(t, q.Quota.GPU[0].LendingLimit)
		must.Eq(t, static[i].Quota.GPU[0].Nominal, q.Quota.GPU[0].Nominal)
	}

	for _, qs := range [][]*structs.Queue{static, queues} {
		back, diags := queuespec.Parse(queuespec.Format(qs), "queues.hcl")
		must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
		must.Eq(t, qs, back)
	}

	_, err = TenantQueues(wl, 10, "shared")
	must.ErrorContains(t, err, `unknown queue variant "shared"`)
}
