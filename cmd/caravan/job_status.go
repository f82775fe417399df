package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/structs"
)

// JobStatusCommand lists jobs, or shows one job: its placement and model.
type JobStatusCommand struct {
	Meta
}

func (c *JobStatusCommand) Synopsis() string { return "Displays the status of jobs" }

func (c *JobStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan job status [options] [<job>]

  Without an argument, lists the jobs of every namespace (of -namespace when
  set): what runs of each (parameter servers, workers, GPUs and their
  types), its progress toward the predicted convergence and the time left.
  With a job ID, or the start of one, shows the job's status, its placement
  per node and role with the GPU type of each node (the model of its GPUs)
  and the types the job runs on, the reason the scheduler gave for it, and
  the models Caravan fitted to the job's samples: its loss curve, its speed,
  and the predicted steps and time to convergence. For a job whose placement runs nothing, a Placement
  Failure section says why: the nodes evaluated, how many each constraint
  filtered, and on how many each resource was exhausted. On the simulated
  cluster, times are marked as simulated.

Status Options:

  -verbose
    Also shows the job's recent events, the models' coefficients in full,
    the throughput model of each GPU type the job ran on against the step
    times measured there (Throughput by GPU Type), and full node IDs (8
    characters otherwise, as Nomad prints IDs).
` + jsonOption("the job list, or the job's summary,") + `
` + generalOptions)
}

func (c *JobStatusCommand) Run(args []string) int {
	var asJSON, verbose bool
	flags := c.FlagSet("job status")
	flags.BoolVar(&asJSON, "json", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	client, ok := c.agentCommand(flags, args, c.Help(), optionalArgument("<job>"))
	if !ok {
		return 1
	}
	if flags.NArg() == 0 {
		return c.list(client, asJSON)
	}
	job, ok := c.resolveJob(client, flags.Arg(0))
	if !ok {
		return 1
	}
	return c.show(client, job, asJSON, verbose)
}

func (c *JobStatusCommand) list(client *api.Client, asJSON bool) int {
	jobs, _, err := client.Jobs().List(&api.QueryOptions{Namespace: c.namespace})
	if err != nil {
		c.apiError("listing jobs", err)
		return 1
	}
	return c.output(asJSON, jobs, func() string { return formatJobs(jobs) })
}

func (c *JobStatusCommand) show(client *api.Client, job jobRef, asJSON, verbose bool) int {
	sum, _, err := client.Jobs().Summary(job.ID, job.query())
	if err != nil {
		c.apiError(fmt.Sprintf("reading job %q", job.ID), err)
		return 1
	}
	if !verbose {
		return c.output(asJSON, sum, func() string { return formatJobSummary(sum, nil, false) })
	}
	events, _, err := client.Events(job.ID, &api.QueryOptions{Namespace: sum.Job.Namespace})
	if err != nil {
		c.apiError(fmt.Sprintf("reading the events of job %q", job.ID), err)
		return 1
	}
	withEvents := struct {
		*api.JobSummary
		Events []*api.Event
	}{sum, events}
	return c.output(asJSON, withEvents, func() string { return formatJobSummary(sum, events, true) })
}

// formatJobs tabulates the job list: what runs of each job and on which
// GPU types, its progress and the predicted time left. On the simulated cluster the times are
// virtual, and a note under the table says so.
func formatJobs(jobs []*api.JobListStub) string {
	if len(jobs) == 0 {
		return "No jobs"
	}
	rows := [][]string{{"ID", "Namespace", "Status", "Version", "PS", "Workers", "GPUs", "GPU Type", "Progress", "ETA", "Submit Date"}}
	var sim float64
	for _, j := range jobs {
		progress, eta := "-", "-"
		if j.Progress > 0 {
			progress = fmt.Sprintf("%.0f%%", 100*j.Progress)
		}
		if j.RemainingSeconds > 0 {
			eta = formatSeconds(j.RemainingSeconds)
			if j.SimSpeed > 0 {
				eta += "*"
				sim = j.SimSpeed
			}
		}
		rows = append(rows, []string{j.ID, j.Namespace, j.Status, strconv.FormatUint(j.Version, 10),
			strconv.Itoa(j.NumPS), strconv.Itoa(j.NumWorkers), strconv.Itoa(j.GPUs), orDash(strings.Join(j.GPUTypes, ", ")),
			progress, eta, formatTime(j.SubmitTime)})
	}
	out := formatList(rows)
	if sim > 0 {
		out += "\n\n" + simulatedNote(sim)
	}
	return out
}

// simulatedNote explains the times marked * on the simulated cluster.
func simulatedNote(speed float64) string {
	return fmt.Sprintf("* simulated time: the simulated cluster runs %s× as fast as the wall clock", strconv.FormatFloat(speed, 'g', 4, 64))
}

// formatSeconds renders a duration in seconds to the second, "1h2m3s".
func formatSeconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}

// formatRemaining is the predicted time left, with its wall-clock
// equivalent on the simulated cluster (simSpeed > 0).
func formatRemaining(seconds, simSpeed float64) string {
	if seconds <= 0 {
		return "unknown"
	}
	if simSpeed <= 0 {
		return formatSeconds(seconds)
	}
	return fmt.Sprintf("%s of simulated time (%s on the wall clock at %s× speed)",
		formatSeconds(seconds), formatSeconds(seconds/simSpeed), strconv.FormatFloat(simSpeed, 'g', 4, 64))
}

// formatGroups lists the Nomad groups of a declared job by role:
// "worker=\"train\", ps=\"ps\"".
func formatGroups(groups map[string]string) string {
	var parts []string
	for _, role := range []string{api.RoleWorker, api.RolePS} {
		if g, ok := groups[role]; ok {
			parts = append(parts, fmt.Sprintf("%s=%q", role, g))
		}
	}
	return strings.Join(parts, ", ")
}

// formatJobSummary describes one job: its fields, placement and model, and
// with verbose its recent events and the models' coefficients in full.
func formatJobSummary(sum *api.JobSummary, events []*api.Event, verbose bool) string {
	job := sum.Job
	if job.Status == api.JobStatusRejected {
		return formatRejected(job, events, verbose)
	}
	kv := [][2]string{
		{"ID", job.ID},
		{"Name", job.Name},
		{"Namespace", job.Namespace},
		{"Status", job.Status},
	}
	if job.StatusDescription != "" {
		kv = append(kv, [2]string{"Description", job.StatusDescription})
	}
	kv = append(kv,
		[2]string{"Version", strconv.FormatUint(job.Version, 10)},
		[2]string{"Submit Date", formatTime(job.SubmitTime)},
	)
	if n := job.Nomad; n != nil {
		kv = append(kv, [2]string{"Declared In", fmt.Sprintf("Nomad job %q (groups %s); change it with nomad job run", job.ID, formatGroups(n.Groups))})
	}
	if t := job.Training; t != nil {
		kv = append(kv, [2]string{"Training", fmt.Sprintf("%s, %s, global batch %d", t.Architecture, t.Mode, t.GlobalBatchSize)})
	}
	if e := job.Elastic; e != nil {
		kv = append(kv, [2]string{"Workers", fmt.Sprintf("%d..%d", e.Workers.Min, e.Workers.Max)})
		if e.ParameterServers != nil {
			kv = append(kv, [2]string{"Parameter Servers", fmt.Sprintf("%d..%d", e.ParameterServers.Min, e.ParameterServers.Max)})
		}
	}
	if sum.Queue != "" {
		kv = append(kv, [2]string{"Queue", sum.Queue})
	}
	kv = append(kv, [2]string{"Samples", strconv.FormatInt(sum.Samples, 10)})
	var b strings.Builder
	b.WriteString(formatKV(kv))

	b.WriteString("\n\nPlacement\n")
	if p := sum.Placement; p == nil || p.Placement == nil {
		b.WriteString("No placement yet")
	} else {
		failed := p.Placement.Paused() && !api.Terminal(job.Status)
		kv := [][2]string{
			{"Plan Index", strconv.FormatUint(p.PlanIndex, 10)},
			{"Algorithm", p.Algorithm},
			{"Time", formatTime(p.Time)},
			{"Tasks", placementCounts(p.Placement)},
		}
		if len(p.Placement.Nodes) > 0 {
			kv = append(kv, [2]string{"GPU Type", orDash(placementGPUTypes(p.Placement, sum.GPUTypes))})
		}
		if !failed {
			kv = append(kv, [2]string{"Reason", p.Placement.Reason})
		}
		b.WriteString(formatKV(kv))
		if len(p.Placement.Nodes) > 0 {
			b.WriteString("\n\n" + formatPlacementNodes(p.Placement, sum.GPUTypes, verbose))
		}
		if failed {
			b.WriteString("\n\nPlacement Failure\n" + formatPlacementFailure(p.Placement))
		}
	}
	if r := formatRunning(sum, verbose); r != "" {
		b.WriteString("\n\nRunning\n" + r)
	}

	b.WriteString("\n\nModel\n")
	if m := sum.Model; m == nil {
		b.WriteString("No model fitted yet")
	} else {
		b.WriteString(formatModel(m, modelClock{finished: api.Terminal(job.Status), simSpeed: sum.SimSpeed}, verbose))
	}
	if m := sum.Model; verbose && m != nil && m.Goodput != nil && len(m.Goodput.ByType) > 0 {
		b.WriteString("\n\nThroughput by GPU Type\n" + formatTypeModels(m.Goodput.ByType))
	}

	if verbose {
		b.WriteString("\n\nUsage\n" + formatUsage(sum.Usage))
		b.WriteString("\n\nRecent Events\n")
		b.WriteString(formatEvents(events, 10))
	}
	return b.String()
}

// formatUsage tabulates what each task of a job uses, as last committed:
// CPU used against its limit (MHz, and the share), memory used and the
// most seen in the task's run against its limit (MB), its own time per
// step ("-" when not reported), its kills for memory and restarts, who
// measured it and when it was committed.
func formatUsage(u *api.JobUsage) string {
	if u == nil || len(u.Tasks) == 0 {
		return "No usage measured yet"
	}
	share := func(used float64, limit int) string {
		if limit <= 0 {
			return strconv.FormatFloat(used, 'f', 0, 64)
		}
		return fmt.Sprintf("%.0f/%d (%.0f%%)", used, limit, 100*used/float64(limit))
	}
	rows := [][]string{{"Role", "Rank", "Node", "CPU MHz", "Memory MB", "Max MB", "Step Time", "OOM Kills", "Restarts", "Source", "Updated"}}
	for _, t := range u.Tasks {
		step := "-"
		if t.TaskStepTimeS > 0 {
			step = formatStepTime(t.TaskStepTimeS)
		}
		rows = append(rows, []string{
			t.Role, strconv.Itoa(t.Rank), t.NodeID,
			share(t.CPUMHz, t.CPULimitMHz), share(t.MemoryMB, t.MemoryLimitMB),
			strconv.FormatFloat(t.MaxMemoryMB, 'f', 0, 64), step,
			strconv.Itoa(t.OOMKills), strconv.Itoa(t.Restarts), t.Source, formatTime(u.Time),
		})
	}
	return formatList(rows)
}

// modelClock is what formatModel needs to say of the time left: whether
// the job has ended (nothing is left), and the simulated cluster's speed
// (0 for a real cluster).
type modelClock struct {
	finished bool
	simSpeed float64
}

// speedForms are the speed functions by kind, as planner/model fits them:
// the terms of the denominator, in θ's order. M is the global batch.
var speedForms = map[string]struct {
	numerator string
	terms     []string
}{
	"async":     {"w", []string{"", "·w/p", "·w", "·p"}},
	"sync":      {"1", []string{"·M/w", "", "·w/p", "·w", "·p"}},
	"allreduce": {"1", []string{"·M/w", "", "·(w−1)/w", "·w"}},
}

// formatSpeed renders a speed model as its formula with the fitted
// coefficients, leaving out the terms fitted to 0: "steps/s = 1 / (4.6·M/w
// + 0.012·w/p)" for p parameter servers and w workers.
func formatSpeed(kind string, theta []float64, num func(float64) string) string {
	form, ok := speedForms[kind]
	if !ok || len(theta) < len(form.terms) {
		parts := make([]string, len(theta))
		for i, v := range theta {
			parts[i] = num(v)
		}
		return fmt.Sprintf("%s, θ = [%s]", kind, strings.Join(parts, " "))
	}
	var terms []string
	for i, t := range form.terms {
		if theta[i] != 0 {
			terms = append(terms, num(theta[i])+t)
		}
	}
	if len(terms) == 0 {
		terms = []string{"0"}
	}
	return fmt.Sprintf("%s: steps/s = %s / (%s)", kind, form.numerator, strings.Join(terms, " + "))
}

// formatModel describes a job's fitted models; verbose prints the
// coefficients in full precision.
func formatModel(m *api.JobModel, clock modelClock, verbose bool) string {
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	if verbose {
		num = func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	}
	loss := "not fitted yet"
	if len(m.Loss) == 3 {
		loss = fmt.Sprintf("1/(b0·k + b1) + b2 with b0=%s b1=%s b2=%s", num(m.Loss[0]), num(m.Loss[1]), num(m.Loss[2]))
	}
	speed := "not fitted yet"
	if len(m.Speed) > 0 {
		speed = formatSpeed(m.SpeedKind, m.Speed, num)
	}
	total := "unknown"
	if m.TotalSteps > 0 {
		total = strconv.FormatFloat(m.TotalSteps, 'f', 0, 64)
	}
	rows := [][2]string{{"Loss", loss}, {"Speed", speed}}
	if p := m.Profiling; len(p) > 0 {
		rows = append(rows, [2]string{"Profiling", fmt.Sprintf("at %s, %d configurations to go", structs.Shape(p[0]), len(p))})
	}
	if verbose && len(m.Loss) == 3 {
		rows = append(rows, [2]string{"Loss Fit RMSE", num(m.LossRMSE) + " (fraction of the largest loss)"})
	}
	if verbose && len(m.Speed) > 0 {
		rows = append(rows, [2]string{"Speed Fit Error", fmt.Sprintf("%.1f%% mean over %d configurations", 100*m.SpeedError, m.SpeedConfigs)})
	}
	if g := m.Goodput; g != nil && len(g.Perf) == 7 {
		rows = append(rows, [2]string{"Goodput", fmt.Sprintf("%s, noise scale %s at batch %d", formatPerf(g.Perf, num), num(g.NoiseScale), g.RefBatch)})
		if g.Batch > 0 {
			rows = append(rows, [2]string{"Batch", fmt.Sprintf("%d, efficiency %.2f, goodput %.1f samples/s", g.Batch, g.Efficiency, g.Goodput)})
		}
		if verbose {
			rows = append(rows, [2]string{"Goodput Fit Error", formatFitError(g.FitError, g.MaxFitError, g.Configs)})
		}
	}
	rows = append(rows, [][2]string{
		{"Step", strconv.FormatInt(m.Step, 10)},
		{"Predicted Total Steps", total},
		{"Steps/s", strconv.FormatFloat(m.StepsPerSecond, 'f', 2, 64)},
	}...)
	if !clock.finished {
		rows = append(rows, [2]string{"Remaining Time", formatRemaining(m.RemainingSeconds, clock.simSpeed)})
	}
	return formatKV(rows)
}

// formatPerf renders the parameters of a throughput model
// (GoodputModel.Perf, 7 of them) with num: "α_c=0.0173 β_c=0.0007 …
// γ=2".
func formatPerf(p []float64, num func(float64) string) string {
	return fmt.Sprintf("α_c=%s β_c=%s α_n=%s β_n=%s α_r=%s β_r=%s γ=%s",
		num(p[0]), num(p[1]), num(p[2]), num(p[3]), num(p[4]), num(p[5]), num(p[6]))
}

// formatFitError is a throughput fit's mean and largest relative error
// over the configurations measured.
func formatFitError(mean, largest float64, configs int) string {
	return fmt.Sprintf("%.1f%% mean, %.1f%% max over %s", 100*mean, 100*largest, structs.Plural(configs, "configuration"))
}

// formatStepTime renders a step time in seconds to a tenth of a
// millisecond: "253.1ms".
func formatStepTime(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond / 10).String()
}

// formatTypeModels describes the throughput model of each GPU type
// (GoodputModel.ByType), in full precision: a heading per type, its
// parameters and fit error, and a table of the configurations measured
// there with the step time measured, the model's, and the model's error
// relative to the measurement. A type with more configurations than the
// server sends says how many it shows.
func formatTypeModels(types []api.GPUTypeModel) string {
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	parts := make([]string, 0, len(types))
	for _, tm := range types {
		kv := [][2]string{{"Fit Error", formatFitError(tm.FitError, tm.MaxFitError, tm.Configs)}}
		if len(tm.Perf) == 7 {
			kv = append([][2]string{{"Model", formatPerf(tm.Perf, num)}}, kv...)
		}
		out := fmt.Sprintf("GPU Type %q\n%s", tm.Type, formatKV(kv))
		rows := [][]string{{"Nodes", "Replicas", "Local Batch", "Measured Step", "Model Step", "Error"}}
		for _, p := range tm.Points {
			rel := "-"
			if p.StepTimeS > 0 {
				rel = fmt.Sprintf("%+.1f%%", 100*(p.ModelStepTimeS/p.StepTimeS-1))
			}
			rows = append(rows, []string{strconv.Itoa(p.Nodes), strconv.Itoa(p.Replicas), strconv.Itoa(p.LocalBatch),
				formatStepTime(p.StepTimeS), formatStepTime(p.ModelStepTimeS), rel})
		}
		if len(tm.Points) > 0 {
			out += "\n\n" + formatList(rows)
		}
		if len(tm.Points) < tm.Configs {
			out += fmt.Sprintf("\n(%d of %d configurations shown)", len(tm.Points), tm.Configs)
		}
		parts = append(parts, out)
	}
	return strings.Join(parts, "\n\n")
}

// formatEvents lists the last n events, oldest first.
func formatEvents(events []*api.Event, n int) string {
	if len(events) == 0 {
		return "No events"
	}
	if len(events) > n {
		events = events[len(events)-n:]
	}
	rows := [][]string{{"Time", "Type", "Message"}}
	for _, e := range events {
		rows = append(rows, []string{formatTime(e.Time), e.Type, e.Message})
	}
	return formatList(rows)
}

// placementCounts is "1 ps, 3 workers on 2 nodes".
func placementCounts(p *api.Placement) string {
	s := structs.Plural(p.NumWorkers, "worker") + " on " + structs.Plural(len(p.Nodes), "node")
	if p.NumPS > 0 {
		s = fmt.Sprintf("%d ps, %s", p.NumPS, s)
	}
	if p.Paused() {
		s += " (paused)"
	}
	return s
}

// formatRunning describes what runs of a job while it differs from its
// desired placement, or while a change is in flight or was aborted; ""
// when what runs is what was decided.
func formatRunning(sum *api.JobSummary, verbose bool) string {
	o := sum.Observed
	if o == nil || api.Terminal(sum.Job.Status) {
		return ""
	}
	var desired *api.Placement
	if sum.Placement != nil {
		desired = sum.Placement.Placement
	}
	c := o.Change
	if o.Placement.SameTasks(desired) && (c == nil || c.Phase == api.ChangeDone) && len(o.Failures) == 0 {
		return ""
	}
	running := "no task runs"
	if o.Placement != nil {
		running = placementCounts(o.Placement)
	}
	kv := [][2]string{{"Tasks", running}}
	if c != nil {
		kv = append(kv,
			[2]string{"Change", fmt.Sprintf("%s to %s (plan index %d) since %s", c.Phase, placementCounts(c.Target), c.PlanIndex, formatTime(c.Since))},
			[2]string{"Change Status", c.Message})
	}
	out := formatKV(kv)
	if o.Placement != nil && len(o.Placement.Nodes) > 0 {
		out += "\n\n" + formatPlacementNodes(o.Placement, sum.GPUTypes, verbose)
	}
	return out + formatFailures(o.Failures)
}

// formatPlacement is a placement's table of tasks per node and role,
// followed by its reason; verbose prints full node IDs.
func formatPlacement(p *api.Placement, verbose bool) string {
	out := formatPlacementNodes(p, nil, verbose)
	if p.Reason != "" {
		out += "\nReason: " + p.Reason
	}
	return out
}

// formatPlacementFailure says why a paused placement runs nothing, as
// Nomad prints an allocation's metric: the metric's summary, then its
// details as a list. Without a metric it is the placement's reason.
func formatPlacementFailure(p *api.Placement) string {
	if p.Metric == nil {
		return orDash(p.Reason)
	}
	m, err := asServer[structs.PlacementMetric](p.Metric)
	if err != nil {
		return orDash(p.Reason)
	}
	lines := []string{m.Summary()}
	for _, d := range m.Details() {
		lines = append(lines, "* "+d)
	}
	return strings.Join(lines, "\n")
}

// formatPlacementNodes tabulates a placement's tasks: one row per node and
// role, with short node IDs unless verbose, and each node's GPU type from
// types (JobSummary.GPUTypes) when it holds any.
func formatPlacementNodes(p *api.Placement, types map[string]string, verbose bool) string {
	header := []string{"Node ID", "Role", "Count"}
	if len(types) > 0 {
		header = append(header, "GPU Type")
	}
	rows := [][]string{header}
	row := func(node, role string, count int) []string {
		r := []string{nodeID(node, verbose), role, strconv.Itoa(count)}
		if len(types) > 0 {
			r = append(r, orDash(types[node]))
		}
		return r
	}
	for _, n := range p.Nodes {
		if n.PS > 0 {
			rows = append(rows, row(n.NodeID, api.RolePS, n.PS))
		}
		if n.Workers > 0 {
			rows = append(rows, row(n.NodeID, api.RoleWorker, n.Workers))
		}
	}
	return formatList(rows)
}

// placementGPUTypes is the GPU types of a placement's nodes (from types,
// JobSummary.GPUTypes), sorted and without repeats: "Tesla T4", or
// "A100-SXM4-40GB, Tesla T4" for a placement that spans types; "" when no
// node of it has one.
func placementGPUTypes(p *api.Placement, types map[string]string) string {
	var out []string
	for _, n := range p.Nodes {
		if t := types[n.NodeID]; t != "" {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), ", ")
}

// formatRejected describes a job declared in Nomad at a version Caravan
// rejected: where it was declared and each error on its own line, as
// `caravan job validate` would list them. It has no spec, placement or
// model to show.
func formatRejected(job *api.Job, events []*api.Event, verbose bool) string {
	kv := [][2]string{
		{"ID", job.ID},
		{"Name", job.Name},
		{"Namespace", job.Namespace},
		{"Status", job.Status},
		{"Submit Date", formatTime(job.SubmitTime)},
	}
	if n := job.Nomad; n != nil {
		kv = append(kv, [2]string{"Declared In", fmt.Sprintf("Nomad job %q, version at job modify index %d, stopped in Nomad by Caravan; fix the job file and run it again with nomad job run", job.ID, n.JobModifyIndex)})
	}
	var b strings.Builder
	b.WriteString(formatKV(kv))
	b.WriteString("\n\nRejected\n")
	for _, e := range strings.Split(job.StatusDescription, "\n") {
		b.WriteString(e + "\n")
	}
	out := strings.TrimSuffix(b.String(), "\n")
	if verbose {
		out += "\n\nRecent Events\n" + formatEvents(events, 10)
	}
	return out
}
