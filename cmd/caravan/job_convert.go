package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/caravan-sched/caravan/jobspec"
)

// JobConvertCommand turns a Caravan jobspec into a Nomad job file with
// caravan scaling policies, and back.
type JobConvertCommand struct {
	Meta
}

func (c *JobConvertCommand) Synopsis() string {
	return "Converts a job between a Caravan jobspec and a Nomad job file"
}

func (c *JobConvertCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan job convert [options] <path>

  Converts the job at <path> ("-" reads standard input) between the two
  formats Caravan reads, and prints it as HCL on standard output:

  - a Caravan ML jobspec, which "caravan job run" submits;
  - a Nomad job file whose groups carry a caravan scaling policy, which
    "nomad job run" submits and Caravan's leader takes over from Nomad.

  The job is parsed and checked first, as "caravan job validate" does, and
  written from what was parsed: variables and locals are evaluated (the
  file holds their values, not var.* references), arguments equal to their
  defaults are left out, and comments are not kept.

  A Nomad job file has much that a Caravan jobspec has no place for:
  services, templates, networks, volumes, restart and reschedule policies,
  the tasks of a group besides its main one (whose resources are added to
  the role's), other scaling policies. Converting to a Caravan jobspec
  leaves them out, with a warning at each on standard error.

Convert Options:

  -to=<format>
    The format to write: "nomad" or "caravan". Default: the one <path> is
    not in.

  -out=<path>
    Writes the result to <path> instead of standard output.
` + jobspecOptions + `
` + generalOptions)
}

func (c *JobConvertCommand) Run(args []string) int {
	var jf jobspecFlags
	var to, out string
	flags := c.FlagSet("job convert")
	jf.register(flags)
	flags.StringVar(&to, "to", "", "")
	flags.StringVar(&out, "out", "", "")
	if !c.parseArgs(flags, args, c.Help(), oneArgument("<path>")) {
		return 1
	}
	switch to {
	case "", jobspec.FormatNomad, jobspec.FormatCaravan:
	default:
		c.usageError(fmt.Sprintf("-to %q is not a format: use %q or %q", to, jobspec.FormatNomad, jobspec.FormatCaravan), c.Help())
		return 1
	}
	job, from, p := c.parseAnyJobspec(flags.Arg(0), &jf)
	if job == nil {
		return 1
	}
	if to == "" {
		to = jobspec.FormatNomad
		if from == jobspec.FormatNomad {
			to = jobspec.FormatCaravan
		}
	}
	src, diags := jobspec.FormatJob(job, to)
	if from == jobspec.FormatNomad && to == jobspec.FormatCaravan {
		diags = append(jobspec.NomadOnly(p.Files()[jobspecName(flags.Arg(0))]), diags...)
	}
	c.printDiagnostics(p.Files(), diags)
	if diags.HasErrors() {
		return 1
	}
	if out != "" {
		if err := os.WriteFile(out, src, 0o644); err != nil {
			c.Ui.Error(fmt.Sprintf("Error writing %s: %v", out, err))
			return 1
		}
		return 0
	}
	c.Ui.Output(strings.TrimSuffix(string(src), "\n"))
	return 0
}
