package sim

import (
	"testing"

	"github.com/shoenig/test/must"
)

// TestLoadPhillyTenants pins the Philly tenants workload: its ten tenants
// largest first, every job in a tenant's namespace and below the GPU-time
// cut, and a cluster sized for a load of about 1.
func TestLoadPhillyTenants(t *testing.T) {
	profiles, err := PolluxProfiles()
	must.NoError(t, err)
	wl, err := LoadPhillyTenants(Data, "pollux/traces/philly.csv", profiles, PhillyWindowStart, PhillyWindowHours)
	must.NoError(t, err)
	must.Len(t, PhillyTenants, wl.Tenants)
	must.Eq(t, "vc-ee9e8c", wl.Tenants[0].Namespace)
	for i := 1; i < len(wl.Tenants); i++ {
		must.LessEq(t, wl.Tenants[i-1].GPUSeconds, wl.Tenants[i].GPUSeconds)
	}
	tenant := map[string]bool{}
	for _, tn := range wl.Tenants {
		tenant[tn.Namespace] = true
	}
	must.Len(t, 253, wl.Arrivals)
	seen := map[string]bool{}
	offered := 0.0
	for i := range wl.Arrivals {
		a := &wl.Arrivals[i]
		must.True(t, tenant[a.Job.Namespace], must.Sprint(a.Job.ID, " in ", a.Job.Namespace))
		must.Eq(t, a.Job.Namespace, a.Adaptive.Namespace)
		must.Between(t, 0, a.Time, PhillyWindowHours*3600)
		seen[a.Job.Namespace] = true
		offered += OfferedGPUSeconds(a, PhillyTenantsGPUsPerNode)
	}
	must.MapLen(t, PhillyTenants, seen, must.Sprint("every tenant submits in the window"))
	gpus := len(wl.NodeGPUs) * PhillyTenantsGPUsPerNode
	load := offered / (float64(gpus) * PhillyWindowHours * 3600)
	must.Between(t, 0.95, load, 1.0)
}
