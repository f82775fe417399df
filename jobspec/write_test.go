package jobspec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/shoenig/test/must"
)

// exampleJobspecs returns the jobspecs of examples/ and its
// subdirectories: every .hcl file but queue files (queues.hcl).
func exampleJobspecs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../examples/*.hcl")
	must.NoError(t, err)
	more, err := filepath.Glob("../examples/*/*.hcl") // pytorch-ddp, teams
	must.NoError(t, err)
	return slices.DeleteFunc(append(files, more...), func(f string) bool { return filepath.Base(f) == "queues.hcl" })
}

// examples returns the example jobspecs of one format: the Nomad format's
// end in .nomad.hcl.
func examples(t *testing.T, format string) []string {
	t.Helper()
	var out []string
	for _, f := range exampleJobspecs(t) {
		if strings.HasSuffix(f, ".nomad.hcl") == (format == FormatNomad) {
			out = append(out, f)
		}
	}
	must.SliceNotEmpty(t, out)
	return out
}

// parseSrc parses src, named name, in either format and fails the test on
// errors or warnings.
func parseSrc(t *testing.T, name string, src []byte) (*structs.Job, string) {
	t.Helper()
	job, format, diags := NewParser().ParseAny(&Config{Filename: name, Src: src})
	must.Len(t, 0, diags, must.Sprintf("%s:\n%s\n%s", name, diags.Error(), src))
	return job, format
}

// formatJob writes job in format and fails the test on any diagnostic.
func formatJob(t *testing.T, job *structs.Job, format string) []byte {
	t.Helper()
	src, diags := FormatJob(job, format)
	must.Len(t, 0, diags, must.Sprint(diags.Error()))
	return src
}

// sameJob is job as both formats give it: without the Nomad source, and
// without a parameter_server template equal to the worker's, which is
// what parameter servers run when there is none.
func sameJob(job *structs.Job) *structs.Job {
	j := job.Copy()
	j.Nomad = nil
	if sameTemplate(j.ParameterServer, j.Worker) {
		j.ParameterServer = nil
	}
	return j
}

// TestFormatJob_RoundTrip converts each Caravan example to the Nomad
// format and back: each step parses to the same job, and converting the
// result again gives the same files.
func TestFormatJob_RoundTrip(t *testing.T) {
	for _, file := range examples(t, FormatCaravan) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			orig, diags := Parse(&Config{Filename: file})
			must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))

			nomadSrc := formatJob(t, orig, FormatNomad)
			viaNomad, format := parseSrc(t, "converted.nomad.hcl", nomadSrc)
			must.Eq(t, FormatNomad, format)
			must.Eq(t, sameJob(orig), sameJob(viaNomad))

			caravanSrc := formatJob(t, viaNomad, FormatCaravan)
			back, format := parseSrc(t, "converted.hcl", caravanSrc)
			must.Eq(t, FormatCaravan, format)
			must.Eq(t, orig, back)

			must.Eq(t, string(nomadSrc), string(formatJob(t, back, FormatNomad)))
			must.Eq(t, string(caravanSrc), string(formatJob(t, orig, FormatCaravan)))
		})
	}
}

// TestFormatJob_NomadExamples converts each Nomad-format example to a
// Caravan jobspec and back, and checks that it declares the same job as
// the Caravan example of the same name.
func TestFormatJob_NomadExamples(t *testing.T) {
	for _, file := range examples(t, FormatNomad) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			must.NoError(t, err)
			orig, format := parseSrc(t, file, src)
			must.Eq(t, FormatNomad, format)

			back, _ := parseSrc(t, "converted.hcl", formatJob(t, orig, FormatCaravan))
			must.Eq(t, sameJob(orig), back)
			again, _ := parseSrc(t, "converted.nomad.hcl", formatJob(t, back, FormatNomad))
			must.Eq(t, sameJob(orig), sameJob(again))

			twin, diags := Parse(&Config{Filename: strings.TrimSuffix(file, ".nomad.hcl") + ".hcl"})
			must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
			must.Eq(t, twin, sameJob(orig))
		})
	}
}

// TestFormatJob_Values round-trips a job using every part of the jobspec
// and values that need care in HCL.
func TestFormatJob_Values(t *testing.T) {
	src := []byte(`
job "values" {
  name        = "Values"
  namespace   = "ml"
  region      = "eu"
  datacenters = ["dc1", "dc2"]
  node_pool   = "gpu"
  priority    = 70
  weight      = 0.5

  meta {
    owner = "a \"quoted\" name"
  }

  constraint {
    operator = "distinct_hosts"
    value    = "true"
  }

  affinity {
    attribute = "${node.datacenter}"
    value     = "dc1"
    weight    = -20
  }

  training {
    framework         = "jax"
    global_batch_size = 64
    steps_per_epoch   = 10

    convergence {
      threshold = 0.005
    }

    speed {
      ps               = 1
      workers          = 2
      steps_per_second = 1.25
    }
    speed {
      ps               = 2
      workers          = 4
      steps_per_second = 2
    }
  }

  elastic {
    workers {
      min = 2
      max = 4
    }
    checkpoint {
      signal  = "SIGTERM"
      timeout = "1h30m"
    }
  }

  worker {
    driver = "docker"

    config {
      image   = "img:1"
      args    = ["--rank", "${CARAVAN_RANK}", "$${literal}", "$$${double}", "%%{not_a_directive}", "a\nb", "${NOMAD_ALLOC_ID}-${attr.unique.hostname}"]
      labels  = { "com.example/team" = "ml", plain = "yes" }
      ratio   = 0.25
      privileged = true
      empty   = []
      ports   = [8080, 8081]

      mount {
        type   = "bind"
        source = "/a"

        bind_options {
          propagation = "rshared"
        }
      }
      mount {
        type   = "volume"
        source = "b"
      }
    }

    env {
      ADDR = "${NOMAD_IP_http}:${NOMAD_PORT_http}"
    }

    meta {
      role_kind = "trainer"
    }

    resources {
      cpu    = 1000
      memory = 2048

      device "nvidia/gpu/Tesla V100-SXM2-16GB" {
        count = 2

        affinity {
          attribute = "${device.attr.memory}"
          operator  = ">="
          value     = "16 GiB"
          weight    = 75
        }
      }
    }
  }

  parameter_server {
    driver = "raw_exec"

    config {
      command = "/bin/ps-server"
    }

    constraint {
      attribute = "${meta.rack}"
      operator  = "regexp"
      value     = "^r[0-9]+$"
    }
  }
}
`)
	orig, _ := parseSrc(t, "values.hcl", src)

	caravanSrc := formatJob(t, orig, FormatCaravan)
	back, _ := parseSrc(t, "converted.hcl", caravanSrc)
	must.Eq(t, orig, back)

	nomadSrc := formatJob(t, orig, FormatNomad)
	viaNomad, _ := parseSrc(t, "converted.nomad.hcl", nomadSrc)
	must.StrContains(t, string(nomadSrc), `name        = "Values"`)
	must.Eq(t, sameJob(orig), sameJob(viaNomad))

	for _, want := range []string{
		`"${CARAVAN_RANK}"`,
		`"$${literal}"`,
		`"$$${double}"`,
		`"%%{not_a_directive}"`,
		`"${NOMAD_ALLOC_ID}-${attr.unique.hostname}"`,
		`attribute = "${device.attr.memory}"`,
		`timeout = "1h30m"`,
		`"com.example/team" = "ml"`,
	} {
		must.StrContains(t, string(caravanSrc), want)
		must.StrContains(t, string(nomadSrc), want)
	}
	must.Eq[any](t, []any{"--rank", "${CARAVAN_RANK}", "${literal}", "$${double}", "%{not_a_directive}", "a\nb", "${NOMAD_ALLOC_ID}-${attr.unique.hostname}"}, back.Worker.Config["args"])
}

// TestFormatJob_SharedTemplate checks that a PS job without a
// parameter_server block runs the worker template in its Nomad ps group,
// and that such a group converts back to no parameter_server block.
func TestFormatJob_SharedTemplate(t *testing.T) {
	orig, diags := Parse(&Config{Filename: "../examples/logreg-async.hcl"})
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	must.Nil(t, orig.ParameterServer)

	viaNomad, _ := parseSrc(t, "converted.nomad.hcl", formatJob(t, orig, FormatNomad))
	must.NotNil(t, viaNomad.ParameterServer)
	must.True(t, sameTemplate(orig.Worker, viaNomad.ParameterServer))
	must.Eq(t, structs.RolePS, viaNomad.ParameterServer.Name)
	must.StrNotContains(t, string(formatJob(t, viaNomad, FormatCaravan)), "parameter_server {")
}

func TestFormatJob_Errors(t *testing.T) {
	job, diags := Parse(&Config{Filename: "../examples/demo.hcl"})
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))

	src, diags := FormatJob(job, "yaml")
	must.Nil(t, src)
	must.StrContains(t, diags.Error(), `"yaml" is not a jobspec format`)

	job.Worker.Config["not.an.identifier"] = int64(1)
	job.Worker.Config["fn"] = func() {}
	src, diags = FormatJob(job, FormatCaravan)
	must.Nil(t, src)
	must.Eq(t, "worker.config.fn: values of Go type func() cannot be written.\nworker.config: key \"not.an.identifier\" is not an HCL identifier, which an argument name needs.\n", details(diags))
}

// details returns the detail of each diagnostic, a line each.
func details(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		b.WriteString(d.Detail + "\n")
	}
	return b.String()
}

// TestNomadOnly compares the warnings about what a Caravan jobspec has no
// place for with the .warnings file beside each file in
// testdata/nomad/nomadonly.
func TestNomadOnly(t *testing.T) {
	files, err := filepath.Glob("testdata/nomad/nomadonly/*.hcl")
	must.NoError(t, err)
	must.SliceNotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			p := NewParser()
			job, format, diags := p.ParseAny(&Config{Filename: file})
			must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
			must.NotNil(t, job)
			must.Eq(t, FormatNomad, format)
			warnings := NomadOnly(p.Files()[file])
			for _, d := range warnings {
				must.Eq(t, hcl.DiagWarning, d.Severity)
			}
			golden(t, strings.TrimSuffix(file, ".hcl")+".warnings", render(warnings))
		})
	}

	f, diags := hclparse.NewParser().ParseJSON([]byte(`{"job": {"j": {"type": "batch"}}}`), "j.nomad.json")
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	warnings := NomadOnly(f)
	must.Len(t, 1, warnings)
	must.Eq(t, hcl.DiagWarning, warnings[0].Severity)
	must.Nil(t, warnings[0].Subject)
}

// TestFormatJob_BatchSize writes a job whose batch may vary in both
// formats and parses it back to the same job.
func TestFormatJob_BatchSize(t *testing.T) {
	orig, diags := Parse(&Config{Filename: "testdata/valid/adaptive_batch.hcl"})
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	must.Eq(t, &structs.BatchSize{Min: 128, Max: 4096, MinLocal: 32, MaxLocal: 256}, orig.Training.BatchSize)
	for _, format := range []string{FormatCaravan, FormatNomad} {
		src := formatJob(t, orig, format)
		must.StrContains(t, string(src), "batch_size {")
		back, got := parseSrc(t, "converted-"+format+".hcl", src)
		must.Eq(t, format, got)
		must.Eq(t, sameJob(orig), sameJob(back))
	}
}
