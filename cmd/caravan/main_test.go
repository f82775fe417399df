package main

import (
	"bufio"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/simulate/experiment"
	"github.com/caravan-sched/caravan/structs"
	"github.com/caravan-sched/caravan/version"
	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"
	"gonum.org/v1/plot/vg/vgimg"
)

// runCLI runs one command line in-process and returns its exit code, stdout
// and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ui := cli.NewMockUi()
	code := run(args, ui)
	return code, ui.OutputWriter.String(), ui.ErrorWriter.String()
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	must.Eq(t, 0, code)
	must.Eq(t, version.String()+"\n", out)
}

func TestJobValidate_Examples(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.hcl")
	must.NoError(t, err)
	must.SliceNotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			code, out, errOut := runCLI(t, "job", "validate", file)
			must.Eq(t, 0, code, must.Sprint(errOut))
			want := "Job validation successful\n"
			if strings.HasSuffix(file, ".nomad.hcl") {
				want = nomadChecked + "\n" + want
			}
			must.Eq(t, want, out)
			must.Eq(t, "", errOut)
		})
	}
}

// TestJobValidate_Invalid checks that each invalid golden jobspec, of
// either format, is rejected with exit code 1 and every diagnostic of its
// .errors file, at its file:line:col, on stderr.
func TestJobValidate_Invalid(t *testing.T) {
	files, err := filepath.Glob("../../jobspec/testdata/invalid/*.hcl")
	must.NoError(t, err)
	must.SliceNotEmpty(t, files)
	nomadFiles, err := filepath.Glob("../../jobspec/testdata/nomad/invalid/*.hcl")
	must.NoError(t, err)
	must.SliceNotEmpty(t, nomadFiles)
	for _, file := range append(files, nomadFiles...) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			code, out, errOut := runCLI(t, "job", "validate", "-no-color", file)
			must.Eq(t, 1, code)
			must.Eq(t, "", out)
			positions := expectedPositions(t, strings.TrimSuffix(file, ".hcl")+".errors")
			must.SliceNotEmpty(t, positions)
			for _, pos := range positions {
				must.StrContains(t, errOut, "Error: "+filepath.Join(filepath.Dir(file), pos))
			}
		})
	}
}

// expectedPositions reads "name.hcl:line:col" from each line of a golden
// .errors file.
func expectedPositions(t *testing.T, path string) []string {
	f, err := os.Open(path)
	must.NoError(t, err)
	defer f.Close()
	var out []string
	for s := bufio.NewScanner(f); s.Scan(); {
		if pos, _, ok := strings.Cut(s.Text(), ": "); ok && pos != "-" {
			out = append(out, pos)
		}
	}
	return out
}

func TestJobValidate_Snippet(t *testing.T) {
	code, _, errOut := runCLI(t, "job", "validate", "-no-color", "../../jobspec/testdata/invalid/min_gt_max.hcl")
	must.Eq(t, 1, code)
	must.Eq(t, strings.Join([]string{
		"Error: ../../jobspec/testdata/invalid/min_gt_max.hcl:8:13: Invalid elastic.workers.min",
		"  8 |       min = 8",
		"    |             ^",
		"  Min (8) is greater than max (4).",
		"",
	}, "\n"), errOut)
}

// TestJobValidate_NomadSnippet checks a mistake in the caravan block of
// a Nomad job file: reported at its line and column, and said to be
// checked as a Nomad job file.
func TestJobValidate_NomadSnippet(t *testing.T) {
	code, out, errOut := runCLI(t, "job", "validate", "-no-color", "../../jobspec/testdata/nomad/invalid/caravan_block.nomad.hcl")
	must.Eq(t, 1, code)
	must.Eq(t, "", out)
	must.StrContains(t, errOut, strings.Join([]string{
		"Error: ../../jobspec/testdata/nomad/invalid/caravan_block.nomad.hcl:14:33: Invalid training.mode",
		"  14 |             mode              = \"synch\"",
		"     |                                 ^^^^^^^",
		"  \"synch\" is not a training mode; use \"sync\" or \"async\".",
		"",
	}, "\n"))
	must.StrContains(t, errOut, "Error: ../../jobspec/testdata/nomad/invalid/caravan_block.nomad.hcl:11:11: Unsupported argument\n")
	must.StrHasSuffix(t, nomadChecked+"\n", errOut)
}

func TestJobValidate_Vars(t *testing.T) {
	varFile := filepath.Join(t.TempDir(), "vars.hcl")
	must.NoError(t, os.WriteFile(varFile, []byte(`trainer = "/opt/bin/trainer"`), 0o644))

	code, out, _ := runCLI(t, "job", "inspect", "-json", "-var-file", varFile, "../../examples/demo.hcl")
	must.Eq(t, 0, code)
	job := inspectedJob(t, out)
	must.Eq[any](t, "/opt/bin/trainer", job.Worker.Config["command"])

	code, _, errOut := runCLI(t, "job", "validate", "-var", "nope=1", "../../examples/demo.hcl")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `Undefined -var variable`)
}

// TestJobInspect: job inspect FILE prints the job under "Job", as Nomad's
// job inspect does, for a jobspec and for a Nomad job file alike.
func TestJobInspect(t *testing.T) {
	for _, file := range []string{"../../examples/bert-allreduce.hcl", "../../examples/bert-allreduce.nomad.hcl"} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			code, out, errOut := runCLI(t, "job", "inspect", "-json", file)
			must.Eq(t, 0, code, must.Sprint(errOut))
			must.StrHasPrefix(t, "{\n  \"Job\": {\n", out)
			job := inspectedJob(t, out)
			must.Eq(t, "bert-squad", job.ID)
			must.Eq(t, structs.ArchitectureAllReduce, job.Training.Architecture)
			must.Nil(t, job.Elastic.ParameterServers)
			must.Eq(t, 8, job.Elastic.Workers.Max)
		})
	}

	// A mistake in a Nomad job file is reported as job validate reports it.
	code, out, errOut := runCLI(t, "job", "inspect", "-no-color", "../../jobspec/testdata/nomad/invalid/caravan_block.nomad.hcl")
	must.Eq(t, 1, code)
	must.Eq(t, "", out)
	must.StrContains(t, errOut, "caravan_block.nomad.hcl:14:33: Invalid training.mode")
	must.StrHasSuffix(t, nomadChecked+"\n", errOut)
}

// inspectedJob decodes what job inspect prints: {"Job": {...}}.
func inspectedJob(t *testing.T, out string) *structs.Job {
	t.Helper()
	var v struct{ Job *structs.Job }
	must.NoError(t, json.Unmarshal([]byte(out), &v))
	must.NotNil(t, v.Job, must.Sprint(out))
	return v.Job
}

func TestUsageErrors(t *testing.T) {
	cases := [][]string{
		{"job", "validate"},
		{"job", "validate", "a.hcl", "b.hcl"},
		{"job", "validate", "-bogus", "a.hcl"},
		{"job", "inspect"},
		{"job", "validate", "does-not-exist.hcl"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, args...)
			must.Eq(t, 1, code)
			must.Eq(t, "", out)
			must.NotEq(t, "", errOut)
		})
	}
}

// TestSim_HelpNamesEveryPolicy: caravan sim -help lists every built-in
// algorithm under -policy.
func TestSim_HelpNamesEveryPolicy(t *testing.T) {
	help := (&SimCommand{}).Help()
	from, to := strings.Index(help, "-policy="), strings.Index(help, "-out=")
	must.Positive(t, from)
	must.Greater(t, from, to)
	// The list names policies between commas and spaces: "optimus" must
	// not pass for "optimus-relative".
	listed := map[string]bool{}
	for _, w := range strings.FieldsFunc(help[from:to], func(r rune) bool { return strings.ContainsRune(" ,\n()", r) }) {
		listed[w] = true
	}
	for _, name := range builtin.Names() {
		must.True(t, listed[name], must.Sprintf("caravan sim -help does not name policy %s under -policy", name))
	}
}

// TestSim runs caravan sim end to end on a small workload and checks its
// outputs.
func TestSim(t *testing.T) {
	out := t.TempDir()
	code, stdout, errOut := runCLI(t, "sim", "-workload", "parametric:8:300", "-policy", "optimus,fifo", "-out", out, "-json")
	must.Eq(t, 0, code, must.Sprint(errOut))
	var report struct {
		Workload string
		Policies map[string]struct {
			AvgJCT float64
			Jobs   int
		}
	}
	must.NoError(t, json.Unmarshal([]byte(stdout), &report))
	must.Eq(t, "parametric:8:300", report.Workload)
	must.MapLen(t, 2, report.Policies)
	for _, p := range report.Policies {
		must.Eq(t, 8, p.Jobs)
		must.Positive(t, p.AvgJCT)
	}
	for _, f := range []string{"summary.json", "jobs.csv", "fairness.csv", "jct_cdf.png", "gpu_util.png", "gpu_alloc_optimus.png", "gpu_alloc_fifo.png"} {
		info, err := os.Stat(filepath.Join(out, f))
		must.NoError(t, err)
		must.Positive(t, info.Size(), must.Sprint(f))
	}
	csv, err := os.ReadFile(filepath.Join(out, "jobs.csv"))
	must.NoError(t, err)
	must.Eq(t, 1+2*8, strings.Count(string(csv), "\n"), must.Sprint("a header and a row per job and policy"))
	// gpu_util.png has a panel 2 inches high per policy.
	f, err := os.Open(filepath.Join(out, "gpu_util.png"))
	must.NoError(t, err)
	img, err := png.DecodeConfig(f)
	f.Close()
	must.NoError(t, err)
	must.Eq(t, 2*2*int(vgimg.DefaultDPI), img.Height)

	// A policy that does not fit the workload is run, with a warning.
	code, _, errOut = runCLI(t, "sim", "-workload", "parametric:2:300", "-policy", "harmony", "-out", t.TempDir())
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, errOut, "Warning: policy harmony does not fit workload parametric:2:300: harmony groups jobs by their computation and communication subtask times")

	code, _, errOut = runCLI(t, "sim", "-workload", "parametric", "-policy", "optimus,bogus")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `Unknown policy "bogus"`)
}

// TestSim_Queues: -queues takes a queue file, whose mistakes are printed
// as diagnostics before any run, and only with -workload; a run given
// queues prints the per-queue table.
func TestSim_Queues(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.hcl")
	must.NoError(t, os.WriteFile(bad, []byte("queue \"a\" {\n  namespaces = [\"vc-*\"]\n  weight = -1\n}\n"), 0o644))
	code, _, errOut := runCLI(t, "sim", "-workload", "philly-tenants:1", "-limit", "3", "-policy", "drf", "-queues", bad, "-out", t.TempDir())
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "bad.hcl:3:")
	must.StrContains(t, errOut, "weight")

	code, _, errOut = runCLI(t, "sim", "-experiment", "queues-philly", "-queues", bad)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "-queues takes -workload")

	good := filepath.Join(dir, "queues.hcl")
	must.NoError(t, os.WriteFile(good, []byte("queue \"vc-ee9e8c\" {\n  namespaces = [\"vc-ee9e8c\"]\n}\n"), 0o644))
	code, out, errOut := runCLI(t, "sim", "-workload", "philly-tenants:1", "-limit", "3", "-policy", "drf", "-queues", good, "-out", t.TempDir())
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "vc-ee9e8c")
}

// TestSim_PolicyOptions: a policy may carry its algorithm's options, which
// the run uses (SpeCon without rebalancing moves fewer jobs) and the
// report names; options an algorithm does not take fail before any run.
func TestSim_PolicyOptions(t *testing.T) {
	code, stdout, errOut := runCLI(t, "sim", "-workload", "specon-random", "-cluster", "4x0", "-interval", "30s",
		"-policy", "specon,specon:rebalance=false:base=drf", "-out", t.TempDir(), "-json")
	must.Eq(t, 0, code, must.Sprint(errOut))
	var report struct {
		Policies map[string]struct {
			Jobs     int
			Rescales int
		}
	}
	must.NoError(t, json.Unmarshal([]byte(stdout), &report))
	must.MapLen(t, 2, report.Policies)
	all, off := report.Policies["specon"], report.Policies["specon:base=drf:rebalance=false"]
	must.Eq(t, 20, all.Jobs)
	must.Eq(t, 20, off.Jobs)
	must.Less(t, all.Rescales, off.Rescales, must.Sprint("Algorithm 3 off moves fewer jobs"))

	for _, tc := range []struct{ policy, err string }{
		{"specon:bogus=1", `unknown option "bogus"`},
		{"specon:base=specon", `base "specon": not a base algorithm`},
		{"fifo:base=drf", `Policy "fifo" takes no options`},
		{"specon:base", `option "base" is not key=value`},
	} {
		code, _, errOut := runCLI(t, "sim", "-workload", "specon", "-policy", tc.policy)
		must.Eq(t, 1, code, must.Sprint(tc.policy))
		must.StrContains(t, errOut, tc.err)
	}
}

// TestSim_Harmony runs the Harmony comparison as planner/README.md does,
// on a few jobs: the table has the regrouping overhead, the fairness
// columns and the speedups over isolated and colocated.
func TestSim_Harmony(t *testing.T) {
	out := t.TempDir()
	code, stdout, errOut := runCLI(t, "sim", "-workload", "harmony:8", "-cluster", "8x0", "-policy", "harmony,isolated,colocated", "-out", out)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, stdout, "Regroup")
	for _, col := range []string{"Jain", "Fair Loss", "Max Loss", "Worst Job"} {
		must.StrContains(t, stdout, col)
	}
	for _, line := range []string{`(?m)^harmony\s+isolated\s+[\d.]+×`, `(?m)^colocated\s+isolated\s+[\d.]+×`, `(?m)^harmony\s+colocated\s+[\d.]+×`} {
		must.RegexMatch(t, regexp.MustCompile(line), stdout)
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.json"))
	must.NoError(t, err)
	var report struct {
		Speedups []struct {
			Policy, Baseline string
			JCT, Makespan    float64
		}
	}
	must.NoError(t, json.Unmarshal(summary, &report))
	must.SliceLen(t, 4, report.Speedups)
	for _, sp := range report.Speedups {
		must.Positive(t, sp.JCT)
		must.Positive(t, sp.Makespan)
	}
}

// TestSim_Dorm runs the Dorm comparison as planner/README.md does, on a
// few applications: dorm's presets are policies of their own, reported
// under their specs with Dorm's measures, on the workload's testbed; bad
// options are refused before anything runs.
func TestSim_Dorm(t *testing.T) {
	out := t.TempDir()
	code, stdout, errOut := runCLI(t, "sim", "-workload", "dorm:6:600", "-policy", "dorm:preset=dorm-1,dorm:preset=dorm-3:time_limit=2s,drf", "-out", out)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, stdout, "6 jobs of dorm:6:600 on 20 nodes, 5 GPUs")
	for _, col := range []string{"Res Util", "First 5h", "Adjust/h", "Plan P50", "Plan P95", "Plan Max"} {
		must.StrContains(t, stdout, col)
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.json"))
	must.NoError(t, err)
	var report struct {
		Policies map[string]struct {
			Jobs         int
			ResourceUtil float64
			Plans        int
			MaxLoss      float64 `json:"MaxFairnessLoss"`
		}
		PlanTimes map[string]struct {
			MaxS float64
		}
	}
	must.NoError(t, json.Unmarshal(summary, &report))
	must.MapContainsKeys(t, report.PlanTimes, []string{"dorm:preset=dorm-1", "dorm:preset=dorm-3:time_limit=2s", "drf"})
	must.Positive(t, report.PlanTimes["dorm:preset=dorm-1"].MaxS)
	must.MapContainsKeys(t, report.Policies, []string{"dorm:preset=dorm-1", "dorm:preset=dorm-3:time_limit=2s", "drf"})
	for name, p := range report.Policies {
		must.Eq(t, 6, p.Jobs, must.Sprint(name))
		must.Positive(t, p.Plans, must.Sprint(name))
		must.Between(t, 0.01, p.ResourceUtil, 3, must.Sprint(name))
	}

	for _, tc := range []struct{ policy, want string }{
		{"dorm:preset=dorm-9", `Options of policy "dorm": preset = "dorm-9"`},
		{"dorm:glpsol=/nonexistent/glpsol", `dorm needs GLPK's glpsol: install glpk-utils (make tools)`},
		{"dorm:theta1", `option "theta1" is not key=value`},
		{"drf:x=1", `unknown option "x"`},
		{"fifo:x=1", `Policy "fifo" takes no options`},
	} {
		code, _, errOut = runCLI(t, "sim", "-workload", "dorm:2", "-policy", tc.policy)
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, tc.want)
	}
}

// TestSim_Experiment: -experiment list names the experiments; one runs
// and prints its metrics beside the paper's with the verdict, and writes
// results.md and each run's results; unknown names and -workload beside
// -experiment exit 1.
func TestSim_Experiment(t *testing.T) {
	experiment.Register(&experiment.Experiment{
		Name: "cli-test", Version: 1, Paper: "a test", Seeds: []uint64{1},
		Runs: []experiment.Run{{Name: "main", Workload: "parametric:3:100", Cluster: "2x4", Policies: []string{"fifo", "drf"}}},
		Metrics: []experiment.Metric{{Name: "avg JCT speed-up, drf over fifo", Paper: 2, Unit: "×", Higher: true,
			Value: experiment.Speedup("main", "drf", "fifo", experiment.JCT)}},
	})
	code, stdout, errOut := runCLI(t, "sim", "-experiment", "list")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^pollux-osdi21\s+\d+\s+Pollux`), stdout)

	out := t.TempDir()
	code, stdout, errOut = runCLI(t, "sim", "-experiment", "cli-test", "-out", out)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile("(?m)^`caravan sim -experiment cli-test` \\(version 1, at .+\\): a test; seeds 1; "), stdout)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^\| avg JCT speed-up, drf over fifo \| [\d.]+× \| 2\.00× \| [\d.]+ \| (met|missed) \|$`), stdout)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^\| drf \| \d+ \| \d+ \| [\d.]+% \| - \| - \| [\d.]+ \|$`), stdout)
	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	must.NoError(t, err)
	must.StrContains(t, stdout, strings.TrimSpace(string(md)))
	_, err = os.Stat(filepath.Join(out, "main", "seed-1", "summary.json"))
	must.NoError(t, err)

	code, _, errOut = runCLI(t, "sim", "-experiment", "bogus")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `Unknown experiment "bogus"; the experiments are `)
	code, _, errOut = runCLI(t, "sim", "-experiment", "cli-test", "-workload", "parametric")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "takes -workload or -experiment")
}

// TestSim_DormWithoutGlpsol: dorm without GLPK fails before any run, with
// options or without (it died in the run's server, without them).
func TestSim_DormWithoutGlpsol(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, policy := range []string{"dorm", "dorm:preset=dorm-1"} {
		code, _, errOut := runCLI(t, "sim", "-workload", "dorm:3", "-interval", "100h", "-policy", policy, "-out", t.TempDir())
		must.Eq(t, 1, code, must.Sprint(policy))
		must.StrContains(t, errOut, `olicy "dorm": dorm needs GLPK's glpsol`)
	}
}
