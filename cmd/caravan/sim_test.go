package main

import (
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/simulate"
	"github.com/shoenig/test/must"
)

// TestFormatSimTables: the tables' columns line up whatever the widths
// of the values, and a resource no policy used reads "-" with a note.
func TestFormatSimTables(t *testing.T) {
	results := []*simulate.Result{
		{Policy: "optimus-relative", Summary: simulate.Summary{AvgJCT: 4053.4, P50JCT: 12, P99JCT: 123456, Makespan: 99999, GPUUtil: 0.987, Rescales: 1234}, Wall: 1500 * time.Millisecond},
		{Policy: "fifo", Summary: simulate.Summary{AvgJCT: 5, GPUUtil: 0.1, NetUtil: 0.25}, Wall: 2 * time.Second},
	}
	out := formatSimTables(&simulate.Report{}, results)
	lines := strings.Split(out, "\n")
	header, a, b := lines[0], lines[1], lines[2]
	must.StrHasPrefix(t, "Policy", header)
	for _, col := range []struct{ name, a, b string }{{"Avg JCT (s)", "4053", "5"}, {"P99 JCT (s)", "123456", "0"}, {"GPU Util", "98.7%", "10.0%"},
		{"CPU Util", "-", "-"}, {"Net Util", "0.0%", "25.0%"}, {"Rescales", "1234", "0"}, {"Wall", "1.5s", "2s"}} {
		at := strings.Index(header, col.name)
		must.Positive(t, at, must.Sprint(col.name))
		must.StrHasPrefix(t, col.a, a[at:], must.Sprintf("%s in %q", col.name, a))
		must.StrHasPrefix(t, col.b, b[at:], must.Sprintf("%s in %q", col.name, b))
	}
	must.StrContains(t, out, "-: no job of the workload models this resource's use")
	must.StrContains(t, out, "Policy            Res Util")
}
