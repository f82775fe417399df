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

  Lists the placements the scheduler gave the job, newest first: when, at
  which plan index and by which algorithm, how many parameter servers and
  workers on which nodes, and why.

History Options:

  -namespace=<ns>
    The namespace of <job>. Default: default.

  -json
    Prints the history as JSON.
` + generalOptions)
}

func (c *JobHistoryCommand) Run(args []string) int {
	var asJSON bool
	var namespace string
	flags := c.FlagSet("job history")
	flags.BoolVar(&asJSON, "json", false, "")
	flags.StringVar(&namespace, "namespace", "", "")
	if err := flags.Parse(args); err != nil {
		c.Ui.Error(err.Error() + "\n\n" + c.Help())
		return 1
	}
	if flags.NArg() != 1 {
		c.Ui.Error("This command takes one argument: <job>\n\n" + c.Help())
		return 1
	}
	id := flags.Arg(0)
	client, err := c.client()
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	hist, _, err := client.Jobs().History(id, &api.QueryOptions{Namespace: namespace})
	if err != nil {
		c.apiError(fmt.Sprintf("reading the history of job %q", id), err)
		return 1
	}
	if asJSON {
		return c.outputJSON(hist)
	}
	if len(hist) == 0 {
		c.Ui.Output(fmt.Sprintf("Job %q has not been placed yet", id))
		return 0
	}
	rows := [][]string{{"Time", "Plan Index", "Algorithm", "PS", "Workers", "Nodes", "Reason"}}
	for _, h := range hist {
		p := h.Placement
		if p == nil {
			continue
		}
		var nodes []string
		for _, n := range p.Nodes {
			nodes = append(nodes, n.NodeID)
		}
		nodeList := strings.Join(nodes, ",")
		if nodeList == "" {
			nodeList = "-"
		}
		rows = append(rows, []string{formatTime(h.Time), strconv.FormatUint(h.PlanIndex, 10), h.Algorithm,
			strconv.Itoa(p.NumPS), strconv.Itoa(p.NumWorkers), nodeList, p.Reason})
	}
	c.Ui.Output(formatList(rows))
	return 0
}
