package main

import (
	"strings"

	"github.com/caravan-sched/caravan/version"
)

// VersionCommand prints the version.
type VersionCommand struct {
	Meta
}

func (c *VersionCommand) Synopsis() string { return "Prints the Caravan version" }

func (c *VersionCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan version

  Prints the version of this Caravan binary.`)
}

func (c *VersionCommand) Run(args []string) int {
	c.Ui.Output(version.String())
	return 0
}
