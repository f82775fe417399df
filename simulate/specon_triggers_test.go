package simulate

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/planner/specon"
	"github.com/shoenig/test/must"
)

var speconContention = flag.Bool("specon-contention", false, "measure SpeCon against roundrobin under other contention constants of its workload's truth (planner/README.md, about a minute)")

var speconTriggers = flag.Bool("specon-triggers", false, "count how often SpeCon's conditions hold on the Pollux workloads (planner/README.md, about a minute)")

// triggers counts, over the rounds of a run, the running jobs (job-rounds)
// at each condition SpeCon needs before it moves a job.
type triggers struct {
	// Running is every running job-round; OneNode those on one node
	// (the only ones SpeCon moves); Converged those Algorithm 1 puts in
	// CC; Requesting those whose monitor requests reallocation, and
	// RequestingOneNode those of them on one node.
	Running, OneNode, Converged, Requesting, RequestingOneNode int
	// Crowded is the requesting one-node jobs whose node holds at least
	// two other jobs; Line15 those whose node holds at least two other
	// jobs in PC or WC (Algorithm 1 line 15). Stayed is the jobs
	// Algorithm 2 decided to leave where they run (its host is a
	// least-scored node among those with room for the job), Moved the
	// jobs the decisions move (Algorithms 2 and 3).
	Crowded, Line15, Stayed, Moved int
}

// triggerCounter wraps SpeCon and counts triggers on the requests it
// plans, with the options SpeCon runs with.
type triggerCounter struct {
	inner *specon.SpeCon
	n     triggers
}

var (
	_ planner.Algorithm    = (*triggerCounter)(nil)
	_ planner.Configurable = (*triggerCounter)(nil)
)

func (c *triggerCounter) Name() string { return c.inner.Name() }

func (c *triggerCounter) SetConfig(options map[string]string) error {
	return c.inner.SetConfig(options)
}

func (c *triggerCounter) Plan(req *planner.Request) (*planner.Decision, error) {
	opts := c.inner.Options()
	type running struct {
		mon  specon.Monitor
		node string // set when the job runs on one node
	}
	var jobs []running
	perNode := map[string]struct{ jobs, progressing int }{}
	for _, j := range req.Jobs {
		if j.Current == nil || j.Current.Paused() {
			continue
		}
		r := running{mon: specon.Categorize(j.Progress, opts.Interval, opts.Alpha)}
		if len(j.Current.Nodes) == 1 {
			r.node = j.Current.Nodes[0].NodeID
		}
		for _, nt := range j.Current.Nodes {
			n := perNode[nt.NodeID]
			n.jobs++
			if r.mon.Category != specon.Converged {
				n.progressing++
			}
			perNode[nt.NodeID] = n
		}
		jobs = append(jobs, r)
	}
	for _, r := range jobs {
		c.n.Running++
		if r.node != "" {
			c.n.OneNode++
		}
		if r.mon.Category == specon.Converged {
			c.n.Converged++
		}
		if !r.mon.Request {
			continue
		}
		c.n.Requesting++
		if r.node == "" {
			continue
		}
		c.n.RequestingOneNode++
		if perNode[r.node].jobs >= 3 {
			c.n.Crowded++
		}
		if perNode[r.node].progressing >= 2 {
			c.n.Line15++
		}
	}
	dec, err := c.inner.Plan(req)
	if err != nil {
		return nil, err
	}
	for _, p := range dec.Placements {
		if strings.Contains(p.Reason, "; stays on ") {
			c.n.Stayed++
		}
		if strings.Contains(p.Reason, "migrated from") || strings.Contains(p.Reason, "rebalanced from") {
			c.n.Moved++
		}
	}
	return dec, nil
}

// TestSpeConTriggers runs SpeCon over fifo and over drf on the 8 Pollux
// workloads (16 × 4 GPUs, seed 1, rounds every 60 s) at α = 0.01 and 0.05
// and logs, per run, how many running job-rounds met each of SpeCon's
// conditions for a move. It explains why SpeCon moves nothing there
// (planner/README.md, ## SpeCon): run with -specon-triggers.
func TestSpeConTriggers(t *testing.T) {
	if !*speconTriggers {
		t.Skip("run with -specon-triggers")
	}
	for _, base := range []string{"fifo", "drf"} {
		for _, alpha := range []string{"0.01", "0.05"} {
			var total triggers
			for n := 1; n <= 8; n++ {
				wl, err := LoadWorkload(fmt.Sprintf("pollux/workloads/workload-%d.csv", n), 1, 0)
				must.NoError(t, err)
				inner, ok := builtin.Algorithms[specon.Name]().(*specon.SpeCon)
				must.True(t, ok)
				c := &triggerCounter{inner: inner}
				options := map[string]string{"base": base, "alpha": alpha}
				_, err = Run(wl, c, Options{Cluster: sim.DefaultConfig(), Interval: time.Minute, AlgorithmOptions: options})
				must.NoError(t, err)
				t.Logf("base %s, α %s, workload-%d: %+v", base, alpha, n, c.n)
				total.add(c.n)
			}
			t.Logf("base %s, α %s, all 8: %+v", base, alpha, total)
		}
	}
}

func (t *triggers) add(o triggers) {
	t.Running += o.Running
	t.OneNode += o.OneNode
	t.Converged += o.Converged
	t.Requesting += o.Requesting
	t.RequestingOneNode += o.RequestingOneNode
	t.Crowded += o.Crowded
	t.Line15 += o.Line15
	t.Stayed += o.Stayed
	t.Moved += o.Moved
}

// TestSpeConContention measures SpeCon (over roundrobin, line 15 over the
// cluster and per node) against roundrobin, the paper's DS, on SpeCon's
// four schedules, seeds 1–5, 5 s restart penalty, under the truth's fitted
// contention constants and under others the fit does not support
// (sim.SharedCPUTruth's Parallel p and Interference κ): processor sharing
// (p = 1, κ = 0), and κ = 0.1 and 0.3. It logs the mean JCT and makespan
// change and moves per run (planner/README.md, ## SpeCon): run with
// -specon-contention.
func TestSpeConContention(t *testing.T) {
	if !*speconContention {
		t.Skip("run with -specon-contention")
	}
	type schedule struct {
		workload string
		nodes    int
	}
	schedules := []schedule{{"specon", 4}, {"specon-random", 4}, {"specon-random:30:600", 4}, {"specon-random:50:1200", 8}}
	// p 0 and κ −1 keep the fitted constant.
	for _, c := range []struct{ p, kappa float64 }{{0, -1}, {1, 0}, {0, 0.1}, {0, 0.3}} {
		for _, sc := range schedules {
			for _, line15 := range []string{"cluster", "node"} {
				var jct, makespan, moves float64
				var label string
				const seeds = 5
				for seed := uint64(1); seed <= seeds; seed++ {
					wl, err := LoadWorkload(sc.workload, seed, 0)
					must.NoError(t, err)
					var p, kappa float64
					for _, a := range wl.Arrivals {
						truth := a.Truth.(*sim.SharedCPUTruth)
						if c.p > 0 {
							truth.Parallel = c.p
						}
						if c.kappa >= 0 {
							truth.Interference = c.kappa
						}
						p, kappa = truth.Parallel, truth.Interference
					}
					label = fmt.Sprintf("p %v κ %v", p, kappa)
					cfg := sim.DefaultConfig()
					cfg.Nodes, cfg.GPUsPerNode, cfg.Seed, cfg.RestartPenalty = sc.nodes, 0, seed, 5*time.Second
					opts := Options{Cluster: cfg, Interval: 30 * time.Second}
					ds, err := Run(wl, builtin.Algorithms["roundrobin"](), opts)
					must.NoError(t, err)
					opts.AlgorithmOptions = map[string]string{"base": "roundrobin", "line15": line15}
					sp, err := Run(wl, builtin.Algorithms[specon.Name](), opts)
					must.NoError(t, err)
					jct += 100 * (sp.Summary.AvgJCT/ds.Summary.AvgJCT - 1) / seeds
					makespan += 100 * (sp.Summary.Makespan/ds.Summary.Makespan - 1) / seeds
					moves += float64(sp.Summary.Rescales) / seeds
				}
				t.Logf("%s, %s on %d workers, line15 %s: JCT %+.1f%%, makespan %+.1f%%, %.1f moves", label, sc.workload, sc.nodes, line15, jct, makespan, moves)
			}
		}
	}
}
