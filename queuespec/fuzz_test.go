package queuespec

import (
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/internal/testutil"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/shoenig/test/must"
)

// FuzzParse feeds arbitrary bytes to the parser. It must never panic, and
// it must return either valid queues and no error, which Format writes
// and Parse reads back as equal, or no queue and errors that each say
// something and where.
//
//	go test ./queuespec -run '^$' -fuzz FuzzParse -fuzztime 5m
func FuzzParse(f *testing.F) {
	testutil.AddFiles(f, func(_ string, src []byte) { f.Add(src) }, "testdata/*/*.hcl")
	f.Add([]byte(`queue "a" { namespaces = ["a"] weight = 1e-320 }`))
	f.Add([]byte(`queue "a" { namespaces = ["a"] quota { gpu "x" { nominal = 9223372036854775807 } } }`))
	f.Fuzz(func(t *testing.T, src []byte) {
		queues, diags := Parse(src, "fuzz.hcl")
		checkResult(t, queues, diags)
		if queues != nil {
			roundTrip(t, queues)
		}
	})
}

// checkResult checks a parse's answer: valid queues and no errors, or no
// queue and errors, each of which says something and where.
func checkResult(t *testing.T, queues []*structs.Queue, diags hcl.Diagnostics) {
	t.Helper()
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		if strings.TrimSpace(d.Summary+d.Detail) == "" {
			t.Fatalf("an error diagnostic that says nothing: %#v", d)
		}
		if d.Subject == nil || d.Subject.Filename != "fuzz.hcl" {
			t.Fatalf("an error diagnostic without a source range: %s", d.Error())
		}
	}
	switch {
	case diags.HasErrors() && queues != nil:
		t.Fatalf("got queues and errors: %s", diags.Error())
	case !diags.HasErrors() && len(queues) == 0:
		t.Fatal("got neither a queue nor an error")
	}
	for _, q := range queues {
		must.NoError(t, q.Validate())
	}
}
