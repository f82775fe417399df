package main

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/queuespec"
	"github.com/caravan-sched/caravan/simulate"
	"github.com/caravan-sched/caravan/simulate/experiment"
	"github.com/caravan-sched/caravan/structs"
	"github.com/caravan-sched/caravan/version"
	"github.com/hashicorp/hcl/v2"
)

// SimCommand runs a workload under several policies on the simulated
// cluster and compares them.
type SimCommand struct {
	Meta
}

func (c *SimCommand) Synopsis() string { return "Compares scheduling policies on a simulated cluster" }

func (c *SimCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan sim -workload <name> [options]
       caravan sim -experiment <name> [-short] [-out <dir>]

  Replays a workload on Caravan's simulated cluster once per policy, in
  parallel, and writes to -out: summary.json (average, median and 99th
  percentile JCT, makespan, GPU, CPU and network utilisation, rescales and
  the regrouping overhead per policy, Jain's fairness index and the
  fairness loss against DRF, Dorm's eq. 1 utilisation, rescales per hour
  and plan times (median, 95th percentile, longest), and each policy's
  speedup over the isolated and colocated baselines when they ran),
  jobs.csv (one row per job and
  policy), fairness.csv (each job's share against its DRF share, see
  simulate.JobFairness), usage.csv, speeds.csv (each configuration a
  DLRover job ran at, with its steps per second) and PNG plots (jct_cdf.png;
  gpu_util.png, a panel per policy of the GPUs held, smoothed; and
  gpu_alloc_<policy>.png, each job's GPUs over time with a colour scale).
  The same seed gives the same results. A policy that plans from what the
  workload lacks (harmony or cruise without subtask times, dlrover without
  resource ranges, pollux or goodput-las with neither batch bounds nor a
  Pollux workload's jobs) runs with a warning.

  Workloads: a Pollux workload CSV (e.g. pollux/workloads/workload-6.csv,
  read from disk or from the data compiled into caravan), the Philly trace
  (pollux/traces/philly.csv), philly-tenants[:HOURS] (the trace's 10
  largest virtual clusters as tenants in namespaces vc-<cluster>, 8 hours
  of their jobs or the first HOURS, on a cluster sized for a load of 1,
  which replaces -cluster; for -queues), a CSV of "time,jobspec" rows, or
  parametric[:N[:GAP]] (N synthetic parameter-server jobs, one every GAP
  seconds on average), optimus[:N[:SPAN]] and optimus-paa[:N[:SPAN]] (the
  Optimus paper's §6.1 workload on its testbed, which replaces -cluster,
  with MXNet's or PAA's parameter assignment; use -interval 10m and
  -policy optimus:young_factor=1,drf,tetris), or harmony[:N[:GAP]] (the
  dissertation's 80 jobs of MLR, NMF, Lasso and LDA as computation and
  communication subtasks on m4.2xlarge nodes, all at once unless GAP is
  given; use -cluster 100x0 and -policy harmony,isolated,colocated), or cruise[:N[:GAP]] (Table 3.4's Cruise
  runs; use -cluster 32x0 and -policy cruise,fifo), specon[:N[:GAP]]
  and specon-random[:N[:SPAN]] (SpeCon's fixed and random schedules of
  containers sharing M510 workers; use -cluster 4x0 or 8x0, -interval 30s
  and -policy specon,fifo), dorm[:N[:GAP]] (Dorm's 50 applications of
  Table II, one every GAP seconds on average, default 1200, on its testbed
  of 20 servers with 240 cores and 5 GPUs, which replaces -cluster; use
  -interval 100h and -policy
  dorm:preset=dorm-1,dorm:preset=dorm-2,dorm:preset=dorm-3,drf,fifo), or
  dlrover[:N[:GAP]] (the DLRover paper's
  Wide&Deep and xDeepFM jobs on 64-core 2.5 GHz nodes; use -cluster 16x0
  and -policy dlrover,optimus,drf,fifo) and its single-job experiments
  dlrover-wd and dlrover-xdfm (Table 1), dlrover-wd-slow-worker,
  dlrover-wd-slow-ps and the same for xdfm (§6.2), each also with the
  suffix -static (data sharded statically, the paper's TFJob baseline),
  and dlrover-wd-table2 and dlrover-xdfm-table2 (§6.3: one job at Table
  2's per-pod CPU; use -policy dlrover,autoscale,optimus-steps).

  With -experiment, runs one paper's evaluation as the repository keeps
  it (simulate/experiment): its workloads, clusters, baselines and seeds,
  and prints each metric beside the paper's number (here, paper, their
  ratio, met or missed) and each run's policies, as Markdown, with the
  commit it ran at; results and plots go to -out (default
  out/experiments/<name>). -experiment list lists the experiments; -short
  runs the short version make test runs. It exits 0 whether the paper's
  numbers are met or missed, and 1 if a run fails.

Sim Options:

  -workload=<name>        The workload (required, unless -experiment).
  -experiment=<name>      A paper's evaluation, instead of the options
                          below; or list.
  -short                  With -experiment, its short version.
  -cluster=16x4           Nodes and GPUs per node (NODESxGPUS), or
                          groups of GPU types NODESxTYPE[:GPUS] such as
                          6xt4,3xrtx,2xa100 (types t4, rtx, a100, quad;
                          drivers/sim/README.md). Default 16x4, or the
                          assumptions' cluster (-assume sia-artifact:
                          6xt4,3xrtx,2xa100).
  -policy=optimus,drf,tetris,fifo
                          The policies to compare: cruise, dlrover, dorm,
                          drf, fifo, gavel, goodput-las, harmony, optimus,
                          optimus-relative (Optimus with the relative
                          gain, see drivers/sim/README.md), pollux,
                          roundrobin, sia, sia-las, specon, tetris,
                          tiresias, or the baselines isolated (each job
                          on nodes of its own at its balanced DoP),
                          colocated (jobs share nodes, at most two a
                          node, no grouping; order=spread|best|worst),
                          and the DLRover paper's autoscale and
                          optimus-steps (§6.3).
                          A policy may carry its algorithm's options as
                          name:key=value[:key=value...], e.g.
                          specon:base=drf or dorm:preset=dorm-1 (dorm
                          needs GLPK's glpsol: make tools), named so in
                          the results.
  -out=<dir>              Where to write the results (default out/sim, or
                          out/experiments/<name> with -experiment).
  -json                   Print summary.json to stdout instead of a table.
  -seed=1                 Seed of the noise and of generated workloads.
  -interval=60s           Time between scheduling rounds.
  -restart-penalty=30s    Progress time lost on every start, rescale or move.
  -limit=N                Keep only the first N jobs of the workload.
  -queues=<file>          A queue file (as "caravan queue apply" takes):
                          its queues are stored in every policy's server
                          before any job, and the results add each
                          tenant's (queue's) mean and p99 JCT, guarantee
                          violations and GPU time (summary.json Tenants;
                          simulate.Tenants). "caravan sim -experiment
                          queues-philly" writes the philly-tenants
                          workload's as queues.hcl.
  -stragglers             Turn on straggler handling for every policy (the
                          agent's scheduler { straggler { enabled = true } }
                          with its defaults; see planner/straggler).
  -assume=caravan         What the simulator takes for granted: caravan
                          (jobs pay for profiling and for every restart,
                          rounds at every arrival and completion too) or
                          pollux-artifact (the Pollux artifact's simulator,
                          to compare with its numbers: free profiling, a
                          fixed 30 s delay on every (re)allocation, rounds
                          only every 60 s, and Pollux jobs bounded as its
                          Optimus and Tiresias run them; it overrides
                          -interval and -restart-penalty). See
                          drivers/sim/README.md.
  -cpuprofile=<file>      Write a CPU profile of the run to the file, for
                          go tool pprof (drivers/sim/README.md, "Speed of
                          the simulator").

  A policy's name may end in +oracle (e.g. optimus+oracle): it then plans
  with the jobs' true speeds and remaining steps instead of fitted models.
`)
}

func (c *SimCommand) Run(args []string) int {
	var workload, cluster, policies, out, assume, queueFile, cpuProfile string
	var experimentName string
	var asJSON, stragglers, short bool
	var seed uint64
	var interval, penalty time.Duration
	var limit int
	flags := c.FlagSet("sim")
	flags.StringVar(&workload, "workload", "", "")
	flags.StringVar(&experimentName, "experiment", "", "")
	flags.BoolVar(&short, "short", false, "")
	flags.StringVar(&cluster, "cluster", "", "")
	flags.StringVar(&policies, "policy", "optimus,drf,tetris,fifo", "")
	flags.StringVar(&out, "out", "", "")
	flags.BoolVar(&asJSON, "json", false, "")
	flags.Uint64Var(&seed, "seed", 1, "")
	flags.DurationVar(&interval, "interval", time.Minute, "")
	flags.DurationVar(&penalty, "restart-penalty", 30*time.Second, "")
	flags.IntVar(&limit, "limit", 0, "")
	flags.BoolVar(&stragglers, "stragglers", false, "")
	flags.StringVar(&queueFile, "queues", "", "")
	flags.StringVar(&assume, "assume", simulate.AssumeCaravan, "")
	flags.StringVar(&cpuProfile, "cpuprofile", "", "")
	if err := flags.Parse(args); err != nil {
		c.Ui.Error(err.Error() + "\n\n" + c.Help())
		return 1
	}
	if cpuProfile != "" {
		stop, err := startCPUProfile(cpuProfile)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error starting the CPU profile: %s", err))
			return 1
		}
		defer func() {
			if err := stop(); err != nil {
				c.Ui.Error(fmt.Sprintf("Error writing the CPU profile: %s", err))
			}
		}()
	}
	if (workload == "") == (experimentName == "") || flags.NArg() != 0 {
		c.Ui.Error("This command takes -workload or -experiment, and no arguments\n\n" + c.Help())
		return 1
	}
	if experimentName != "" {
		if queueFile != "" {
			c.Ui.Error("-queues takes -workload: an experiment names its own queues")
			return 1
		}
		return c.runExperiment(experimentName, short, out)
	}
	if short {
		c.Ui.Error("-short runs an experiment's short version: it takes -experiment")
		return 1
	}
	out = cmp.Or(out, "out/sim")
	var queues []*structs.Queue
	if queueFile != "" {
		parser := queuespec.NewParser()
		var diags hcl.Diagnostics
		queues, diags = parser.ParseFile(queueFile)
		c.printDiagnostics(parser.Files(), diags)
		if diags.HasErrors() {
			return 1
		}
	}
	p, err := simulate.Prepare(simulate.Setup{
		Workload: workload, Cluster: cluster, Policies: strings.Split(policies, ","), Seed: seed,
		Interval: interval, RestartPenalty: penalty, Limit: limit, Assume: assume, Stragglers: stragglers,
		Queues: queues,
	})
	if err != nil {
		c.Ui.Error(capitalise(err.Error()))
		return 1
	}
	for _, w := range p.Warnings {
		c.Ui.Warn("Warning: " + w)
	}
	wl := p.Workload
	results, err := c.runAll(wl, p.Specs, p.Options)
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	report := simulate.NewReport(workload, p.Cluster, seed, results)
	if err := simulate.WriteAll(out, report, results); err != nil {
		c.Ui.Error("Error writing results: " + err.Error())
		return 1
	}
	if asJSON {
		var b strings.Builder
		if err := report.WriteJSON(&b); err != nil {
			c.Ui.Error(err.Error())
			return 1
		}
		c.Ui.Output(strings.TrimSpace(b.String()))
		return 0
	}
	c.Ui.Output(fmt.Sprintf("%d jobs of %s on %s; results in %s\n", len(wl.Arrivals), workload, p.Cluster, out))
	c.Ui.Output(formatSimTables(report, results))
	return 0
}

// formatSimTables renders a run's results as the tables caravan sim
// prints: outcomes, fairness, resources and planning, and the speed-ups.
// A utilisation column that no policy moved from 0 (no job of the
// workload models CPU or network use) reads "-".
func formatSimTables(report *simulate.Report, results []*simulate.Result) string {
	var cpu, net bool
	for _, r := range results {
		cpu = cpu || r.Summary.CPUUtil > 0
		net = net || r.Summary.NetUtil > 0
	}
	util := func(v float64, modelled bool) string {
		if !modelled {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*v)
	}
	secs := func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
	outcome := [][]string{{"Policy", "Avg JCT (s)", "P50 JCT (s)", "P99 JCT (s)", "Makespan (s)", "GPU Util", "CPU Util", "Net Util",
		"Rescales", "Regroup", "Jain", "Fair Loss", "Max Loss", "Worst Job", "Wall"}}
	resources := [][]string{{"Policy", "Res Util", "First 5h", "Adjust/h", "Plans", "Plan P50", "Plan P95", "Plan Max"}}
	for _, r := range results {
		s := r.Summary
		outcome = append(outcome, []string{r.Policy, secs(s.AvgJCT), secs(s.P50JCT), secs(s.P99JCT), secs(s.Makespan),
			util(s.GPUUtil, true), util(s.CPUUtil, cpu), util(s.NetUtil, net), strconv.Itoa(s.Rescales),
			fmt.Sprintf("%.2f%%", 100*s.RegroupShare), fmt.Sprintf("%.3f", s.Jain), fmt.Sprintf("%.3f", s.Fairness.Loss),
			fmt.Sprintf("%.3f", s.MaxLoss), fmt.Sprintf("%.3f", s.WorstJobLoss), r.Wall.Round(time.Millisecond).String()})
		resources = append(resources, []string{r.Policy, fmt.Sprintf("%.3f", s.ResourceUtil), fmt.Sprintf("%.3f", s.ResourceUtilEarly),
			fmt.Sprintf("%.2f", s.RescalesPerHour), strconv.Itoa(s.Plans), fmt.Sprintf("%.3fs", r.PlanTime.P50S), fmt.Sprintf("%.3fs", r.PlanTime.P95S), fmt.Sprintf("%.3fs", r.PlanTime.MaxS)})
	}
	var b strings.Builder
	b.WriteString(formatList(outcome))
	if !cpu || !net {
		b.WriteString("\n\n-: no job of the workload models this resource's use")
	}
	b.WriteString("\n\nfairness: Jain's index over each job's share ÷ its DRF share; fairness loss Σ|share − DRF share|\n" +
		"(Dorm's eq. 2) averaged over the makespan and its maximum; the worst job's loss over its life (fairness.csv)\n\n")
	b.WriteString(formatList(resources))
	b.WriteString("\n\nres util: Dorm's eq. 1, CPU + memory + GPU shares held (0 to 3), over the makespan and its first 5 hours;\n" +
		"adjust/h: rescales and moves per hour; plan: the wall time of one plan (dorm: mostly glpsol's solve)")
	if len(report.Tenants) > 0 {
		rows := [][]string{{"Policy", "Queue", "Nominal GPUs", "Jobs", "Avg JCT (s)", "P99 JCT (s)", "GPU-h Held", "Violations (GPU-s)", "Longest (s)"}}
		for _, r := range results {
			for _, t := range report.Tenants[r.Policy] {
				rows = append(rows, []string{r.Policy, t.Queue, strconv.Itoa(t.Nominal), strconv.Itoa(t.Jobs), secs(t.AvgJCT), secs(t.P99JCT),
					fmt.Sprintf("%.1f", t.HeldGPUS/3600), secs(t.ViolationGPUS), secs(t.LongestViolationS)})
			}
		}
		b.WriteString("\n\nper queue (tenant):\n" + formatList(rows))
		b.WriteString("\n\nviolations: GPU-seconds by which a queue held less than its nominal while one of its jobs waited or\n" +
			"ran below its minimum; longest: the longest such interval (simulate.Tenants)")
	}
	if len(report.Speedups) > 0 {
		rows := [][]string{{"Policy", "Baseline", "JCT Speed-up", "Makespan Speed-up"}}
		for _, sp := range report.Speedups {
			rows = append(rows, []string{sp.Policy, sp.Baseline, fmt.Sprintf("%.2f×", sp.JCT), fmt.Sprintf("%.2f×", sp.Makespan)})
		}
		b.WriteString("\n\nspeed-up (baseline ÷ policy):\n" + formatList(rows))
	}
	return b.String()
}

// runAll runs the policies in parallel (simulate.RunPolicies) and prints
// a progress line to stderr every few seconds.
func (c *SimCommand) runAll(wl *sim.Workload, specs []simulate.PolicySpec, opts simulate.Options) ([]*simulate.Result, error) {
	done := make([]atomic.Int64, len(specs))
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(3 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				var parts []string
				for i, spec := range specs {
					parts = append(parts, fmt.Sprintf("%s %d/%d", spec, done[i].Load(), len(wl.Arrivals)))
				}
				fmt.Fprintln(os.Stderr, "sim: jobs done: "+strings.Join(parts, ", "))
			}
		}
	}()
	results, err := simulate.RunPolicies(wl, specs, opts, func(i, n int) { done[i].Store(int64(n)) })
	close(stop)
	return results, err
}

// runExperiment runs the named experiment, or lists them.
func (c *SimCommand) runExperiment(name string, short bool, out string) int {
	if name == "list" {
		rows := [][]string{{"Name", "Version", "Paper"}}
		for _, e := range experiment.All() {
			rows = append(rows, []string{e.Name, strconv.Itoa(e.Version), e.Paper})
		}
		c.Ui.Output(formatList(rows))
		return 0
	}
	e, ok := experiment.Get(name)
	if !ok {
		var names []string
		for _, e := range experiment.All() {
			names = append(names, e.Name)
		}
		c.Ui.Error(fmt.Sprintf("Unknown experiment %q; the experiments are %s", name, strings.Join(names, ", ")))
		return 1
	}
	out = cmp.Or(out, filepath.Join("out", "experiments", name))
	o, err := experiment.Execute(e, experiment.Options{Short: short, Out: out, Progress: func(msg string) {
		fmt.Fprintln(os.Stderr, "sim: "+msg)
	}})
	if err != nil {
		c.Ui.Error(capitalise(err.Error()))
		return 1
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		c.Ui.Error("Error writing results: " + err.Error())
		return 1
	}
	commit := cmp.Or(version.GitCommit, vcsRevision(), "an unknown commit")
	table := o.Format(commit)
	if err := os.WriteFile(filepath.Join(out, "results.md"), []byte(table), 0o644); err != nil {
		c.Ui.Error("Error writing results: " + err.Error())
		return 1
	}
	c.Ui.Output(strings.TrimSpace(table) + "\n\nresults and plots in " + out)
	return 0
}

// startCPUProfile profiles the process's CPU into the file at path until
// the returned function is called, which writes the profile and closes
// the file.
func startCPUProfile(path string) (func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// vcsRevision is the commit go build stamped into the binary (a build
// without make's -ldflags), "+dirty" when the tree had changes; "" when
// none was.
func vcsRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 7:
			rev = s.Value[:7]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}
