package simulate

import (
	"fmt"
	"sync"
	"testing"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner/builtin"
)

func TestTry(t *testing.T) {
	profiles, _ := sim.LoadProfiles(sim.Data)
	var wls []*sim.Workload
	for i := 1; i <= 8; i++ {
		wl, err := sim.LoadPolluxWorkload(sim.Data, fmt.Sprintf("pollux/workloads/workload-%d.csv", i), profiles)
		if err != nil {
			t.Fatal(err)
		}
		wls = append(wls, wl)
	}
	wls = append(wls, sim.ParametricWorkload(100, 200, 1))
	for _, wl := range wls {
		var mu sync.Mutex
		var wg sync.WaitGroup
		out := map[string]Summary{}
		for _, name := range []string{"optimus", "drf", "fifo", "tetris"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := Run(wl, builtin.Algorithms[name](), Options{Cluster: sim.DefaultConfig()})
				if err != nil {
					t.Error(name, err)
					return
				}
				mu.Lock()
				out[name] = r.Summary
				mu.Unlock()
			}()
		}
		wg.Wait()
		fmt.Printf("%-14s opt %6.0f/%6.0f r%4d | drf %6.0f/%6.0f r%4d | fifo %6.0f/%6.0f | tetris %6.0f/%6.0f\n", wl.Name,
			out["optimus"].AvgJCT, out["optimus"].Makespan, out["optimus"].Rescales, out["drf"].AvgJCT, out["drf"].Makespan, out["drf"].Rescales,
			out["fifo"].AvgJCT, out["fifo"].Makespan, out["tetris"].AvgJCT, out["tetris"].Makespan)
	}
}
