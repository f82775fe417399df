package jobspec

import (
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/shoenig/test/must"
)

// TestSizes_Formats checks that every form of a role's cpu and memory
// parses to the same range, in HCL and in HCL-JSON.
func TestSizes_Formats(t *testing.T) {
	const head = `job "j" {
  training {
    global_batch_size = 64
    steps_per_epoch   = 10
  }
  elastic {
    workers {
      max = 4
    }
  }
  worker {
    driver = "exec"
    resources {
`
	want := &structs.ResourceRange{Min: 1000, Max: 8000, Initial: 8000}
	cases := []struct {
		name, src string
		cpu       int
		rng       *structs.ResourceRange
	}{
		{"fixed", "cpu = 2000\n", 2000, nil},
		{"block", "cpu {\n min = 1000\n max = 8000\n }\n", 8000, want},
		{"object", "cpu = { min = 1000, max = 8000 }\n", 8000, want},
		{"quoted keys", `cpu = { "min" = 1000, "max" = 8000 }` + "\n", 8000, want},
		{"initial", "cpu = { min = 1000, max = 8000, initial = 2000 }\n", 2000, &structs.ResourceRange{Min: 1000, Max: 8000, Initial: 2000}},
		{"no max", "cpu {\n min = 1000\n }\n", 1000, &structs.ResourceRange{Min: 1000, Initial: 1000}},
		{"auto", `cpu = "auto"` + "\n", structs.DefaultCPU, &structs.ResourceRange{Min: structs.MinCPU, Initial: structs.DefaultCPU, Auto: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job, diags := Parse(&Config{Filename: "j.hcl", Src: []byte(head + tc.src + "    }\n  }\n}\n")})
			must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
			must.Eq(t, tc.cpu, job.Worker.Resources.CPU)
			must.Eq(t, tc.rng, job.Worker.Resources.CPURange)
		})
	}

	jsonSrc := `{"job": {"j": {
  "training": {"global_batch_size": 64, "steps_per_epoch": 10},
  "elastic": {"workers": {"max": 4}},
  "worker": {"driver": "exec", "resources": {
    "cpu": {"min": 1000, "max": 8000},
    "memory": "auto"
  }}
}}}`
	job, diags := Parse(&Config{Filename: "j.json", Src: []byte(jsonSrc)})
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	must.Eq(t, want, job.Worker.Resources.CPURange)
	must.Eq(t, &structs.ResourceRange{Min: structs.MinMemoryMB, Initial: structs.DefaultMemoryMB, Auto: true}, job.Worker.Resources.MemoryRange)

	bad := `{"job": {"j": {
  "training": {"global_batch_size": 64, "steps_per_epoch": 10},
  "elastic": {"workers": {"max": 4}},
  "worker": {"driver": "exec", "resources": {"cpu": {"min": 1000, "top": 8000}, "memory": "big"}}
}}}`
	job, diags = Parse(&Config{Filename: "bad.json", Src: []byte(bad)})
	must.Nil(t, job)
	must.Eq(t, `bad.json:4:67: Unsupported argument: worker.resources.cpu has no "top"; a range takes min, max and initial.
bad.json:4:91: Invalid worker.resources.memory: "big" is not a size; give a number of MB, "auto", or a range: memory { min = ..., max = ... } on several lines, or memory = { min = ..., max = ... }.
`, render(diags))
}

// TestSizes_RoundTrip converts a jobspec with every form of range to the
// Nomad format, where the ranges go in the caravan blocks, and back.
func TestSizes_RoundTrip(t *testing.T) {
	orig, diags := Parse(&Config{Filename: "testdata/valid/sizes.hcl"})
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))

	nomadSrc := formatJob(t, orig, FormatNomad)
	must.StrContains(t, string(nomadSrc), "resources {\n            cpu {\n              min = 1000\n              max = 8000\n            }")
	viaNomad, format := parseSrc(t, "converted.nomad.hcl", nomadSrc)
	must.Eq(t, FormatNomad, format)
	must.Eq(t, sameJob(orig), sameJob(viaNomad))

	caravanSrc := formatJob(t, viaNomad, FormatCaravan)
	must.StrContains(t, string(caravanSrc), `cpu = "auto"`)
	must.StrContains(t, string(caravanSrc), "initial = 512")
	back, _ := parseSrc(t, "converted.hcl", caravanSrc)
	must.Eq(t, orig, back)
	must.Eq(t, string(nomadSrc), string(formatJob(t, back, FormatNomad)))
}

// TestSizes_Nomad checks ranges in a Nomad job file: refused in a task,
// where Nomad takes a number, and read from the caravan block, where the
// task's own size is the initial one.
func TestSizes_Nomad(t *testing.T) {
	const job = `job "j" {
  type = "batch"
  group "worker" {
    scaling {
      max = 4
      policy {
        caravan {
          role = "worker"
          training {
            global_batch_size = 64
            steps_per_epoch   = 10
          }
          resources {
            memory {
              min = 128
              max = 512
            }
          }
        }
      }
    }
    task "train" {
      driver = "exec"
      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}
`
	parse := func(old, new string) (*structs.Job, string, hcl.Diagnostics) {
		return NewParser().ParseAny(&Config{Filename: "j.nomad.hcl", Src: []byte(strings.Replace(job, old, new, 1))})
	}
	j, format, diags := parse("", "")
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	must.Eq(t, FormatNomad, format)
	must.Eq(t, &structs.ResourceRange{Min: 128, Max: 512, Initial: 256}, j.Worker.Resources.MemoryRange)
	must.Eq(t, 256, j.Worker.Resources.MemoryMB)
	must.Nil(t, j.Worker.Resources.CPURange)

	_, _, diags = parse("          resources {\n", "          resources {\n            cpu = 100\n")
	must.StrContains(t, render(diags), "j.nomad.hcl:14:19: Fixed cpu in a policy: The caravan block's resources give ranges only")
	_, _, diags = parse("memory = 256", "memory = { min = 128, max = 512 }")
	must.StrContains(t, render(diags), "j.nomad.hcl:26:18: Range in a Nomad task: A Nomad task's memory is a number.")
	_, _, diags = parse("        cpu    = 500\n", "        cpu {\n          min = 100\n        }\n")
	must.StrContains(t, render(diags), "j.nomad.hcl:25:9: Range in a Nomad task")
}
