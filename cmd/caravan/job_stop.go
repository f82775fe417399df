package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/caravan-sched/caravan/api"
)

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
` + generalOptions)
}

func (c *JobStopCommand) Run(args []string) int {
	var purge bool
	flags := c.FlagSet("job stop")
	flags.BoolVar(&purge, "purge", false, "")
	client, ok := c.agentCommand(flags, args, c.Help(), oneArgument("<job>"))
	if !ok {
		return 1
	}
	job, ok := c.resolveJob(client, flags.Arg(0))
	if !ok {
		return 1
	}
	id := job.ID
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if _, err := client.Jobs().Stop(id, purge, (&api.WriteOptions{Namespace: job.Namespace}).WithContext(ctx)); err != nil {
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
