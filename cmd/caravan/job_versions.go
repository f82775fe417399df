package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/structs"
)

// maxChanges is how many changed fields a row of job versions names.
const maxChanges = 3

// JobVersionsCommand lists the versions of a job.
type JobVersionsCommand struct {
	Meta
}

func (c *JobVersionsCommand) Synopsis() string { return "Lists a job's versions" }

func (c *JobVersionsCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan job versions [options] <job>

  Lists the versions of a registered job, newest first: when each was
  submitted and what it changed from the version before, field by field at
  jobspec paths ("elastic.workers.max 24 → 12"), as "caravan job plan" shows
  a change before it is made. "caravan job inspect -version <n>" prints a
  version and "caravan job revert" registers one again.

Versions Options:
` + jsonOption("the versions (whole jobs)") + `
` + generalOptions)
}

func (c *JobVersionsCommand) Run(args []string) int {
	var asJSON bool
	flags := c.FlagSet("job versions")
	flags.BoolVar(&asJSON, "json", false, "")
	client, ok := c.agentCommand(flags, args, c.Help(), oneArgument("<job>"))
	if !ok {
		return 1
	}
	job, ok := c.resolveJob(client, flags.Arg(0))
	if !ok {
		return 1
	}
	id := job.ID
	versions, _, err := client.Jobs().Versions(id, job.query())
	if err != nil {
		c.apiError(fmt.Sprintf("reading the versions of job %q", id), err)
		return 1
	}
	// The server's Job diffs versions as the server does.
	jobs, err := asServer[[]*structs.Job](versions)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the versions of job %q: %v", id, err))
		return 1
	}
	return c.output(asJSON, versions, func() string { return formatVersions(jobs) })
}

// formatVersions tabulates versions, newest first, each with what it
// changed from the one before it.
func formatVersions(versions []*structs.Job) string {
	rows := [][]string{{"Version", "Submitted", "Changes"}}
	for i, v := range versions {
		var prev *structs.Job
		if i+1 < len(versions) {
			prev = versions[i+1]
		}
		rows = append(rows, []string{strconv.FormatUint(v.Version, 10), formatTime(v.SubmitTime), versionChanges(prev, v)})
	}
	return formatList(rows)
}

// versionChanges summarizes what v changed from prev, the version before it
// (nil for the first), on one line.
func versionChanges(prev, v *structs.Job) string {
	switch d := prev.Diff(v); {
	case prev == nil:
		return "first version"
	case !d.Changed():
		return "same spec, run again"
	default:
		parts := make([]string, 0, maxChanges+1)
		for _, f := range d.Fields[:min(len(d.Fields), maxChanges)] {
			parts = append(parts, f.String())
		}
		if more := len(d.Fields) - maxChanges; more > 0 {
			parts = append(parts, fmt.Sprintf("and %d more", more))
		}
		return strings.Join(parts, ", ")
	}
}
