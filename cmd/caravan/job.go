package main

import (
	"strings"

	"github.com/hashicorp/cli"
)

// JobCommand is the parent of the job subcommands; alone it prints help.
type JobCommand struct {
	Meta
}

func (c *JobCommand) Synopsis() string { return "Work with ML jobs" }

func (c *JobCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan job <subcommand> [options] [args]

  Works with Caravan ML jobs, described in HCL jobspecs.

  Check a jobspec for mistakes:

      $ caravan job validate train.hcl

  Print a jobspec as the job Caravan would store, in JSON:

      $ caravan job inspect -json train.hcl

  Please see the individual subcommand help for detailed usage information.`)
}

func (c *JobCommand) Run(args []string) int { return cli.RunResultHelp }
