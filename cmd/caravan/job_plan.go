package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/jobspec"
)

// Exit codes of job plan, as Nomad's.
const (
	planUnchanged = 0
	planChanged   = 1
	planError     = 255
)

// JobPlanCommand shows what running a jobspec would change, committing
// nothing.
type JobPlanCommand struct {
	Meta
}

func (c *JobPlanCommand) Synopsis() string {
	return "Dry-runs a job to show what running it would change"
}

func (c *JobPlanCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan job plan [options] <path>

  Parses the jobspec at <path> ("-" reads standard input), of either format
  "caravan job validate" takes (an ML jobspec, or a Nomad job file whose
  groups carry a caravan scaling policy, planned as the job Caravan takes
  over from Nomad; "nomad job plan" plans the rest of it), shows how it
  differs from the registered version of the job, field by field (+ added,
  - removed, ~ changed; +/- when the registered job has ended and a run
  starts it anew), and asks the leader's scheduler which placement the job
  would get now, beside the jobs already running: its parameter servers and
  workers per node, and why. Nothing is registered or changed.

  Exit codes, as Nomad's:
    0   - no change: the spec is the registered one and the placement stays
    1   - "caravan job run" would change something
    255 - an error

Plan Options:
` + jsonOption("the plan answer") + `
` + jobspecOptions + `
` + generalOptions)
}

func (c *JobPlanCommand) Run(args []string) int {
	var asJSON bool
	job, format := c.jobspecCommand("job plan", args, c.Help(), func(f *flag.FlagSet) {
		f.BoolVar(&asJSON, "json", false, "")
	})
	if job == nil {
		return planError
	}
	if format == jobspec.FormatNomad {
		// The agent plans the job Caravan would take over from Nomad;
		// Nomad is what Caravan records of the Nomad job version then,
		// which a file does not have and the agent does not take.
		job.Nomad = nil
	}
	client, ok := c.client()
	if !ok {
		return planError
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	resp, _, err := client.Jobs().Plan(&api.JobRegisterRequest{Job: job}, writeOpts(ctx))
	if err != nil {
		c.apiError(fmt.Sprintf("planning job %q", job.ID), err)
		return planError
	}
	submit := "caravan job run " + args[len(args)-1]
	if format == jobspec.FormatNomad {
		submit = "nomad job run " + args[len(args)-1]
		nomadPlan(resp)
	}
	if c.output(asJSON, resp, func() string { return formatPlan(job.ID, submit, resp) }) != 0 {
		return planError
	}
	if resp.Changed {
		return planChanged
	}
	return planUnchanged
}

// nomadPlan leaves out of resp, the plan of a Nomad job file, the
// differences in the nomad fields of a job registered from Nomad: Caravan
// sets them from the Nomad job version when it takes the job over, and a
// file never has them. What is left says whether running the file would
// change anything.
func nomadPlan(resp *api.PlanResponse) {
	d := resp.Diff
	if d == nil || d.Type != api.DiffTypeEdited {
		return
	}
	d.Fields = slices.DeleteFunc(d.Fields, func(f *api.FieldDiff) bool { return strings.HasPrefix(f.Path, "nomad.") })
	if !d.Changed() {
		d.Type = api.DiffTypeNone
	}
	resp.Changed = api.Terminal(resp.Status) || d.Changed() || !resp.Placement.SameTasks(resp.Current)
}

// formatPlan describes how job id differs from its registered version and
// the placement it would get, and the command line submit that submits it.
func formatPlan(id, submit string, resp *api.PlanResponse) string {
	var b strings.Builder
	b.WriteString(formatJobDiff(id, resp) + "\n")
	if resp.Diff != nil && resp.Diff.Type != api.DiffTypeAdded && resp.Diff.Changed() {
		b.WriteString("\n")
	}
	if p := resp.Placement; p == nil || p.Paused() {
		b.WriteString("  The job would not be placed now.")
		if p != nil && p.Reason != "" {
			b.WriteString("\n  Reason: " + p.Reason)
		}
	} else {
		b.WriteString("  Placement: " + placementCounts(p) + placementChange(p, resp) + "\n\n")
		b.WriteString(indent(formatPlacement(p, false)))
	}
	if resp.Plan != nil {
		fmt.Fprintf(&b, "\n\nScheduler dry run by %s: %d jobs in the plan.", resp.Plan.Algorithm, len(resp.Plan.Placements))
	}
	if !resp.Changed {
		fmt.Fprintf(&b, "\n\nJob %q is registered as version %d with this spec and placement: running it changes nothing.", id, resp.Version)
		return b.String()
	}
	b.WriteString("\n\nTo submit the job, run:\n  " + submit)
	return b.String()
}

// formatJobDiff is the job's header line, marked as Nomad's job plan marks
// it, followed by its changed fields, aligned.
func formatJobDiff(id string, resp *api.PlanResponse) string {
	d := resp.Diff
	if d == nil {
		d = &api.JobDiff{Type: api.DiffTypeAdded}
	}
	var b strings.Builder
	switch {
	case d.Type == api.DiffTypeAdded:
		fmt.Fprintf(&b, "+ Job: %q", id)
	case api.Terminal(resp.Status):
		fmt.Fprintf(&b, "+/- Job: %q (version %d is %s; a run starts it anew)", id, resp.Version, resp.Status)
	case d.Changed():
		fmt.Fprintf(&b, "~ Job: %q (version %d)", id, resp.Version)
	default:
		fmt.Fprintf(&b, "  Job: %q (version %d, unchanged)", id, resp.Version)
	}
	if d.Type == api.DiffTypeAdded {
		return b.String() // every field is new: the placement says enough
	}
	width := 0
	for _, f := range d.Fields {
		width = max(width, len(f.Path))
	}
	for _, f := range d.Fields {
		pad := strings.Repeat(" ", width-len(f.Path))
		switch f.Type {
		case api.DiffTypeAdded:
			fmt.Fprintf(&b, "\n  + %s: %s%s", f.Path, pad, f.New)
		case api.DiffTypeDeleted:
			fmt.Fprintf(&b, "\n  - %s: %s%s", f.Path, pad, f.Old)
		default:
			fmt.Fprintf(&b, "\n  ~ %s: %s%s => %s", f.Path, pad, f.Old, f.New)
		}
	}
	return b.String()
}

// placementChange says how the planned placement p compares with the
// job's placement now, empty for a job that has none.
func placementChange(p *api.Placement, resp *api.PlanResponse) string {
	switch cur := resp.Current; {
	case cur == nil || cur.Paused():
		return ""
	case p.SameTasks(cur):
		return " (unchanged)"
	default:
		return " (now " + placementCounts(cur) + ")"
	}
}
