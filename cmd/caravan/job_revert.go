package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/api"
)

// JobRevertCommand registers an earlier version of a job again.
type JobRevertCommand struct {
	Meta
}

func (c *JobRevertCommand) Synopsis() string { return "Reverts a job to an earlier version" }

func (c *JobRevertCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan job revert [options] <job> <version>

  Registers the spec of version <version> of the job as its next version,
  as Nomad's job revert does; "caravan job versions" lists the versions. A
  revert is a registration like "caravan job run": reverting to the spec the
  active job has changes nothing, and a job that has ended runs again. It
  returns once the version is registered; "caravan job status" follows it.

Revert Options:

  -prior-version=<n>
    Reverts only if the job's current version is <n>, so that a version
    someone registered meanwhile is not overwritten.
` + jsonOption("the registration") + `
` + generalOptions)
}

func (c *JobRevertCommand) Run(args []string) int {
	var asJSON bool
	var prior string
	flags := c.FlagSet("job revert")
	flags.BoolVar(&asJSON, "json", false, "")
	flags.StringVar(&prior, "prior-version", "", "")
	client, ok := c.agentCommand(flags, args, c.Help(), arguments{2, 2, "This command takes two arguments: <job> <version>"})
	if !ok {
		return 1
	}
	job, ok := c.resolveJob(client, flags.Arg(0))
	if !ok {
		return 1
	}
	id := job.ID
	req := &api.JobRevertRequest{}
	var err error
	if req.Version, err = strconv.ParseUint(flags.Arg(1), 10, 64); err != nil {
		c.usageError(fmt.Sprintf("%q is not a version number", flags.Arg(1)), c.Help())
		return 1
	}
	if prior != "" {
		n, err := strconv.ParseUint(prior, 10, 64)
		if err != nil {
			c.usageError(fmt.Sprintf("-prior-version %q is not a version number", prior), c.Help())
			return 1
		}
		req.EnforcePriorVersion = &n
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	resp, _, err := client.Jobs().Revert(id, req, (&api.WriteOptions{Namespace: job.Namespace}).WithContext(ctx))
	if err != nil {
		c.apiError(fmt.Sprintf("reverting job %q to version %d", id, req.Version), err)
		return 1
	}
	return c.output(asJSON, resp, func() string {
		if resp.Unchanged {
			return fmt.Sprintf("==> Job %q unchanged: version %d has the spec of the current version %d", id, req.Version, resp.Version)
		}
		return fmt.Sprintf("==> Job %q reverted to version %d: registered as version %d (index %d)", id, req.Version, resp.Version, resp.Index)
	})
}
