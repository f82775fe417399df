package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// requestTimeout bounds a single write to the agent.
const requestTimeout = time.Minute

// JobStopCommand stops a job, and with -purge deletes it.
type JobStopCommand struct {
	Meta
}

func (c *JobStopCommand) Synopsis() string { return "Stops a running job" }

func (c *JobStopCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan job stop [options] <job>

  Stops the job: the scheduler frees its tasks at its next round and the job
  ends with status "stopped". Its versions and placement history are kept
  unless -purge is given.

Stop Options:

  -purge
    Also deletes the job, its versions and its history.

  -namespace=<ns>
    The namespace of <job>. Default: default.
` + generalOptions)
}

func (c *JobStopCommand) Run(args []string) int {
	var purge bool
	var namespace string
	flags := c.FlagSet("job stop")
	flags.BoolVar(&purge, "purge", false, "")
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
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if err := client.Jobs().Stop(ctx, namespace, id, purge); err != nil {
		c.apiError(fmt.Sprintf("stopping job %q", id), err)
		return 1
	}
	if purge {
		c.Ui.Output(fmt.Sprintf("==> Job %q stopped and purged", id))
	} else {
		c.Ui.Output(fmt.Sprintf("==> Job %q stopped", id))
	}
	return 0
}
