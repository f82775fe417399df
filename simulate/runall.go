package simulate

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/caravan-sched/caravan/drivers/sim"
)

// RunPolicies runs wl once per policy, as many at once as there are
// CPUs, and returns their results in the order of specs. progress, when
// set, is called with a policy's index and its jobs done so far.
func RunPolicies(wl *sim.Workload, specs []PolicySpec, opts Options, progress func(i, done int)) ([]*Result, error) {
	results := make([]*Result, len(specs))
	errs := make([]error, len(specs))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, spec := range specs {
		alg, ok := Policy(spec.Name)
		if !ok {
			return nil, fmt.Errorf("unknown policy %q", spec.Name)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			o := opts
			if progress != nil {
				o.Progress = func(n, _ int) { progress(i, n) }
			}
			o.AlgorithmOptions = spec.Options
			o.Oracle = spec.Oracle
			results[i], errs[i] = Run(wl, alg, o)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s: %w", spec, errs[i])
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}
