package main

import (
	"encoding/json"
	"flag"
	"strings"
)

// JobInspectCommand prints a job as Caravan stores it.
type JobInspectCommand struct {
	Meta
}

func (c *JobInspectCommand) Synopsis() string { return "Prints a job as JSON" }

func (c *JobInspectCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan job inspect [options] <path>

  Parses the ML jobspec at <path> ("-" reads standard input) and prints the
  job Caravan would store: canonicalized, with every default filled in, as
  JSON. Mistakes are reported as by "caravan job validate".

Inspect Options:

  -json
    Prints the job as JSON (the only output format so far; accepted for
    compatibility with Nomad's CLI).
` + jobspecOptions + `
` + generalOptions)
}

func (c *JobInspectCommand) Run(args []string) int {
	var asJSON bool
	job := c.jobspecCommand("job inspect", args, c.Help(), func(f *flag.FlagSet) {
		f.BoolVar(&asJSON, "json", false, "")
	})
	if job == nil {
		return 1
	}
	out, err := json.MarshalIndent(job, "", "  ")
	if err != nil {
		c.Ui.Error("Error encoding job: " + err.Error())
		return 1
	}
	c.Ui.Output(string(out))
	return 0
}
