package simulate

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/caravan-sched/caravan/drivers/sim"
)

// Batch is a workload to run once per policy.
type Batch struct {
	Workload *sim.Workload
	Specs    []PolicySpec
	Options  Options
}

// RunBatches runs every batch's policies, as many runs at once as there
// are CPUs; results[i][j] is batch i's run of its policy j. progress,
// when set, is called with a batch's and a policy's index and the
// policy's jobs done so far; done, when set, as each run ends. A policy
// no one knows fails before any run starts.
func RunBatches(batches []Batch, progress func(i, j, done int), done func(i int, r *Result)) ([][]*Result, error) {
	for _, b := range batches {
		for _, spec := range b.Specs {
			if _, ok := Policy(spec.Name); !ok {
				return nil, fmt.Errorf("unknown policy %q", spec.Name)
			}
		}
	}
	results := make([][]*Result, len(batches))
	var errs []error
	var mu sync.Mutex
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, b := range batches {
		results[i] = make([]*Result, len(b.Specs))
		for j, spec := range b.Specs {
			alg, _ := Policy(spec.Name)
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				o := b.Options
				if progress != nil {
					o.Progress = func(n, _ int) { progress(i, j, n) }
				}
				o.AlgorithmOptions, o.Oracle = spec.Options, spec.Oracle
				r, err := Run(b.Workload, alg, o)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", spec, err))
					return
				}
				results[i][j] = r
				if done != nil {
					done(i, r)
				}
			}()
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return results, nil
}

// RunPolicies runs wl once per policy (RunBatches) and returns their
// results in the order of specs.
func RunPolicies(wl *sim.Workload, specs []PolicySpec, opts Options, progress func(i, done int)) ([]*Result, error) {
	var p func(i, j, done int)
	if progress != nil {
		p = func(_, j, n int) { progress(j, n) }
	}
	results, err := RunBatches([]Batch{{Workload: wl, Specs: specs, Options: opts}}, p, nil)
	if err != nil {
		return nil, err
	}
	return results[0], nil
}
