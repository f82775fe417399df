package queuespec

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/shoenig/test/must"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestParse_Valid parses every file in testdata/valid and compares the
// queues, as JSON, with the .json file beside it.
func TestParse_Valid(t *testing.T) {
	files, err := filepath.Glob("testdata/valid/*.hcl")
	must.NoError(t, err)
	must.SliceNotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			queues, diags := ParseFile(file)
			must.Len(t, 0, diags, must.Sprint(diags.Error()))
			must.SliceNotEmpty(t, queues)
			got, err := json.MarshalIndent(queues, "", "  ")
			must.NoError(t, err)
			golden(t, strings.TrimSuffix(file, ".hcl")+".json", string(got)+"\n")
		})
	}
}

// TestParse_Invalid parses every file in testdata/invalid and compares all
// of its diagnostics, one "file:line:col: summary: detail" line each, with
// the .errors file beside it. No invalid file may yield a queue.
func TestParse_Invalid(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.hcl")
	must.NoError(t, err)
	must.SliceNotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			queues, diags := ParseFile(file)
			must.Nil(t, queues)
			must.True(t, diags.HasErrors())
			for _, d := range diags {
				must.NotNil(t, d.Subject, must.Sprintf("%s: %s has no source range", d.Summary, d.Detail))
			}
			golden(t, strings.TrimSuffix(file, ".hcl")+".errors", render(diags))
		})
	}
}

// render prints diagnostics in source order, one per line.
func render(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		pos := "-"
		if d.Subject != nil {
			pos = fmt.Sprintf("%s:%d:%d", filepath.Base(d.Subject.Filename), d.Subject.Start.Line, d.Subject.Start.Column)
		}
		fmt.Fprintf(&b, "%s: %s: %s\n", pos, d.Summary, d.Detail)
	}
	return b.String()
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		must.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	must.NoError(t, err, must.Sprint("run go test ./queuespec -update to create it"))
	must.Eq(t, string(want), got)
}

// TestParse_Values checks the parsed queues field by field, beside the
// golden JSON: the limits' nil and non-nil, the defaults, the order.
func TestParse_Values(t *testing.T) {
	queues, diags := ParseFile("testdata/valid/full.hcl")
	must.Len(t, 0, diags, must.Sprint(diags.Error()))
	must.SliceLen(t, 3, queues)
	nlp, vision, def := queues[0], queues[1], queues[2]
	must.Eq(t, &structs.Queue{
		Name:       "nlp",
		Namespaces: []string{"nlp-*", "translation"},
		Weight:     2,
		Cohort:     "research",
		Quota: structs.QueueQuota{
			GPU: []*structs.GPUQuota{
				{Type: "A100", Nominal: 16, BorrowingLimit: new(16), LendingLimit: new(8)},
				{Type: "*", Nominal: 4},
			},
			CPU:      256000,
			MemoryMB: 1048576,
		},
	}, nlp)
	must.Eq(t, 1.5, vision.Weight)
	must.Eq(t, []*structs.GPUQuota{{Type: "H100"}}, vision.Quota.GPU)
	must.Eq(t, &structs.Queue{Name: structs.DefaultQueue, Weight: structs.DefaultWeight, Quota: structs.QueueQuota{CPU: 64000}}, def)
	must.Eq(t, "nlp", structs.QueueFor(queues, "nlp-dev"))
}

func TestParseFile_Unreadable(t *testing.T) {
	queues, diags := ParseFile(filepath.Join(t.TempDir(), "missing.hcl"))
	must.Nil(t, queues)
	must.StrContains(t, diags.Error(), "Failed to read queue file")
}

// TestParser_Files checks that a Parser keeps what it parsed, to render
// diagnostics with their source lines.
func TestParser_Files(t *testing.T) {
	p := NewParser()
	_, diags := p.ParseFile("testdata/invalid/lending_over_nominal.hcl")
	must.True(t, diags.HasErrors())
	must.MapContainsKey(t, p.Files(), "testdata/invalid/lending_over_nominal.hcl")
	var b strings.Builder
	w := hcl.NewDiagnosticTextWriter(&b, p.Files(), 100, false)
	must.NoError(t, w.WriteDiagnostics(diags))
	must.StrContains(t, b.String(), "lending_limit = 12")
}

// TestParse_Example parses the queues of the two-team example.
func TestParse_Example(t *testing.T) {
	queues, diags := ParseFile("../examples/teams/queues.hcl")
	must.False(t, diags.HasErrors(), must.Sprint(diags))
	must.SliceLen(t, 2, queues)
	must.Eq(t, "research", queues[1].Cohort)
	must.Eq(t, 4, *queues[1].Quota.GPU[0].BorrowingLimit)
}
