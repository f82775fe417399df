package simulate

import (
	"cmp"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/shoenig/test/must"
)

var ablation = flag.Bool("ablation", false, "run the Optimus ablations of drivers/sim/README.md (a few minutes)")

// TestAblation runs Optimus and DRF on the workloads where Optimus loses,
// under conditions that remove one cause at a time: restart penalty,
// stranded GPUs (four times the CPU per node) and model error (oracle
// models). It logs the mean average JCT over seeds 1–3; drivers/sim/README.md
// reports its output. Run it with
//
//	go test ./simulate -run TestAblation -ablation -v -timeout 30m
func TestAblation(t *testing.T) {
	if !*ablation {
		t.Skip("run with -ablation")
	}
	workloads := []string{"pollux/workloads/workload-1.csv", "pollux/workloads/workload-4.csv", "pollux/workloads/workload-6.csv", "parametric"}
	conditions := []struct {
		name    string
		penalty time.Duration
		cpu     int
	}{
		{"default", 30 * time.Second, 64000},
		{"penalty 1ms", time.Millisecond, 64000},
		{"4x CPU", 30 * time.Second, 4 * 64000},
		{"4x CPU, penalty 1ms", time.Millisecond, 4 * 64000},
	}
	policies := []string{"drf", "optimus", "optimus+oracle", "optimus-relative", "optimus-relative+oracle"}
	seeds := []uint64{1, 2, 3}

	type key struct{ wl, cond, policy string }
	var mu sync.Mutex
	sum := map[key]float64{}
	// By job size, under the default condition: mean JCT of the smallest,
	// middle and largest third of jobs, and rescales, averaged over seeds.
	thirds := map[key]*[3]float64{}
	rescales := map[key]float64{}
	// GPUs a job holds after a change of its GPUs (a start or a rescale
	// that changes the count), averaged over changes: what a restart idles.
	gpusPerStart := map[key]float64{}
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for _, name := range workloads {
		for _, seed := range seeds {
			wl, err := LoadWorkload(name, seed, 0)
			must.NoError(t, err)
			truth := map[string]sim.Truth{}
			third := sizeThirds(wl, sim.DefaultConfig().GPUsPerNode)
			for _, a := range wl.Arrivals {
				truth[a.Job.ID] = a.Truth
			}
			for _, c := range conditions {
				for _, p := range policies {
					wg.Add(1)
					go func() {
						defer wg.Done()
						sem <- struct{}{}
						defer func() { <-sem }()
						cfg := sim.DefaultConfig()
						cfg.Seed, cfg.RestartPenalty, cfg.CPU = seed, c.penalty, c.cpu
						base, withOracle := strings.CutSuffix(p, "+oracle")
						alg := builtin.Algorithms[base]()
						if withOracle {
							alg = NewOracle(alg, truth, cfg)
						}
						res, err := Run(wl, alg, Options{Cluster: cfg})
						must.NoError(t, err)
						must.Eq(t, len(wl.Arrivals), res.Summary.Jobs, must.Sprintf("%s %s %s seed %d: every job finishes", name, c.name, p, seed))
						var jct, n [3]float64
						for _, j := range res.Jobs {
							jct[third[j.JobID]] += j.Finish - j.Arrival
							n[third[j.JobID]]++
						}
						starts, gpus := 0, 0
						for _, a := range res.Allocs {
							if a.GPUs > 0 {
								starts++
								gpus += a.GPUs
							}
						}
						k := key{name, c.name, p}
						mu.Lock()
						defer mu.Unlock()
						sum[k] += res.Summary.AvgJCT / float64(len(seeds))
						rescales[k] += float64(res.Summary.Rescales) / float64(len(seeds))
						gpusPerStart[k] += float64(gpus) / float64(starts) / float64(len(seeds))
						if thirds[k] == nil {
							thirds[k] = &[3]float64{}
						}
						for i := range jct {
							thirds[k][i] += jct[i] / n[i] / float64(len(seeds))
						}
					}()
				}
			}
		}
	}
	wg.Wait()

	var b strings.Builder
	fmt.Fprintf(&b, "\nmean average JCT (s) over seeds 1-3; in brackets, ÷ DRF under the same condition\n")
	for _, name := range workloads {
		fmt.Fprintf(&b, "%s\n", name)
		for _, c := range conditions {
			drf := sum[key{name, c.name, "drf"}]
			fmt.Fprintf(&b, "  %-20s drf %6.0f", c.name, drf)
			for _, p := range policies[1:] {
				v := sum[key{name, c.name, p}]
				fmt.Fprintf(&b, " | %s %6.0f (%.3f)", p, v, v/drf)
			}
			b.WriteString("\n")
		}
		for _, p := range []string{"drf", "optimus", "optimus+oracle", "optimus-relative"} {
			k := key{name, "default", p}
			th := thirds[k]
			fmt.Fprintf(&b, "  default, %-16s mean JCT of the smallest / middle / largest third of jobs %6.0f / %6.0f / %6.0f; rescales %4.0f; GPUs per start %4.1f\n", p, th[0], th[1], th[2], rescales[k], gpusPerStart[k])
		}
	}
	t.Log(b.String())
}

// sizeThirds ranks a workload's jobs by their true work at their request
// (GPU-seconds, or worker-seconds: steps × step time × workers, the workers
// spread evenly over the fewest nodes) and returns 0, 1 or 2 per job ID for
// the smallest, middle and largest third.
func sizeThirds(wl *sim.Workload, gpusPerNode int) map[string]int {
	type sized struct {
		id   string
		work float64
	}
	jobs := make([]sized, len(wl.Arrivals))
	for i, a := range wl.Arrivals {
		w := max(a.RequestWorkers, 1)
		jobs[i] = sized{a.Job.ID, a.Truth.TotalSteps() * a.Truth.StepTime(a.RequestPS, spread(w, gpusPerNode)) * float64(w)}
	}
	slices.SortStableFunc(jobs, func(a, b sized) int { return cmp.Compare(a.work, b.work) })
	out := make(map[string]int, len(jobs))
	for i, j := range jobs {
		out[j.id] = i * 3 / len(jobs)
	}
	return out
}
