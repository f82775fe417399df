package experiment

import (
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/simulate"
	"github.com/shoenig/test/must"
)

var optimusThirds = flag.Bool("optimus-thirds", false, "measure optimus-eurosys18's jobs by thirds (drivers/sim/README.md; about 20 s)")

// TestOptimusThirds measures what drivers/sim/README.md's Optimus section
// reports: over optimus-eurosys18's seeds, each job's JCT and the tasks it
// held on average from arrival to finish under drf (MXNet's assignment) and
// optimus (PAA), by thirds of the jobs ranked by their JCT under drf, and
// the tasks the first jobs of seed 1 held over time. It asserts the
// finding: optimus's shortest third finishes later than under drf, with
// fewer tasks.
//
//	go test ./simulate/experiment -run TestOptimusThirds -optimus-thirds -v
func TestOptimusThirds(t *testing.T) {
	if !*optimusThirds {
		t.Skip("run with -optimus-thirds")
	}
	e, ok := Get("optimus-eurosys18")
	must.True(t, ok)
	type job struct {
		id                         string
		seed                       uint64
		jctD, jctO, tasksD, tasksO float64
	}
	var jobs []job
	for _, seed := range e.Seeds {
		res := map[string]*simulate.Result{}
		for _, c := range []struct{ workload, policy string }{{"optimus", "drf"}, {"optimus-paa", optimusPolicy}} {
			p, err := simulate.Prepare(simulate.Setup{Workload: c.workload, Cluster: "16x4", Policies: []string{c.policy},
				Seed: seed, Interval: 10 * time.Minute, RestartPenalty: 30 * time.Second, Assume: simulate.AssumeCaravan})
			must.NoError(t, err)
			alg, _ := simulate.Policy(p.Specs[0].Name)
			o := p.Options
			o.AlgorithmOptions = p.Specs[0].Options
			r, err := simulate.Run(p.Workload, alg, o)
			must.NoError(t, err)
			res[c.policy] = r
		}
		d, o := res["drf"], res[optimusPolicy]
		for i, jd := range d.Jobs {
			jo := o.Jobs[i]
			must.Eq(t, jd.JobID, jo.JobID)
			jobs = append(jobs, job{id: jd.JobID, seed: seed, jctD: jd.Finish - jd.Arrival, jctO: jo.Finish - jo.Arrival,
				tasksD: meanTasks(d, jd.JobID, jd.Arrival, jd.Finish), tasksO: meanTasks(o, jo.JobID, jo.Arrival, jo.Finish)})
		}
		if seed == e.Seeds[0] {
			for _, id := range []string{d.Jobs[0].JobID, d.Jobs[1].JobID} {
				for _, r := range []*simulate.Result{d, o} {
					line := ""
					for _, a := range r.Allocs {
						if a.JobID == id {
							line += fmt.Sprintf(" %.0fs:%d", a.Time, a.CPU/optimusTaskCPU)
						}
					}
					t.Logf("seed %d %s under %s, tasks from each time on:%s", seed, id, r.Policy, line)
				}
			}
		}
	}
	slices.SortFunc(jobs, func(a, b job) int { return cmpFloat(a.jctD, b.jctD) })
	n := len(jobs)
	for k := range 3 {
		part := jobs[k*n/3 : (k+1)*n/3]
		var jd, jo, td, to float64
		slower := 0
		for _, j := range part {
			jd, jo, td, to = jd+j.jctD, jo+j.jctO, td+j.tasksD, to+j.tasksO
			if j.jctO > 1.02*j.jctD {
				slower++
			}
		}
		l := float64(len(part))
		t.Logf("third %d: drf %.0f s with %.2f tasks, optimus %.0f s with %.2f tasks; optimus over 2%% slower on %d of %d",
			k+1, jd/l, td/l, jo/l, to/l, slower, len(part))
		if k == 0 {
			must.Greater(t, jd, jo, must.Sprint("the shortest third finishes later under optimus"))
			must.Less(t, td, to, must.Sprint("with fewer tasks"))
		}
	}
}

// optimusTaskCPU is the CPU (MHz) of one task of the optimus workload.
const optimusTaskCPU = 5000

// meanTasks is the tasks job id held on average over [from, to].
func meanTasks(r *simulate.Result, id string, from, to float64) float64 {
	var held, since, sum float64
	since = from
	for _, a := range r.Allocs {
		if a.JobID != id {
			continue
		}
		if a.Time > since {
			sum += held * (a.Time - since)
			since = a.Time
		}
		held = float64(a.CPU) / optimusTaskCPU
	}
	if to > since {
		sum += held * (to - since)
	}
	return sum / (to - from)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestOptimusPeriodic measures optimus-eurosys18's runs with rounds only at
// multiples of the 10-minute interval, as the paper plans ("new jobs
// submitted in the previous scheduling interval", §4), where `caravan sim`
// also plans at every arrival and completion: the mean JCT and makespan of
// drf and optimus over the seeds, for drivers/sim/README.md. It asserts
// that both runs finish every job.
//
//	go test ./simulate/experiment -run TestOptimusPeriodic -optimus-thirds -v
func TestOptimusPeriodic(t *testing.T) {
	if !*optimusThirds {
		t.Skip("run with -optimus-thirds")
	}
	e, ok := Get("optimus-eurosys18")
	must.True(t, ok)
	for _, periodic := range []bool{false, true} {
		jct, makespan := map[string]float64{}, map[string]float64{}
		for _, seed := range e.Seeds {
			for _, c := range []struct{ workload, policy string }{{"optimus", "drf"}, {"optimus-paa", optimusPolicy}} {
				p, err := simulate.Prepare(simulate.Setup{Workload: c.workload, Cluster: "16x4", Policies: []string{c.policy},
					Seed: seed, Interval: 10 * time.Minute, RestartPenalty: 30 * time.Second, Assume: simulate.AssumeCaravan})
				must.NoError(t, err)
				alg, _ := simulate.Policy(p.Specs[0].Name)
				o := p.Options
				o.AlgorithmOptions, o.PeriodicRounds = p.Specs[0].Options, periodic
				r, err := simulate.Run(p.Workload, alg, o)
				must.NoError(t, err)
				must.Eq(t, len(p.Workload.Arrivals), r.Summary.Jobs)
				n := float64(len(e.Seeds))
				jct[c.policy] += r.Summary.AvgJCT / n
				makespan[c.policy] += r.Summary.Makespan / n
			}
		}
		t.Logf("periodic rounds only: %v; mean JCT drf %.0f s, optimus %.0f s (%.3f×); makespan drf %.0f s, optimus %.0f s (%.3f×)",
			periodic, jct["drf"], jct[optimusPolicy], jct["drf"]/jct[optimusPolicy],
			makespan["drf"], makespan[optimusPolicy], makespan["drf"]/makespan[optimusPolicy])
	}
}
