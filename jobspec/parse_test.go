package jobspec

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/shoenig/test/must"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestParse_Valid parses every file in testdata/valid and compares the job,
// as JSON, with the .json file beside it.
func TestParse_Valid(t *testing.T) {
	files, err := filepath.Glob("testdata/valid/*.hcl")
	must.NoError(t, err)
	must.SliceNotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			job, diags := Parse(&Config{Filename: file})
			must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
			must.NotNil(t, job)
			got, err := json.MarshalIndent(job, "", "  ")
			must.NoError(t, err)
			golden(t, strings.TrimSuffix(file, ".hcl")+".json", string(got)+"\n")
		})
	}
}

// TestParse_Invalid parses every file in testdata/invalid and compares all of
// its diagnostics, one "file:line:col: summary: detail" line each, with the
// .errors file beside it. No invalid file may yield a job.
func TestParse_Invalid(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.hcl")
	must.NoError(t, err)
	must.SliceNotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			job, diags := Parse(&Config{Filename: file})
			must.Nil(t, job)
			must.True(t, diags.HasErrors())
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
	must.NoError(t, err, must.Sprint("run go test ./jobspec -update to create it"))
	must.Eq(t, string(want), got)
}

// TestParse_Examples checks that every jobspec in examples/ is valid: the
// Caravan jobspecs with Parse, and their Nomad-format versions
// (*.nomad.hcl) with ParseAny.
func TestParse_Examples(t *testing.T) {
	files := exampleJobspecs(t)
	must.SliceLen(t, 12, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			var job *structs.Job
			var diags hcl.Diagnostics
			if strings.HasSuffix(file, ".nomad.hcl") {
				var format string
				job, format, diags = NewParser().ParseAny(&Config{Filename: file})
				must.Eq(t, FormatNomad, format)
			} else {
				job, diags = Parse(&Config{Filename: file})
			}
			must.Len(t, 0, diags, must.Sprint(diags.Error()))
			must.NoError(t, job.Validate())
		})
	}
}

func TestParse_ExampleValues(t *testing.T) {
	job, diags := Parse(&Config{Filename: "../examples/resnet50-ps.hcl"})
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	must.Eq(t, &structs.Bounds{Min: 1, Max: 16}, job.Elastic.ParameterServers)
	dev := job.Worker.Resources.Devices[0]
	must.Eq(t, "nvidia/gpu", dev.Name)
	must.Eq(t, &structs.Constraint{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "16 GiB"}, dev.Constraints[0])
	must.Eq[any](t, []any{map[string]any{"type": "bind", "source": "/mnt/datasets", "target": "/data"}}, job.Worker.Config["mount"])

	job, diags = Parse(&Config{Filename: "../examples/logreg-async.hcl"})
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	must.Eq(t, 256*24, job.Training.GlobalBatchSize)
	must.Nil(t, job.ParameterServer)
	must.Eq[any](t, []any{"--dataset", "s3://acme-ml/criteo/day_0", "--batch", "256"}, job.Worker.Config["args"])
}

// TestParse_TorchrunExample checks the launcher of the PyTorch DDP
// example in both formats, and that a torchrun job defaults to all-reduce.
func TestParse_TorchrunExample(t *testing.T) {
	for _, file := range []string{"../examples/pytorch-ddp/pytorch-ddp.hcl", "../examples/pytorch-ddp/pytorch-ddp.nomad.hcl"} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			job, _, diags := NewParser().ParseAny(&Config{Filename: file})
			must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
			must.Eq(t, structs.LauncherTorchrun, job.Training.Launcher)
			must.Eq(t, structs.ArchitectureAllReduce, job.Training.Architecture)
			must.Nil(t, job.Elastic.ParameterServers)
			must.Eq(t, structs.Bounds{Min: 1, Max: 2}, job.Elastic.Workers)
			must.Eq(t, 60*time.Second, job.Elastic.Checkpoint.Timeout)
			must.Eq(t, "/usr/bin/python3", job.Worker.Config["command"])
			must.Eq(t, "/opt/caravan/collector/python", job.Worker.Env["PYTHONPATH"])
		})
	}
	job, diags := Parse(&Config{Filename: "testdata/valid/torchrun.hcl"})
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	must.Eq(t, structs.ArchitectureAllReduce, job.Training.Architecture, must.Sprint("torchrun defaults to all-reduce"))
}

// TestParse_VariablePrecedence checks default < environment < var file < -var.
func TestParse_VariablePrecedence(t *testing.T) {
	src := []byte(`
variable "image" { default = "from-default" }
variable "gpus" {
  type    = number
  default = 1
}
job "v" {
  training {
    global_batch_size = 8
    steps_per_epoch   = 1
  }
  elastic {
    workers {
      max = 2
    }
  }
  worker {
    driver = "docker"
    config {
      image = var.image
      gpus  = var.gpus
    }
  }
}
`)
	varFile := filepath.Join(t.TempDir(), "prod.vars.hcl")
	must.NoError(t, os.WriteFile(varFile, []byte("image = \"from-file\"\ngpus = 3\n"), 0o644))

	cases := []struct {
		name      string
		cfg       Config
		wantImage string
		wantGPUs  int64
	}{
		{"default", Config{}, "from-default", 1},
		{"env", Config{Environ: []string{"CARAVAN_VAR_image=from-env", "CARAVAN_VAR_gpus=2", "CARAVAN_VAR_undeclared=x"}}, "from-env", 2},
		{"file over env", Config{Environ: []string{"CARAVAN_VAR_image=from-env"}, VarFiles: []string{varFile}}, "from-file", 3},
		{"arg over file", Config{VarFiles: []string{varFile}, ArgVars: []string{"image=from-arg", "gpus=4"}}, "from-arg", 4},
		{"arg keeps equals", Config{ArgVars: []string{"image=a=b"}}, "a=b", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Filename, cfg.Src = "v.hcl", src
			job, diags := Parse(&cfg)
			must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
			must.Eq[any](t, tc.wantImage, job.Worker.Config["image"])
			must.Eq[any](t, tc.wantGPUs, job.Worker.Config["gpus"])
		})
	}

	bad := []struct {
		name string
		cfg  Config
		want string
	}{
		{"undeclared arg", Config{ArgVars: []string{"imag=x"}}, `A value was given for variable "imag" with -var, but the jobspec declares no variable "imag".`},
		{"malformed arg", Config{ArgVars: []string{"image"}}, `Invalid -var option`},
		{"wrong type arg", Config{ArgVars: []string{"gpus=lots"}}, `Variables not allowed`},
		{"missing file", Config{VarFiles: []string{"/nonexistent.hcl"}}, `Failed to read file`},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Filename, cfg.Src = "v.hcl", src
			job, diags := Parse(&cfg)
			must.Nil(t, job)
			must.StrContains(t, diags.Error(), tc.want)
		})
	}
}

func TestParse_UnreadableFile(t *testing.T) {
	job, diags := Parse(&Config{Filename: filepath.Join(t.TempDir(), "missing.hcl")})
	must.Nil(t, job)
	must.StrContains(t, diags.Error(), "Failed to read jobspec")
}

// TestParseAny_Nomad parses the Nomad job files in testdata/nomad as
// TestParse_Valid and TestParse_Invalid do Caravan's.
func TestParseAny_Nomad(t *testing.T) {
	valid, err := filepath.Glob("testdata/nomad/valid/*.hcl")
	must.NoError(t, err)
	must.SliceNotEmpty(t, valid)
	for _, file := range valid {
		t.Run(filepath.Base(file), func(t *testing.T) {
			job, format, diags := NewParser().ParseAny(&Config{Filename: file})
			must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
			must.Eq(t, FormatNomad, format)
			got, err := json.MarshalIndent(job, "", "  ")
			must.NoError(t, err)
			golden(t, strings.TrimSuffix(file, ".hcl")+".json", string(got)+"\n")
		})
	}
	invalid, err := filepath.Glob("testdata/nomad/invalid/*.hcl")
	must.NoError(t, err)
	must.SliceNotEmpty(t, invalid)
	for _, file := range invalid {
		t.Run(filepath.Base(file), func(t *testing.T) {
			job, format, diags := NewParser().ParseAny(&Config{Filename: file})
			must.Nil(t, job)
			must.Eq(t, FormatNomad, format)
			must.True(t, diags.HasErrors())
			golden(t, strings.TrimSuffix(file, ".hcl")+".errors", render(diags))
		})
	}
}

// TestParse_NomadFile checks that Parse, which registrations use, turns a
// Nomad job file away with a word on how to run it.
func TestParse_NomadFile(t *testing.T) {
	job, diags := Parse(&Config{Filename: "testdata/nomad/valid/resnet50.nomad.hcl"})
	must.Nil(t, job)
	must.StrContains(t, diags.Error(), "nomad job run")
}
