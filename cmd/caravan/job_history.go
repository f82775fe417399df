package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/api"
)

// JobHistoryCommand lists the placements a job has had.
type JobHistoryCommand struct {
	Meta
}

func (c *JobHistoryCommand) Synopsis() string { return "Displays a job's placement history" }

func (c *JobHistoryCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan job history [options] <job>

  Lists the placements that ran of the job, newest first, as its driver
  reported them: when, at which plan index and by which algorithm they were
  decided, how many parameter servers and workers on which nodes, and why.
  A change that was aborted never ran, so it is not listed; "caravan job
  status" shows a change under way.

History Options:

  -verbose
    Prints full node IDs.
` + jsonOption("the history") + `
` + generalOptions)
}

func (c *JobHistoryCommand) Run(args []string) int {
	var asJSON, verbose bool
	flags := c.FlagSet("job history")
	flags.BoolVar(&asJSON, "json", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	client, ok := c.agentCommand(flags, args, c.Help(), oneArgument("<job>"))
	if !ok {
		return 1
	}
	job, ok := c.resolveJob(client, flags.Arg(0))
	if !ok {
		return 1
	}
	id := job.ID
	hist, _, err := client.Jobs().History(id, job.query())
	if err != nil {
		c.apiError(fmt.Sprintf("reading the history of job %q", id), err)
		return 1
	}
	return c.output(asJSON, hist, func() string { return formatHistory(id, hist, verbose) })
}

// formatHistory tabulates the placements of job id, one row each, with
// short node IDs unless verbose.
func formatHistory(id string, hist []*api.JobPlacement, verbose bool) string {
	if len(hist) == 0 {
		return fmt.Sprintf("Job %q has not been placed yet", id)
	}
	rows := [][]string{{"Time", "Plan Index", "Algorithm", "PS", "Workers", "Nodes", "Reason"}}
	for _, h := range hist {
		p := h.Placement
		if p == nil {
			continue
		}
		var nodes []string
		for _, n := range p.Nodes {
			nodes = append(nodes, nodeID(n.NodeID, verbose))
		}
		rows = append(rows, []string{formatTime(h.Time), strconv.FormatUint(h.PlanIndex, 10), h.Algorithm,
			strconv.Itoa(p.NumPS), strconv.Itoa(p.NumWorkers), orDash(strings.Join(nodes, ",")), p.Reason})
	}
	return formatList(rows)
}
