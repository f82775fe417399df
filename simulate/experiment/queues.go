package experiment

import (
	"fmt"
	"strconv"

	"github.com/caravan-sched/caravan/simulate"
)

// The queues experiment's runs, one per queue variant
// (simulate.QueueVariants), and its policy.
const (
	queuesNone   = "none"
	queuesStatic = "static"
	queuesShared = "queues"
	queuesPolicy = "drf"
)

// queuesVariants are the runs in the order the tables show them, with
// the heading of each.
var queuesVariants = []struct{ run, title string }{
	{queuesNone, "no quotas"}, {queuesStatic, "static"}, {queuesShared, "queues"},
}

// queuesViolationGoal is issue 32's bound on a guarantee violation: one
// scheduling round (60 s, the runs' interval) plus the checkpoint time
// (the 30 s restart penalty a job pays to resume from its checkpoint).
const queuesViolationGoal = 60.0 + 30.0

func init() {
	e := &Experiment{
		Name:    "queues-philly",
		Version: 1,
		Paper:   "issue 32's targets: teams sharing one cluster, the Philly trace's 10 largest virtual clusters as tenants",
		Against: "goal",
		About: "The philly-tenants workload (drivers/sim/README.md): the Philly trace's 10 largest virtual clusters " +
			"as tenants, each in its namespace, 8 hours of their jobs on the cluster the workload sizes for a load of 1, " +
			"under drf with three queue set-ups of one nominal GPU quota per tenant in proportion to its GPU time over " +
			"the trace (simulate.TenantQueues): none (no quotas, all share freely), static (each tenant only its " +
			"quota, Philly's own model) and queues (one cohort, borrowing and reclaim by shrinking). " +
			"Guarantee violations are measured against the same quotas in every run (simulate.Tenants).",
		Seeds: []uint64{1},
		Tables: func(o *Outcome) []Table {
			return queuesTables(o)
		},
	}
	for _, v := range queuesVariants {
		e.Runs = append(e.Runs, Run{Name: v.run, Workload: simulate.PhillyTenantsWorkload, Policies: []string{queuesPolicy},
			Queues: v.run, Short: simulate.PhillyTenantsWorkload + ":1"})
	}
	e.Metrics = []Metric{
		{Name: "mean JCT, queues ÷ no quotas (within 5%)", Paper: 1.05, Unit: "×", Target: true,
			Value: ratioAcross(queuesShared, queuesNone, func(s simulate.Summary) float64 { return s.AvgJCT })},
		{Name: "mean JCT speed-up, queues over static", Paper: 1.5, Unit: "×", Higher: true, Target: true,
			Value: SpeedupAcross(queuesShared, queuesPolicy, queuesStatic, queuesPolicy, JCT)},
		{Name: "longest guarantee violation under queues (s; a round plus the checkpoint time)", Paper: queuesViolationGoal, Target: true,
			Value: func(s Seed) (float64, error) {
				r, err := s.Result(queuesShared, queuesPolicy)
				if err != nil {
					return 0, err
				}
				t := simulate.Tenants(r.Jobs, r.Allocs, r.Queues)
				return t[len(t)-1].LongestViolationS, nil
			}},
	}
	Register(e)
}

// ratioAcross is a metric's Value: run's measure of the queues policy
// over baseRun's.
func ratioAcross(run, baseRun string, f Measure) func(Seed) (float64, error) {
	return ratio(run, queuesPolicy, baseRun, queuesPolicy, f, func(p, b float64) float64 { return p / b })
}

// queuesTables are the experiment's tables, from its first seed: each
// tenant's JCT and guarantee violations under each variant, and the
// overall outcome of each, all measured against the queues run's quotas.
func queuesTables(o *Outcome) []Table {
	if len(o.Seeds) == 0 {
		return nil
	}
	seed := o.Seeds[0]
	quotas := o.Queues[queuesShared]
	byRun := map[string][]simulate.TenantOutcome{}
	summary := map[string]simulate.Summary{}
	for _, v := range queuesVariants {
		if r, err := seed.Result(v.run, queuesPolicy); err == nil {
			byRun[v.run] = simulate.Tenants(r.Jobs, r.Allocs, quotas)
			summary[v.run] = r.Summary
		}
	}
	base := byRun[queuesShared]
	if base == nil {
		base = byRun[queuesNone]
	}
	secs := func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
	jct := [][]string{{"tenant", "nominal GPUs", "jobs"}}
	viol := [][]string{{"tenant", "nominal GPUs"}}
	for _, v := range queuesVariants {
		jct[0] = append(jct[0], v.title+" mean", v.title+" p99")
		viol[0] = append(viol[0], v.title)
	}
	for i, t := range base {
		jr := []string{t.Queue, strconv.Itoa(t.Nominal), strconv.Itoa(t.Jobs)}
		vr := []string{t.Queue, strconv.Itoa(t.Nominal)}
		for _, v := range queuesVariants {
			ts := byRun[v.run]
			if i >= len(ts) {
				jr, vr = append(jr, "-", "-"), append(vr, "-")
				continue
			}
			jr = append(jr, secs(ts[i].AvgJCT), secs(ts[i].P99JCT))
			vr = append(vr, fmt.Sprintf("%s (%s s)", secs(ts[i].ViolationGPUS), secs(ts[i].LongestViolationS)))
		}
		jct, viol = append(jct, jr), append(viol, vr)
	}
	overall := [][]string{{"variant", "mean JCT (s)", "p99 JCT (s)", "÷ no quotas", "GPU util", "violations (GPU-s)", "longest (s)"}}
	for _, v := range queuesVariants {
		ts, ok := byRun[v.run]
		if !ok {
			continue
		}
		all := ts[len(ts)-1]
		rel := "-"
		if none, ok := byRun[queuesNone]; ok && none[len(none)-1].AvgJCT > 0 {
			rel = fmt.Sprintf("%.2f×", all.AvgJCT/none[len(none)-1].AvgJCT)
		}
		overall = append(overall, []string{v.title, secs(all.AvgJCT), secs(all.P99JCT), rel,
			fmt.Sprintf("%.1f%%", 100*summary[v.run].GPUUtil), secs(all.ViolationGPUS), secs(all.LongestViolationS)})
	}
	note := "; GPU-seconds by which a tenant held less than its nominal while a job of it waited or ran below its minimum " +
		"(the longest such interval in brackets), simulate.Tenants"
	return []Table{
		{Title: fmt.Sprintf("Overall, seed %d, %s (measured against the queues' quotas in every run)", seed.Seed, queuesPolicy), Rows: overall},
		{Title: "Per tenant: mean and p99 JCT (s)", Rows: jct},
		{Title: "Per tenant: guarantee violations" + note, Rows: viol},
	}
}
