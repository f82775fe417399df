package experiment

import (
	"fmt"
	"strconv"
	"time"

	"github.com/caravan-sched/caravan/simulate"
)

// siaTrace is one trace of Sia's Table 3: its workloads in the embedded
// data and the paper's mean average JCT (hours) of each policy.
type siaTrace struct {
	name, paperName string
	workloads       []int
	sia, pollux     float64
	gavel           float64
}

// siaTraces are Table 3's traces (Sia SOSP'23 §5.2, Heterogeneous
// setting), with the workloads the data holds of each (../shared/data
// README: the even half of saturn and newtrace, all of philly).
var siaTraces = []siaTrace{
	{name: "saturn", paperName: "Helios", workloads: []int{2, 4, 6, 8, 10}, sia: 0.7, pollux: 1.0, gavel: 2.5},
	{name: "philly", paperName: "Philly", workloads: []int{1, 2, 3, 4, 5, 6, 7, 8}, sia: 0.6, pollux: 1.0, gavel: 1.9},
	{name: "newtrace", paperName: "newTrace", workloads: []int{2, 4, 6, 8, 10}, sia: 0.7, pollux: 1.5, gavel: 11.3},
}

// siaPolicies run at Sia's 60 s rounds; Gavel runs apart at its 360 s.
var siaPolicies = []string{"sia", "sia-las", "pollux"}

func init() {
	e := &Experiment{
		Name:    "sia-sosp23",
		Version: 1,
		Paper:   "Sia (SOSP'23) Table 3, Heterogeneous setting: mean over each trace's workloads of the average JCT",
		About: "Each workload of the Helios (saturn), Philly and newTrace traces on 6 t4 + 3 rtx + 2 a100 nodes " +
			"(64 GPUs) under the Sia artifact's assumptions (-assume sia-artifact: its per-type traces, calibration " +
			"factors and checkpoint-restore delays; profiling free), sia, sia-las and pollux at 60 s rounds, gavel " +
			"at 360 s. The truth is the artifact's measured per-type traces (drivers/sim/README.md), not a policy's " +
			"model. The paper's numbers are its simulator's; sia-las is Caravan's own.",
		Seeds: []uint64{1},
	}
	for _, tr := range siaTraces {
		for _, n := range tr.workloads {
			run := fmt.Sprintf("%s-%d", tr.name, n)
			workload := fmt.Sprintf("sia/%s/%d", tr.name, n)
			e.Runs = append(e.Runs,
				Run{Name: run, Workload: workload, Cluster: simulate.SiaCluster, Policies: siaPolicies,
					Assume: simulate.AssumeSia, ShortLimit: 6},
				Run{Name: run + "-gavel", Workload: workload, Cluster: simulate.SiaCluster, Policies: []string{"gavel"},
					Interval: 6 * time.Minute, Assume: simulate.AssumeSia, ShortLimit: 6})
		}
	}
	for _, tr := range siaTraces {
		e.Metrics = append(e.Metrics,
			Metric{Name: "avg JCT (h), sia, " + tr.paperName, Paper: tr.sia, Level: true, Within: 0.15, Value: tr.meanJCT("sia")},
			Metric{Name: "avg JCT (h), pollux, " + tr.paperName, Paper: tr.pollux, Level: true, Within: 0.15, Value: tr.meanJCT("pollux")},
			Metric{Name: "avg JCT (h), gavel, " + tr.paperName, Paper: tr.gavel, Level: true, Within: 0.25, Value: tr.meanJCT("gavel")},
			Metric{Name: "avg JCT, sia-las ÷ sia, " + tr.paperName + " (Caravan's target: below 1)", Paper: 1, Unit: "×",
				Target: true, Value: tr.ratio("sia-las", "sia")},
		)
	}
	e.Tables = siaTables
	Register(e)
}

// run is the run of workload n that holds policy.
func (tr siaTrace) run(n int, policy string) string {
	run := fmt.Sprintf("%s-%d", tr.name, n)
	if policy == "gavel" {
		run += "-gavel"
	}
	return run
}

// meanJCT is a metric's Value: the mean over the trace's workloads of
// policy's average JCT, in hours.
func (tr siaTrace) meanJCT(policy string) func(Seed) (float64, error) {
	return func(s Seed) (float64, error) {
		var sum float64
		for _, n := range tr.workloads {
			r, err := s.Result(tr.run(n, policy), policy)
			if err != nil {
				return 0, err
			}
			if r.Summary.AvgJCT <= 0 {
				return 0, fmt.Errorf("seed %d: %s has no JCT on %s workload %d", s.Seed, policy, tr.name, n)
			}
			sum += r.Summary.AvgJCT / 3600
		}
		return sum / float64(len(tr.workloads)), nil
	}
}

// ratio is a metric's Value: policy's mean average JCT over baseline's.
func (tr siaTrace) ratio(policy, baseline string) func(Seed) (float64, error) {
	return func(s Seed) (float64, error) {
		p, err := tr.meanJCT(policy)(s)
		if err != nil {
			return 0, err
		}
		b, err := tr.meanJCT(baseline)(s)
		if err != nil {
			return 0, err
		}
		return p / b, nil
	}
}

// siaTables lays the results out as Table 3 does, a table per trace:
// every workload's average JCT (hours) under every policy, the mean over
// the workloads and the paper's, at the first seed.
func siaTables(o *Outcome) []Table {
	if len(o.Seeds) == 0 {
		return nil
	}
	s := o.Seeds[0]
	policies := append(append([]string{}, siaPolicies...), "gavel")
	var out []Table
	for _, tr := range siaTraces {
		rows := [][]string{append([]string{"workload"}, policies...)}
		sums := make([]float64, len(policies))
		for _, n := range tr.workloads {
			row := []string{strconv.Itoa(n)}
			for k, p := range policies {
				cell := "–"
				if r, err := s.Result(tr.run(n, p), p); err == nil {
					h := r.Summary.AvgJCT / 3600
					sums[k] += h
					cell = strconv.FormatFloat(h, 'f', 2, 64)
				}
				row = append(row, cell)
			}
			rows = append(rows, row)
		}
		mean := []string{"mean"}
		for k := range policies {
			mean = append(mean, strconv.FormatFloat(sums[k]/float64(len(tr.workloads)), 'f', 2, 64))
		}
		paper := []string{"paper (Table 3)", strconv.FormatFloat(tr.sia, 'f', 1, 64), "–",
			strconv.FormatFloat(tr.pollux, 'f', 1, 64), strconv.FormatFloat(tr.gavel, 'f', 1, 64)}
		rows = append(rows, mean, paper)
		out = append(out, Table{
			Title: fmt.Sprintf("%s (%s workloads), average JCT in hours, seed %d", tr.paperName, tr.name, s.Seed),
			Rows:  rows,
		})
	}
	return out
}
