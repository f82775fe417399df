package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// TestJobConvert converts each Caravan example to a Nomad job file and
// back, and checks that job inspect prints the same job for the example
// and for the result.
func TestJobConvert(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.hcl")
	must.NoError(t, err)
	for _, file := range files {
		if strings.HasSuffix(file, ".nomad.hcl") {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			dir := t.TempDir()
			nomadFile := filepath.Join(dir, "job.nomad.hcl")
			code, out, errOut := runCLI(t, "job", "convert", "-out", nomadFile, file)
			must.Eq(t, 0, code, must.Sprint(errOut))
			must.Eq(t, "", out)
			must.Eq(t, "", errOut)

			code, out, errOut = runCLI(t, "job", "validate", nomadFile)
			must.Eq(t, 0, code, must.Sprint(errOut))
			must.StrContains(t, out, nomadChecked)

			code, out, errOut = runCLI(t, "job", "convert", nomadFile)
			must.Eq(t, 0, code, must.Sprint(errOut))
			must.Eq(t, "", errOut)
			back := filepath.Join(dir, "job.hcl")
			must.NoError(t, os.WriteFile(back, []byte(out), 0o644))

			code, want, errOut := runCLI(t, "job", "inspect", "-json", file)
			must.Eq(t, 0, code, must.Sprint(errOut))
			code, got, errOut := runCLI(t, "job", "inspect", "-json", back)
			must.Eq(t, 0, code, must.Sprint(errOut))
			must.Eq(t, want, got)
		})
	}
}

// TestJobConvert_NomadOnly checks the warnings about the parts of a Nomad
// job file a Caravan jobspec leaves out, and -to.
func TestJobConvert_NomadOnly(t *testing.T) {
	file := "../../jobspec/testdata/nomad/valid/resnet50.nomad.hcl"
	code, out, errOut := runCLI(t, "job", "convert", "-no-color", file)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrHasPrefix(t, "job \"resnet50\" {\n", out)
	must.StrContains(t, out, "\n  parameter_server {\n")
	must.Eq(t, 1, strings.Count(errOut, "Warning: "), must.Sprint(errOut))
	must.StrContains(t, errOut, "Warning: "+file+":67:5: Task not converted\n")
	must.StrContains(t, errOut, `Task "log-shipper" of group "worker" is not the group's main task ("train")`)

	// The same format again: the file as Caravan reads it, no warnings.
	code, out, errOut = runCLI(t, "job", "convert", "-to", "nomad", file)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, "", errOut)
	must.StrContains(t, out, "\n  group \"ps\" {\n")
}

func TestJobConvert_Errors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"job", "convert"}, "This command takes one argument: <path>"},
		{[]string{"job", "convert", "-to", "yaml", "../../examples/demo.hcl"}, `-to "yaml" is not a format: use "nomad" or "caravan"`},
		{[]string{"job", "convert", "-no-color", "../../jobspec/testdata/nomad/invalid/caravan_block.nomad.hcl"}, "caravan_block.nomad.hcl:14:33: Invalid training.mode"},
		{[]string{"job", "convert", "-out", "/nonexistent/dir/x.hcl", "../../examples/demo.hcl"}, "Error writing /nonexistent/dir/x.hcl"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args[2:], " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			must.Eq(t, 1, code)
			must.Eq(t, "", out)
			must.StrContains(t, errOut, tc.want)
		})
	}
}
