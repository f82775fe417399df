package jobspec

import (
	"testing"

	"github.com/caravan-sched/caravan/internal/testutil"
)

// FuzzParse feeds arbitrary bytes to the parser. It must never panic, and it
// must return either a valid job and no error, or no job and errors that
// each say something (checkResult).
//
//	go test ./jobspec -run '^$' -fuzz FuzzParse -fuzztime 5m
func FuzzParse(f *testing.F) {
	testutil.AddFiles(f, func(_ string, src []byte) { f.Add(src) }, "testdata/*/*.hcl", "../examples/*.hcl")
	f.Fuzz(func(t *testing.T, src []byte) {
		job, diags := Parse(&Config{Filename: "fuzz.hcl", Src: src})
		checkResult(t, job, diags)
	})
}
