package main

import (
	"strings"

	"github.com/caravan-sched/caravan/api"
)

// formatFailures renders the cluster's failures for a job's tasks as
// Nomad's job status renders its placement failures: a heading, then per
// failure its summary and its metric lines, indented; "" when there are
// none.
func formatFailures(fs []*api.Failure) string {
	if len(fs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nCluster Failures")
	for _, f := range fs {
		b.WriteString("\n" + f.Summary)
		for _, d := range f.Details {
			b.WriteString("\n  * " + d)
		}
	}
	return b.String()
}
