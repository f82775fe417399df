package experiment

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/simulate"
)

// Format renders the outcome as the Markdown a README pastes: a heading
// line naming the command and the commit it ran at ("" when not known),
// the metrics beside the paper's, and per run each policy's means over
// the seeds.
func (o *Outcome) Format(commit string) string {
	e := o.Experiment
	var b strings.Builder
	cmd := "caravan sim -experiment " + e.Name
	if o.Short {
		cmd += " -short"
	}
	fmt.Fprintf(&b, "`%s` (version %d", cmd, e.Version)
	if commit != "" {
		fmt.Fprintf(&b, ", at %s", commit)
	}
	seeds := make([]string, len(o.Seeds))
	for i, s := range o.Seeds {
		seeds[i] = strconv.FormatUint(s.Seed, 10)
	}
	fmt.Fprintf(&b, "): %s; seeds %s; %s\n\n", e.Paper, strings.Join(seeds, ", "), o.Wall.Round(time.Second))
	against := cmp.Or(e.Against, "paper")
	rows := [][]string{{"metric", "here", against, "here ÷ " + against, "verdict"}}
	for _, v := range o.Values {
		verdict := "missed"
		if v.Met() {
			verdict = "met"
		}
		rows = append(rows, []string{v.Metric.Name, formatValue(v.Mean, v.Metric.Unit), formatValue(v.Metric.Paper, v.Metric.Unit),
			ratioOf(v.Mean, v.Metric.Paper), verdict})
	}
	b.WriteString(markdown(rows))
	if e.Tables != nil {
		for _, t := range e.Tables(o) {
			fmt.Fprintf(&b, "\n%s\n\n", t.Title)
			b.WriteString(markdown(t.Rows))
		}
	}
	for _, w := range o.Warnings {
		b.WriteString("\nwarning: " + w + "\n")
	}
	for _, r := range e.Runs {
		workload := r.Workload
		if o.Short {
			workload = cmp.Or(r.Short, r.Workload)
			if r.ShortLimit > 0 {
				workload += fmt.Sprintf(" (first %d jobs)", r.ShortLimit)
			}
		}
		fmt.Fprintf(&b, "\nrun %s: %s on %s, means over the seeds\n\n", r.Name, workload, o.Clusters[r.Name])
		b.WriteString(markdown(o.runTable(r.Name)))
	}
	return b.String()
}

// runTable is a run's policies with their summaries' means over the
// seeds, in the order the first seed ran them.
func (o *Outcome) runTable(run string) [][]string {
	rows := [][]string{{"policy", "avg JCT (s)", "makespan (s)", "GPU util", "CPU util", "net util", "rescales"}}
	var policies []string
	for _, p := range o.Experiment.runByName(run).Policies {
		spec, err := simulate.ParsePolicy(p)
		if err == nil {
			policies = append(policies, spec.String())
		}
	}
	for _, p := range policies {
		mean := func(f func(simulate.Summary) float64) float64 {
			var m float64
			for _, s := range o.Seeds {
				if r, ok := s.Results[run][p]; ok {
					m += f(r.Summary) / float64(len(o.Seeds))
				}
			}
			return m
		}
		pct := func(f func(simulate.Summary) float64) string {
			if m := mean(f); m > 0 {
				return fmt.Sprintf("%.1f%%", 100*m)
			}
			return "-"
		}
		rows = append(rows, []string{p,
			fmt.Sprintf("%.0f", mean(func(s simulate.Summary) float64 { return s.AvgJCT })),
			fmt.Sprintf("%.0f", mean(func(s simulate.Summary) float64 { return s.Makespan })),
			pct(func(s simulate.Summary) float64 { return s.GPUUtil }),
			pct(func(s simulate.Summary) float64 { return s.CPUUtil }),
			pct(func(s simulate.Summary) float64 { return s.NetUtil }),
			fmt.Sprintf("%.1f", mean(func(s simulate.Summary) float64 { return float64(s.Rescales) })),
		})
	}
	return rows
}

func (e *Experiment) runByName(name string) Run {
	i := slices.IndexFunc(e.Runs, func(r Run) bool { return r.Name == name })
	return e.Runs[i]
}

func formatValue(v float64, unit string) string {
	switch unit {
	case "×":
		return fmt.Sprintf("%.2f×", v)
	case "%":
		return fmt.Sprintf("%.1f%%", v)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// ratioOf is here over paper, "-" where the paper's number is 0.
func ratioOf(here, paper float64) string {
	if paper == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", here/paper)
}

// markdown renders rows as a Markdown table; the first row is the
// header.
func markdown(rows [][]string) string {
	var b strings.Builder
	for i, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
		if i == 0 {
			b.WriteString(strings.Repeat("|---", len(r)) + "|\n")
		}
	}
	return b.String()
}
