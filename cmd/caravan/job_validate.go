package main

import (
	"strings"

	"github.com/caravan-sched/caravan/jobspec"
)

// JobValidateCommand checks a jobspec, of either format, without
// submitting it.
type JobValidateCommand struct {
	Meta
}

// nomadChecked says what validate checked of a Nomad job file.
const nomadChecked = `Checked as a Nomad job file: only what Caravan reads (the groups' caravan scaling policies and bounds, and their tasks as role templates); "nomad job validate" checks the rest.`

func (c *JobValidateCommand) Synopsis() string { return "Checks a jobspec for mistakes" }

func (c *JobValidateCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan job validate [options] <path>

  Checks the ML jobspec at <path> ("-" reads standard input): its HCL syntax,
  every block and argument, and the rules of the job (bounds, batch sizes,
  devices, constraints). Every mistake is reported, with its file, line and
  column. Exits 0 when the jobspec is valid and 1 otherwise.

  <path> may also be a Nomad job file whose groups carry a caravan scaling
  policy, which "nomad job run" submits and Caravan takes over from Nomad
  ("caravan job convert" writes one from a jobspec). Of such a file only
  what Caravan reads is checked: the caravan blocks, the groups' scaling
  bounds, the job's type, and the groups' tasks as role templates. The rest
  is Nomad's to check, with "nomad job validate".
` + jobspecOptions + `
` + generalOptions)
}

func (c *JobValidateCommand) Run(args []string) int {
	var jf jobspecFlags
	flags := c.FlagSet("job validate")
	jf.register(flags)
	if !c.parseArgs(flags, args, c.Help(), oneArgument("<path>")) {
		return 1
	}
	job, format, _ := c.parseAnyJobspec(flags.Arg(0), &jf)
	if job == nil {
		if format == jobspec.FormatNomad {
			c.Ui.Error(nomadChecked)
		}
		return 1
	}
	if format == jobspec.FormatNomad {
		c.Ui.Output(nomadChecked)
	}
	c.Ui.Output("Job validation successful")
	return 0
}
