package main

import (
	"strings"
)

// JobValidateCommand checks a jobspec without submitting it.
type JobValidateCommand struct {
	Meta
}

func (c *JobValidateCommand) Synopsis() string { return "Checks a jobspec for mistakes" }

func (c *JobValidateCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan job validate [options] <path>

  Checks the ML jobspec at <path> ("-" reads standard input): its HCL syntax,
  every block and argument, and the rules of the job (bounds, batch sizes,
  devices, constraints). Every mistake is reported, with its file, line and
  column. Exits 0 when the jobspec is valid and 1 otherwise.
` + jobspecOptions + `
` + generalOptions)
}

func (c *JobValidateCommand) Run(args []string) int {
	if c.jobspecCommand("job validate", args, c.Help(), nil) == nil {
		return 1
	}
	c.Ui.Output("Job validation successful")
	return 0
}
