package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/caravan-sched/caravan/api"
)

// JobPlanCommand shows the placement a job would get, committing nothing.
type JobPlanCommand struct {
	Meta
}

func (c *JobPlanCommand) Synopsis() string { return "Dry-runs a job to show its placement" }

func (c *JobPlanCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan job plan [options] <path>

  Parses the ML jobspec at <path> ("-" reads standard input) and asks the
  leader's scheduler which placement the job would get now, beside the jobs
  already running: its parameter servers and workers per node, and why.
  Nothing is registered or changed. Exits 0 when the plan was computed and 1
  on any error.

Plan Options:
` + jsonOption("the plan answer") + `
` + jobspecOptions + `
` + generalOptions)
}

func (c *JobPlanCommand) Run(args []string) int {
	var asJSON bool
	job := c.jobspecCommand("job plan", args, c.Help(), func(f *flag.FlagSet) {
		f.BoolVar(&asJSON, "json", false, "")
	})
	if job == nil {
		return 1
	}
	client, ok := c.client()
	if !ok {
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	resp, err := client.Jobs().Plan(ctx, &api.JobRegisterRequest{Job: job})
	if err != nil {
		c.apiError(fmt.Sprintf("planning job %q", job.ID), err)
		return 1
	}
	path := args[len(args)-1]
	return c.output(asJSON, resp, func() string { return formatPlan(job.ID, path, resp) })
}

// formatPlan describes the placement job id would get, and how to submit
// the jobspec at path.
func formatPlan(id, path string, resp *api.PlanResponse) string {
	var b strings.Builder
	fmt.Fprintf(&b, "+ Job: %q\n", id)
	if p := resp.Placement; p == nil || p.Paused() {
		b.WriteString("  The job would not be placed now.")
		if p != nil && p.Reason != "" {
			b.WriteString("\n  Reason: " + p.Reason)
		}
	} else {
		b.WriteString("  Placement: " + placementCounts(p) + "\n\n")
		b.WriteString(indent(formatPlacement(p)))
	}
	if resp.Plan != nil {
		fmt.Fprintf(&b, "\n\nScheduler dry run by %s: %d jobs in the plan.", resp.Plan.Algorithm, len(resp.Plan.Placements))
	}
	b.WriteString("\n\nTo submit the job, run:\n  caravan job run " + path)
	return b.String()
}
