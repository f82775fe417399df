package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/jobspec"
)

// JobInspectCommand prints a job as Caravan stores it: a registered job, or
// the job a jobspec file describes.
type JobInspectCommand struct {
	Meta
}

func (c *JobInspectCommand) Synopsis() string { return "Prints a job as JSON" }

func (c *JobInspectCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan job inspect [options] <job>
       caravan job inspect [options] <path>

  With a job ID, prints the registered job as JSON under "Job", as Nomad's
  job inspect does ({"Job": {...}}): its spec with the status, version and
  indexes the server stamped. -version prints an earlier version ("caravan
  job versions" lists them).

  When the argument is an existing file, or "-" for standard input, parses
  that jobspec, of either format "caravan job validate" takes (an ML
  jobspec, or a Nomad job file whose groups carry a caravan scaling
  policy), and prints the job Caravan would store instead, in the same
  {"Job": {...}} shape, which is the body POST /v1/jobs takes:
  canonicalized, with every default filled in. Mistakes are reported as by
  "caravan job validate"; nothing is sent to an agent.

Inspect Options:

  -version=<n>
    Prints version <n> of the registered job.

  -json
    Prints the job as JSON (the only output format so far; accepted for
    compatibility with Nomad's CLI).
` + jobspecOptions + `
` + generalOptions)
}

func (c *JobInspectCommand) Run(args []string) int {
	var jf jobspecFlags
	var version string
	flags := c.FlagSet("job inspect")
	jf.register(flags)
	flags.Bool("json", false, "")
	flags.StringVar(&version, "version", "", "")
	if !c.parseArgs(flags, args, c.Help(), oneArgument("<job> or <path>")) {
		return 1
	}
	arg := flags.Arg(0)
	if isJobspecPath(arg) {
		if version != "" {
			c.usageError("-version applies to a registered job, not to a jobspec file", c.Help())
			return 1
		}
		job, format, _ := c.parseAnyJobspec(arg, &jf)
		if job == nil {
			if format == jobspec.FormatNomad {
				c.Ui.Error(nomadChecked)
			}
			return 1
		}
		return c.outputJSON(inspected{job})
	}
	if strings.ContainsRune(arg, '/') {
		c.Ui.Error(fmt.Sprintf("Error: no file %s (a job ID has no \"/\")", arg))
		return 1
	}
	client, ok := c.client()
	if !ok {
		return 1
	}
	job, ok := c.resolveJob(client, arg)
	if !ok {
		return 1
	}
	arg, q := job.ID, job.query()
	if version == "" {
		job, _, err := client.Jobs().Info(arg, q)
		if err != nil {
			c.inspectError(arg, err)
			return 1
		}
		return c.outputJSON(inspected{job})
	}
	n, err := strconv.ParseUint(version, 10, 64)
	if err != nil {
		c.usageError(fmt.Sprintf("-version %q is not a version number", version), c.Help())
		return 1
	}
	versions, _, err := client.Jobs().Versions(arg, q)
	if err != nil {
		c.inspectError(arg, err)
		return 1
	}
	for _, v := range versions {
		if v.Version == n {
			return c.outputJSON(inspected{v})
		}
	}
	c.Ui.Error(fmt.Sprintf("Error: job %q has no version %d; \"caravan job versions %s\" lists them", arg, n, arg))
	return 1
}

// inspected is what job inspect prints: the job under "Job", as Nomad's
// job inspect prints it, which is also the body POST /v1/jobs takes.
type inspected struct {
	Job any
}

// isJobspecPath reports whether the argument of job inspect names a jobspec
// rather than a job: "-" or an existing file.
func isJobspecPath(arg string) bool {
	if arg == "-" {
		return true
	}
	info, err := os.Stat(arg)
	return err == nil && !info.IsDir()
}

// inspectError prints why job id could not be read, saying that no file
// has that name either when the agent does not know the job.
func (c *JobInspectCommand) inspectError(id string, err error) {
	var apiErr *api.Error
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound {
		c.Ui.Error(fmt.Sprintf("Error: no job %q is registered, and no file has that path", id))
		return
	}
	c.apiError(fmt.Sprintf("reading job %q", id), err)
}
