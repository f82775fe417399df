package main

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/server"
	"github.com/caravan-sched/caravan/structs"
	"github.com/caravan-sched/caravan/version"
	"github.com/shoenig/test/must"
)

// testAgent starts one in-process server on a fast simulated cluster of
// 4 × 4 GPUs, waits for it to lead, and returns its HTTP address.
func testAgent(t *testing.T) string {
	t.Helper()
	cluster := sim.DefaultConfig()
	cluster.Nodes, cluster.GPUsPerNode = 4, 4
	d := sim.NewDriver(sim.DriverConfig{Cluster: cluster, Speed: 200})
	d.Start()
	t.Cleanup(d.Stop)
	srv := server.TestServer(t, server.TestConfig(t, d))
	agent.WaitFor(t, 10*time.Second, "a leader", func() error {
		if !srv.IsLeader() {
			return errors.New("the server does not lead yet")
		}
		return nil
	})
	return "http://" + srv.HTTPAddr()
}

// longJobFile is jobFile with a job that trains for days of the fast
// cluster's time, so that it still runs however slowly the test goes.
func longJobFile(t *testing.T, id string) string {
	t.Helper()
	path := jobFile(t, id)
	src, err := os.ReadFile(path)
	must.NoError(t, err)
	long := strings.NewReplacer("threshold  = 0.01", "threshold  = 0.000001", "max_epochs = 20", "max_epochs = 100000").Replace(string(src))
	must.NotEq(t, string(src), long)
	must.NoError(t, os.WriteFile(path, []byte(long), 0o644))
	return path
}

// jobFile writes examples/demo.hcl, renamed to job id, to a temporary file.
func jobFile(t *testing.T, id string) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/demo.hcl")
	must.NoError(t, err)
	path := filepath.Join(t.TempDir(), id+".hcl")
	must.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(src), `job "demo"`, `job "`+id+`"`, 1)), 0o644))
	return path
}

// nomadJobFile writes examples/demo.nomad.hcl, the Nomad job file of
// demo.hcl, renamed to job id, to a temporary file.
func nomadJobFile(t *testing.T, id string) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/demo.nomad.hcl")
	must.NoError(t, err)
	must.StrContains(t, string(src), `job "demo"`)
	path := filepath.Join(t.TempDir(), id+".nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(src), `job "demo"`, `job "`+id+`"`, 1)), 0o644))
	return path
}

// unplaceableJobFile writes examples/demo.hcl, renamed to job id, with
// at least 8 workers of 4 GPUs each, more than the simulated cluster's 4
// nodes of 4 GPUs hold together (though one worker fits a node), to a
// temporary file: the job is accepted and waits for capacity.
func unplaceableJobFile(t *testing.T, id string) string {
	t.Helper()
	return replaceInJobFile(t, id, "memory = 64", `memory = 64

      device "nvidia/gpu" {
        count = 4
      }`, "min = 1\n      max = 4", "min = 8\n      max = 8")
}

// neverFitJobFile writes examples/demo.hcl, renamed to job id, with
// tasks that each ask for a GPU of 32 GiB, which the simulated cluster's
// 16 GiB GPUs never are, to a temporary file: the server refuses it.
func neverFitJobFile(t *testing.T, id string) string {
	t.Helper()
	return replaceInJobFile(t, id, "memory = 64", `memory = 64

      device "nvidia/gpu" {
        count = 1

        constraint {
          attribute = "${device.attr.memory}"
          operator  = ">="
          value     = "32 GiB"
        }
      }`)
}

// replaceInJobFile writes jobFile(id) with each old, new pair of
// replacements made once, and returns its path.
func replaceInJobFile(t *testing.T, id string, oldNew ...string) string {
	t.Helper()
	path := jobFile(t, id)
	b, err := os.ReadFile(path)
	must.NoError(t, err)
	src := string(b)
	for i := 0; i < len(oldNew); i += 2 {
		must.StrContains(t, src, oldNew[i])
		src = strings.Replace(src, oldNew[i], oldNew[i+1], 1)
	}
	must.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	return path
}

// changeJobFile writes a copy of the jobspec at path with line added at the
// top of its job block, and returns the copy's path.
func changeJobFile(t *testing.T, path, line string) string {
	t.Helper()
	src, err := os.ReadFile(path)
	must.NoError(t, err)
	i := strings.Index(string(src), "job \"")
	j := strings.Index(string(src[i:]), "{\n")
	must.Positive(t, i+1)
	must.Positive(t, j)
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	changed := string(src[:i+j+2]) + "  " + line + "\n" + string(src[i+j+2:])
	must.NoError(t, os.WriteFile(out, []byte(changed), 0o644))
	return out
}

// logged logs a command line's output, shown when a test fails or with -v.
func logged(t *testing.T, args []string) func(int, string, string) (int, string, string) {
	return func(code int, out, errOut string) (int, string, string) {
		t.Helper()
		t.Logf("caravan %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		return code, out, errOut
	}
}

// TestClientCommands runs the commands that talk to an agent against one
// server, in an order where each step builds on the last.
func TestClientCommands(t *testing.T) {
	addr := testAgent(t)
	cli := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		return logged(t, args)(runCLI(t, append(args[:len(args):len(args)], "-address", addr)...))
	}
	// cliArgs puts -address before the positional arguments of a command
	// whose words are words.
	cliArgs := func(t *testing.T, words []string, rest ...string) (int, string, string) {
		t.Helper()
		args := append(append(append([]string{}, words...), "-address", addr), rest...)
		return logged(t, args)(runCLI(t, args...))
	}

	t.Run("job run follows to a placement", func(t *testing.T) {
		code, out, errOut := cliArgs(t, []string{"job", "run"}, "-no-color", "../../examples/demo.hcl")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`==> Job registered: demo \(version 0, index \d+\)`), out)
		must.RegexMatch(t, regexp.MustCompile(`==> Job "demo" placed at plan index \d+ by optimus: 1 ps, \d+ workers? on \d+ nodes?`), out)
		must.RegexMatch(t, regexp.MustCompile(`node-\d\d\s+worker\s+[1-4]`), out)
		must.StrContains(t, out, "Reason: ")
	})

	t.Run("job status lists the job", func(t *testing.T) {
		code, out, errOut := cli(t, "job", "status")
		must.Eq(t, 0, code, must.Sprint(errOut))
		lines := strings.Split(out, "\n")
		must.RegexMatch(t, regexp.MustCompile(`^ID\s+Namespace\s+Status\s+Version\s+PS\s+Workers\s+GPUs\s+GPU Type\s+Progress\s+ETA\s+Submit Date$`), lines[0])
		must.RegexMatch(t, regexp.MustCompile(`^demo\s+default\s+(running|rescaling|complete)\s+0\s+\d+\s+\d+\s+\d+\s+(Tesla V100-SXM2-16GB|-)\s+(\d+%|-)\s+\S+\s+\d{4}-`), lines[1])
	})

	t.Run("job status shows the placement", func(t *testing.T) {
		code, out, errOut := cliArgs(t, []string{"job", "status"}, "-verbose", "demo")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^ID\s+= demo$`), out)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Algorithm\s+= optimus$`), out)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^GPU Type\s+= Tesla V100-SXM2-16GB$`), out)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^node-\d\d\s+ps\s+[12]\s+Tesla V100-SXM2-16GB$`), out)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^node-\d\d\s+worker\s+[1-4]\s+Tesla V100-SXM2-16GB$`), out)
		must.StrContains(t, out, "\nModel\n")
		must.StrContains(t, out, "Recent Events")
		must.StrContains(t, out, structs.EventJobRegistered)
	})

	t.Run("job status shows the fitted model", func(t *testing.T) {
		agent.WaitFor(t, 60*time.Second, "a fitted speed model", func() error {
			code, out, errOut := runCLI(t, "job", "status", "-address", addr, "-json", "demo")
			if code != 0 {
				return errors.New(errOut)
			}
			var sum api.JobSummary
			if err := json.Unmarshal([]byte(out), &sum); err != nil {
				return err
			}
			if sum.Model == nil || len(sum.Model.Speed) == 0 || sum.Model.StepsPerSecond == 0 {
				return errors.New("no speed model yet")
			}
			if g := sum.Model.Goodput; g == nil || len(g.ByType) == 0 {
				return errors.New("no throughput model of the GPU type yet")
			}
			return nil
		})
		code, out, errOut := cliArgs(t, []string{"job", "status"}, "-verbose", "demo")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Speed\s+= sync: steps/s = 1 / \(\S+(·\S+)?( \+ \S+(·\S+)?)*\)$`), out)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Steps/s\s+= \d+\.\d\d$`), out)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Speed Fit Error\s+= \d+\.\d% mean over [1-9]\d* configurations$`), out)
		must.StrNotContains(t, out, "Steps/s               = 0.00")
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Samples\s+= [1-9]\d*$`), out)
		must.StrContains(t, out, "\n\nThroughput by GPU Type\nGPU Type \"Tesla V100-SXM2-16GB\"\n")
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Nodes\s+Replicas\s+Local Batch\s+Measured Step\s+Model Step\s+Error\n1\s+[1-4]\s+\d+\s+\S+s\s+\S+s\s+[+-]\d+\.\d%$`), out)
	})

	t.Run("job status -json decodes", func(t *testing.T) {
		code, out, errOut := cliArgs(t, []string{"job", "status"}, "-json", "demo")
		must.Eq(t, 0, code, must.Sprint(errOut))
		var sum api.JobSummary
		must.NoError(t, json.Unmarshal([]byte(out), &sum))
		must.Eq(t, "demo", sum.Job.ID)
		must.NotNil(t, sum.Placement)
		must.Between(t, 1, sum.Placement.Placement.NumPS, 2)
		must.Positive(t, sum.Placement.Placement.NumWorkers)
	})

	t.Run("job history", func(t *testing.T) {
		code, out, errOut := cliArgs(t, []string{"job", "history"}, "-json", "demo")
		must.Eq(t, 0, code, must.Sprint(errOut))
		var hist []*structs.JobPlacement
		must.NoError(t, json.Unmarshal([]byte(out), &hist))
		must.SliceNotEmpty(t, hist)
		must.Eq(t, "optimus", hist[0].Algorithm)

		code, out, errOut = cliArgs(t, []string{"job", "history"}, "demo")
		must.Eq(t, 0, code, must.Sprint(errOut))
		lines := strings.Split(out, "\n")
		must.GreaterEq(t, 2, len(lines))
		must.RegexMatch(t, regexp.MustCompile(`^Time\s+Plan Index\s+Algorithm\s+PS\s+Workers\s+Nodes\s+Reason$`), lines[0])
		must.RegexMatch(t, regexp.MustCompile(`^\S+\s+\d+\s+optimus\s+[12]\s+[1-4]\s+node-\d\d`), lines[1])
	})

	t.Run("events", func(t *testing.T) {
		code, out, errOut := cli(t, "events", "-job", "demo")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d\s+default\s+demo\s+JobRegistered`), out)
		must.StrContains(t, out, "JobPlaced")
		must.StrNotContains(t, out, "AlgorithmChanged", must.Sprint("-job keeps only the job's events"))

		// The demo job trains to completion at this speed.
		code, out, errOut = cli(t, "events", "-follow", "-until-done", "demo", "-timeout", "60s", "-json")
		must.Eq(t, 0, code, must.Sprint(errOut))
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var last structs.Event
		must.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
		must.Eq(t, structs.EventJobCompleted, last.Type)
		must.Eq(t, "demo", last.JobID)

		code, _, errOut = cli(t, "events", "-follow", "-until-done", "never-registered", "-timeout", "300ms")
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, "Timed out after 300ms")
	})

	t.Run("job plan", func(t *testing.T) {
		code, out, errOut := cliArgs(t, []string{"job", "plan"}, jobFile(t, "planned"))
		must.Eq(t, 1, code, must.Sprint("a new job is a change: ", errOut))
		must.StrContains(t, out, `+ Job: "planned"`)
		must.RegexMatch(t, regexp.MustCompile(`Placement: [12] ps, [1-4] workers? on \d+ nodes?`), out)
		must.RegexMatch(t, regexp.MustCompile(`node-\d\d\s+worker\s+[1-4]`), out)

		// Nothing was registered.
		code, _, errOut = cliArgs(t, []string{"job", "plan"}, "-json", jobFile(t, "planned"))
		must.Eq(t, 1, code, must.Sprint(errOut))
		code, _, errOut = cliArgs(t, []string{"job", "status"}, "planned")
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, "404")
	})

	t.Run("job plan of a registered job", func(t *testing.T) {
		// One parameter server and one worker: the only shape, so the
		// scheduler has no other placement to plan.
		path := jobFile(t, "fixed")
		src, err := os.ReadFile(path)
		must.NoError(t, err)
		fixed := regexp.MustCompile(`max = \d`).ReplaceAllString(string(src), "max = 1")
		must.NoError(t, os.WriteFile(path, []byte(fixed), 0o644))
		code, _, errOut := cliArgs(t, []string{"job", "run"}, path)
		must.Eq(t, 0, code, must.Sprint(errOut))

		code, out, errOut := cliArgs(t, []string{"job", "plan"}, path)
		must.Eq(t, 0, code, must.Sprint("an unchanged job: ", errOut))
		must.StrContains(t, out, `  Job: "fixed" (version 0, unchanged)`)
		must.StrContains(t, out, "Placement: 1 ps, 1 worker on ")
		must.StrContains(t, out, "(unchanged)")
		must.StrContains(t, out, "running it changes nothing")

		code, out, errOut = cliArgs(t, []string{"job", "plan"}, "-json", changeJobFile(t, path, "priority = 70"))
		must.Eq(t, 1, code, must.Sprint(errOut))
		var resp api.PlanResponse
		must.NoError(t, json.Unmarshal([]byte(out), &resp))
		must.True(t, resp.Changed)
		must.Eq(t, &api.JobDiff{Type: api.DiffTypeEdited, ID: "fixed", Fields: []*api.FieldDiff{
			{Type: api.DiffTypeEdited, Path: "priority", Old: "50", New: "70"},
		}}, resp.Diff)

		code, out, errOut = cliArgs(t, []string{"job", "plan"}, changeJobFile(t, path, `meta { team = "vision" }`))
		must.Eq(t, 1, code, must.Sprint(errOut))
		must.StrContains(t, out, `~ Job: "fixed" (version 0)`+"\n"+`  + meta.team: "vision"`+"\n\n  Placement: ")
		must.StrContains(t, out, "caravan job run ")

		code, out, errOut = cliArgs(t, []string{"job", "plan"}, "-no-color", "../../jobspec/testdata/invalid/min_gt_max.hcl")
		must.Eq(t, 255, code, must.Sprint("an error"))
		must.Eq(t, "", out)
		must.StrContains(t, errOut, "Invalid elastic.workers.min")

		code, _, errOut = cliArgs(t, []string{"job", "stop"}, "-purge", "fixed")
		must.Eq(t, 0, code, must.Sprint(errOut))
	})

	t.Run("job plan and run of a Nomad job file", func(t *testing.T) {
		path := nomadJobFile(t, "from-nomad")
		code, out, errOut := cliArgs(t, []string{"job", "plan"}, path)
		must.Eq(t, 1, code, must.Sprint("a new job is a change: ", errOut))
		must.StrContains(t, out, `+ Job: "from-nomad"`)
		must.RegexMatch(t, regexp.MustCompile(`Placement: [12] ps, [1-4] workers? on \d+ nodes?`), out)
		must.StrContains(t, out, "To submit the job, run:\n  nomad job run "+path)

		// job run refuses it, saying what submits it; nothing is registered.
		code, out, errOut = cliArgs(t, []string{"job", "run"}, "-detach", path)
		must.Eq(t, 1, code)
		must.Eq(t, "", out)
		must.StrContains(t, errOut, "is a Nomad job file: submit it to Nomad with \"nomad job run "+path+"\"")
		code, _, errOut = cliArgs(t, []string{"job", "status"}, "from-nomad")
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, "404")

		// A mistake is reported as by job validate, with plan's exit code.
		code, out, errOut = cliArgs(t, []string{"job", "plan"}, "-no-color", "../../jobspec/testdata/nomad/invalid/caravan_block.nomad.hcl")
		must.Eq(t, 255, code)
		must.Eq(t, "", out)
		must.StrContains(t, errOut, "caravan_block.nomad.hcl:14:33: Invalid training.mode")
	})

	t.Run("job run is declarative; versions, inspect, revert; stop", func(t *testing.T) {
		path := longJobFile(t, "stoppable")
		code, out, errOut := cliArgs(t, []string{"job", "run"}, "-detach", path)
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`^Job registered: stoppable \(version 0, index \d+\)\n$`), out)

		code, out, errOut = cliArgs(t, []string{"job", "run"}, "-detach", path)
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.Eq(t, "Job unchanged: stoppable (version 0)\n", out)

		changed := changeJobFile(t, path, "priority = 70")
		code, out, errOut = cliArgs(t, []string{"job", "run"}, "-detach", changed)
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`^Job registered: stoppable \(version 1, index \d+\)\n$`), out)

		// -update is still accepted; the placement of an unchanged job is
		// the one it has.
		code, out, errOut = cliArgs(t, []string{"job", "run"}, "-update", "-no-color", changed)
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.StrContains(t, out, "==> Job unchanged: stoppable (version 1)\n")
		must.RegexMatch(t, regexp.MustCompile(`==> Job "stoppable" placed at plan index \d+ by optimus`), out)

		// A new version of a placed job shows the placement of the next
		// round.
		code, out, errOut = cliArgs(t, []string{"job", "run"}, "-no-color", changeJobFile(t, path, "priority = 80"))
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`==> Job registered: stoppable \(version 2, index \d+\)\n==> Waiting for the scheduler's next round...\n==> Job "stoppable" placed at plan index \d+ by optimus`), out)

		code, out, errOut = cliArgs(t, []string{"job", "versions"}, "stoppable")
		must.Eq(t, 0, code, must.Sprint(errOut))
		lines := strings.Split(out, "\n")
		must.RegexMatch(t, regexp.MustCompile(`^Version\s+Submitted\s+Changes$`), lines[0])
		must.RegexMatch(t, regexp.MustCompile(`^2\s+\d{4}-\S+\s+priority 70 → 80$`), lines[1])
		must.RegexMatch(t, regexp.MustCompile(`^1\s+\d{4}-\S+\s+priority 50 → 70$`), lines[2])
		must.RegexMatch(t, regexp.MustCompile(`^0\s+\d{4}-\S+\s+first version$`), lines[3])
		code, out, errOut = cliArgs(t, []string{"job", "versions"}, "-json", "stoppable")
		must.Eq(t, 0, code, must.Sprint(errOut))
		var versions []*structs.Job
		must.NoError(t, json.Unmarshal([]byte(out), &versions))
		must.SliceLen(t, 3, versions)

		code, out, errOut = cliArgs(t, []string{"job", "inspect"}, "stoppable")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.StrHasPrefix(t, "{\n  \"Job\": {\n", out, must.Sprint("wrapped as Nomad's job inspect"))
		job := inspectedJob(t, out)
		must.Eq(t, 2, job.Version)
		must.Eq(t, 80, job.Priority)
		must.Positive(t, job.CreateIndex, must.Sprint("the registered job, not a jobspec"))
		code, out, errOut = cliArgs(t, []string{"job", "inspect"}, "-version", "1", "stoppable")
		must.Eq(t, 0, code, must.Sprint(errOut))
		job = inspectedJob(t, out)
		must.Eq(t, 1, job.Version)
		must.Eq(t, 70, job.Priority)
		code, _, errOut = cliArgs(t, []string{"job", "inspect"}, "-version", "9", "stoppable")
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, `job "stoppable" has no version 9`)
		code, _, errOut = cliArgs(t, []string{"job", "inspect"}, "nope")
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, `no job "nope" is registered, and no file has that path`)

		code, out, errOut = cliArgs(t, []string{"job", "revert"}, "-prior-version", "2", "stoppable", "1")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`^==> Job "stoppable" reverted to version 1: registered as version 3 \(index \d+\)\n$`), out)
		code, out, errOut = cliArgs(t, []string{"job", "revert"}, "stoppable", "1")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.Eq(t, "==> Job \"stoppable\" unchanged: version 1 has the spec of the current version 3\n", out)
		code, _, errOut = cliArgs(t, []string{"job", "revert"}, "-prior-version", "2", "stoppable", "0")
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, "current version is 3, not 2")
		code, _, errOut = cliArgs(t, []string{"job", "revert"}, "stoppable", "9")
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, "no version 9")
		code, out, errOut = cliArgs(t, []string{"job", "versions"}, "stoppable")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^3\s+\S+\s+priority 80 → 70$`), out)

		code, out, errOut = cliArgs(t, []string{"job", "stop"}, "stoppable")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.Eq(t, "==> Job \"stoppable\" stopped\n", out)

		code, out, errOut = cliArgs(t, []string{"job", "status"}, "stoppable")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Status\s+= stopped$`), out)
	})

	t.Run("job run of a job that cannot be placed", func(t *testing.T) {
		// Exit status 2 and the Placement Failure show that job run
		// returned on the plan that paused the job, not on its timeout
		// (status 1, "timed out after").
		code, out, errOut := cliArgs(t, []string{"job", "run"}, "-no-color", unplaceableJobFile(t, "unplaceable"))
		must.Eq(t, 2, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^==> Job "unplaceable": Placement Failure at plan index \d+ by optimus$`), out)
		must.StrContains(t, out, `==> Job "unplaceable" stays registered and pending until there is room; "caravan job status unplaceable" shows why it waits`)

		// The job stays registered and pending, and its status says why,
		// as job run did.
		code, js, errOut := cliArgs(t, []string{"job", "status"}, "-json", "unplaceable")
		must.Eq(t, 0, code, must.Sprint(errOut))
		var sum api.JobSummary
		must.NoError(t, json.Unmarshal([]byte(js), &sum))
		must.Eq(t, structs.JobStatusPending, sum.Job.Status)
		must.NotNil(t, sum.Placement)
		must.True(t, sum.Placement.Placement.Paused())
		must.NotEq(t, "", sum.Placement.Placement.Reason)
		failure := formatPlacementFailure(sum.Placement.Placement)
		must.StrContains(t, out, indent(failure))

		code, status, errOut := cliArgs(t, []string{"job", "status"}, "unplaceable")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Status\s+= pending$`), status)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Tasks\s+= 0 workers on 0 nodes \(paused\)$`), status)
		must.StrContains(t, status, "\n\nPlacement Failure\n"+failure+"\n\nModel\n")

		// With -json, job run prints the summary and exits 2 all the same.
		code, js, errOut = cliArgs(t, []string{"job", "run"}, "-json", unplaceableJobFile(t, "unplaceable-json"))
		must.Eq(t, 2, code, must.Sprint(errOut))
		var run struct{ Summary *api.JobSummary }
		must.NoError(t, json.Unmarshal([]byte(js), &run))
		must.Eq(t, structs.JobStatusPending, run.Summary.Job.Status)
		must.True(t, run.Summary.Placement.Placement.Paused())
	})

	t.Run("job run of a job that can never be placed", func(t *testing.T) {
		// Refused at registration, with exit status 2 and why, in
		// Nomad's words; nothing is registered.
		code, out, errOut := cliArgs(t, []string{"job", "run"}, "-no-color", neverFitJobFile(t, "neverfit"))
		must.Eq(t, 2, code, must.Sprint(out))
		must.StrContains(t, errOut, `422 Unprocessable Entity: job "neverfit": job can never be placed: no node can run a worker even with nothing else on it (4 nodes evaluated; constraint "missing devices" filtered 4 nodes: a task asks for 1 nvidia/gpu)`)
		code, _, errOut = cliArgs(t, []string{"job", "status"}, "neverfit")
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, "404")
	})

	t.Run("job run of an invalid jobspec", func(t *testing.T) {
		code, out, errOut := cliArgs(t, []string{"job", "run"}, "-no-color", "../../jobspec/testdata/invalid/min_gt_max.hcl")
		must.Eq(t, 1, code)
		must.Eq(t, "", out)
		must.StrContains(t, errOut, "Error: ../../jobspec/testdata/invalid/min_gt_max.hcl:8:13: Invalid elastic.workers.min")
	})

	t.Run("plugin list", func(t *testing.T) {
		code, out, errOut := cli(t, "plugin", "list", "-json")
		must.Eq(t, 0, code, must.Sprint(errOut))
		var plugins []*structs.PluginStatus
		must.NoError(t, json.Unmarshal([]byte(out), &plugins))
		must.SliceLen(t, len(builtin.Algorithms), plugins)
		must.Eq(t, builtin.Names()[0], plugins[0].Name)
		must.Eq(t, structs.PluginOriginBuiltin, plugins[0].Origin)

		code, out, errOut = cli(t, "plugin", "list")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Name\s+Version\s+Origin\s+API\s+Health\s+Restarts\s+Start\s+Error\n`+builtin.Names()[0]+`\s`), out)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^optimus\s+\S+\s+builtin\s+v1\s+healthy\s+0\s+-\s+-$`), out)
	})

	t.Run("server members", func(t *testing.T) {
		code, out, errOut := cli(t, "server", "members", "-json")
		must.Eq(t, 0, code, must.Sprint(errOut))
		var servers []*api.RaftServer
		must.NoError(t, json.Unmarshal([]byte(out), &servers))
		must.SliceLen(t, 1, servers)
		must.True(t, servers[0].Leader)
		must.True(t, servers[0].Voter)

		code, out, errOut = cli(t, "server", "members")
		must.Eq(t, 0, code, must.Sprint(errOut))
		lines := strings.Split(strings.TrimSpace(out), "\n")
		must.SliceLen(t, 2, lines)
		must.RegexMatch(t, regexp.MustCompile(`^Name\s+ID\s+Raft Address\s+HTTP Address\s+Build\s+Leader\s+Voter$`), lines[0])
		must.RegexMatch(t, regexp.MustCompile(`127\.0\.0\.1:\d+\s+`+regexp.QuoteMeta(version.Number())+`\s+true\s+true$`), lines[1])

		code, out, errOut = cli(t, "operator", "raft", "list-peers")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Node\s+ID\s+Address\s+State\s+Voter\n\S+\s+\S+\s+127\.0\.0\.1:\d+\s+leader\s+true$`), out)
	})

	t.Run("operator scheduler config", func(t *testing.T) {
		code, out, errOut := cli(t, "operator", "scheduler", "set-config", "-algorithm", "drf")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.StrContains(t, out, `algorithm "drf"`)

		code, out, errOut = cli(t, "operator", "scheduler", "get-config")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Algorithm\s+= drf$`), out)

		code, out, errOut = cli(t, "operator", "scheduler", "get-config", "-json")
		must.Eq(t, 0, code, must.Sprint(errOut))
		var cfg structs.SchedulerConfig
		must.NoError(t, json.Unmarshal([]byte(out), &cfg))
		must.Eq(t, "drf", cfg.Algorithm)

		code, _, errOut = cli(t, "operator", "scheduler", "set-config", "-algorithm", "nope")
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, `unknown algorithm "nope"`)

		code, _, errOut = cli(t, "operator", "scheduler", "set-config")
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, "Give -algorithm")
	})

	t.Run("node status", func(t *testing.T) {
		code, out, errOut := cli(t, "node", "status")
		must.Eq(t, 0, code, must.Sprint(errOut))
		lines := strings.Split(strings.TrimSpace(out), "\n")
		must.SliceLen(t, 5, lines, must.Sprint("a header and 4 nodes"))
		must.RegexMatch(t, regexp.MustCompile(`^ID\s+Name\s+Datacenter\s+Class\s+Status\s+Eligible\s+CPU\s+Memory\s+GPUs\s+GPU Type$`), lines[0])
		for _, l := range lines[1:] {
			must.RegexMatch(t, regexp.MustCompile(`^node-\d\d\s+node-\d\d\s+.*\s+ready\s+true\s+\d+\s+\d+\s+4/4\s+Tesla V100-SXM2-16GB$`), l)
		}

		code, out, errOut = cli(t, "node", "status", "-json")
		must.Eq(t, 0, code, must.Sprint(errOut))
		var nodes []*structs.Node
		must.NoError(t, json.Unmarshal([]byte(out), &nodes))
		must.SliceLen(t, 4, nodes)
	})

	t.Run("operator snapshot save and restore", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "backup.snap")
		code, out, errOut := cliArgs(t, []string{"operator", "snapshot", "save"}, path)
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.Eq(t, "State file written to "+path+"\n", out)
		info, err := os.Stat(path)
		must.NoError(t, err)
		must.Positive(t, info.Size())
		leftovers, err := filepath.Glob(path + ".tmp*")
		must.NoError(t, err)
		must.SliceEmpty(t, leftovers)

		code, out, errOut = cliArgs(t, []string{"operator", "snapshot", "restore"}, path)
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.Eq(t, "Snapshot Restored\n", out)

		code, out, errOut = cli(t, "job", "status")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^demo\s+default`), out)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^stoppable\s+default\s+stopped`), out)

		code, _, errOut = cliArgs(t, []string{"operator", "snapshot", "restore"}, filepath.Join(t.TempDir(), "missing.snap"))
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, "Error opening snapshot file")
	})
}

// TestClientCommands_Unreachable checks that every command that talks to an
// agent fails with exit code 1 and a hint when nothing listens.
func TestClientCommands_Unreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	addr := "http://" + l.Addr().String()
	must.NoError(t, l.Close()) // nothing listens there now
	cases := [][]string{
		{"job", "run", "-address", addr, "../../examples/demo.hcl"},
		{"job", "status", "-address", addr},
		{"job", "stop", "-address", addr, "demo"},
		{"job", "plan", "-address", addr, "../../examples/demo.hcl"},
		{"job", "history", "-address", addr, "demo"},
		{"job", "versions", "-address", addr, "demo"},
		{"job", "inspect", "-address", addr, "demo"},
		{"job", "revert", "-address", addr, "demo", "0"},
		{"server", "members", "-address", addr},
		{"operator", "raft", "list-peers", "-address", addr},
		{"operator", "scheduler", "get-config", "-address", addr},
		{"operator", "snapshot", "save", "-address", addr, filepath.Join(t.TempDir(), "s.snap")},
		{"node", "status", "-address", addr},
		{"node", "status", "-address", addr, "node-01"},
		{"alloc", "status", "-address", addr, "demo"},
		{"job", "logs", "-address", addr, "demo"},
		{"events", "-address", addr},
		{"plugin", "list", "-address", addr},
		{"acl", "policy", "list", "-address", addr},
		{"acl", "token", "list", "-address", addr},
		{"queue", "list", "-address", addr},
		{"queue", "status", "-address", addr, "nlp"},
		{"queue", "delete", "-address", addr, "nlp"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, args...)
			must.Eq(t, exitCodeOfError(args), code)
			must.Eq(t, "", out)
			must.StrContains(t, errOut, "connection refused")
			must.StrContains(t, errOut, "Is a Caravan agent running at "+addr+"?")
		})
	}
}

// exitCodeOfError is the exit code of a failing command line: 255 for job
// plan, whose 1 means "changes", as Nomad's; 1 for the others.
func exitCodeOfError(args []string) int {
	if len(args) > 1 && args[0] == "job" && args[1] == "plan" {
		return 255
	}
	return 1
}

// TestClientCommands_Usage checks the usage errors of the client commands
// and that the parent commands print help.
func TestClientCommands_Usage(t *testing.T) {
	cases := [][]string{
		{"job", "status", "a", "b"},
		{"job", "stop"},
		{"job", "history"},
		{"job", "run"},
		{"job", "plan", "-bogus", "a.hcl"},
		{"job", "versions"},
		{"job", "revert", "demo"},
		{"job", "revert", "demo", "one"},
		{"job", "revert", "-prior-version", "x", "demo", "1"},
		{"job", "inspect", "-version", "1", "../../examples/demo.hcl"},
		{"job", "inspect", "-version", "one", "demo"},
		{"job", "inspect", "no/such/file.hcl"},
		{"operator", "raft", "remove-peer"},
		{"operator", "snapshot", "save"},
		{"operator", "scheduler", "set-config", "-option", "novalue", "-algorithm", "drf"},
		{"node", "status", "extra"},
		{"queue", "apply"},
		{"queue", "list", "extra"},
		{"queue", "status"},
		{"queue", "delete"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, args...)
			must.Eq(t, exitCodeOfError(args), code)
			must.Eq(t, "", out)
			must.NotEq(t, "", errOut)
		})
	}
	for _, parent := range []string{"operator", "operator raft", "operator snapshot", "operator scheduler", "server", "node", "queue"} {
		t.Run(parent, func(t *testing.T) {
			code, out, errOut := runCLI(t, strings.Fields(parent)...)
			must.Eq(t, 1, code, must.Sprint("the CLI prints the help and exits 1"))
			must.Eq(t, "", out+errOut)
		})
	}
}
