//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/jobspec"
	"github.com/shoenig/test/must"
)

// TestNomadFormat_Validate checks that Nomad accepts the Nomad job files
// Caravan reads and writes (issue 15): each examples/*.nomad.hcl, the
// Nomad job files of jobspec's tests that Caravan reads without error, and
// what `caravan job convert` makes of each Caravan example
// (jobspec.FormatJob). It runs `nomad job validate` with no agent to
// answer, so that Nomad checks each job itself, all but its drivers'
// configuration; a file Nomad rejects shows that it does check.
func TestNomadFormat_Validate(t *testing.T) {
	bin := agent.NomadBinary(t)
	noAgent := fmt.Sprintf("NOMAD_ADDR=http://127.0.0.1:%d", agent.FreePorts(t, 1)[0])
	validate := func(t *testing.T, file string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, "job", "validate", file)
		cmd.Env = append(os.Environ(), noAgent, "NOMAD_TOKEN=")
		out, err := cmd.CombinedOutput()
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
			return exit.ExitCode(), string(out)
		}
		must.NoError(t, err)
		return 0, string(out)
	}

	var files []string
	for _, pattern := range []string{
		"../examples/*.nomad.hcl",
		"../jobspec/testdata/nomad/valid/*.hcl",
		"../jobspec/testdata/nomad/nomadonly/*.hcl",
	} {
		matches, err := filepath.Glob(pattern)
		must.NoError(t, err)
		must.SliceNotEmpty(t, matches, must.Sprint(pattern))
		files = append(files, matches...)
	}
	caravanFiles, err := filepath.Glob("../examples/*.hcl")
	must.NoError(t, err)
	dir := t.TempDir()
	for _, file := range caravanFiles {
		if strings.HasSuffix(file, ".nomad.hcl") {
			continue
		}
		job, diags := jobspec.Parse(&jobspec.Config{Filename: file})
		must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
		src, diags := jobspec.FormatJob(job, jobspec.FormatNomad)
		must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
		converted := filepath.Join(dir, "converted-"+strings.TrimSuffix(filepath.Base(file), ".hcl")+".nomad.hcl")
		must.NoError(t, os.WriteFile(converted, src, 0o644))
		files = append(files, converted)
	}

	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			_, format, diags := jobspec.NewParser().ParseAny(&jobspec.Config{Filename: file})
			must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
			must.Eq(t, jobspec.FormatNomad, format)
			code, out := validate(t, file)
			must.Eq(t, 0, code, must.Sprint(out))
			must.StrContains(t, out, "Job validation successful")
		})
	}

	t.Run("rejected", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.nomad.hcl")
		src, err := os.ReadFile("../examples/demo.nomad.hcl")
		must.NoError(t, err)
		src = []byte(strings.Replace(string(src), `type = "batch"`, "type = \"batch\"\n\n  update {\n    max_parallel = 1\n  }", 1))
		must.NoError(t, os.WriteFile(bad, src, 0o644))
		code, out := validate(t, bad)
		must.Eq(t, 1, code, must.Sprint(out))
		must.StrContains(t, out, `Job type "batch" does not allow update block`)
	})
}
