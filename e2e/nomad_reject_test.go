//go:build e2e

package e2e

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// TestNomadJobRun_Reject runs two Nomad job files Caravan cannot run with
// `nomad job run`: one whose caravan block misspells global_batch_size,
// one of type "service". Caravan stops each in Nomad before its tasks
// crash-loop, with the error and its line and column in the submitted
// file written where Nomad users look (the name `nomad job status`
// prints, meta caravan_error), and `caravan job status` shows it as
// rejected. The fixed file run again is adopted and runs under Caravan.
func TestNomadJobRun_Reject(t *testing.T) {
	nc, trainer, c := trainingOnNomad(t)
	cli := nomadCLI{addr: nc.Address}
	bin := agent.BuildCaravan(t) // for its CLI

	good := trainerFile{id: "typo", trainer: trainer, maxWorkers: 2, noGPU: true}.String()
	service := trainerFile{id: "svc", trainer: trainer, maxWorkers: 2, noGPU: true}.String()
	cases := []struct {
		id, src, from, to string
		// at is where in to the error is, and summary what it says.
		at, summary string
	}{
		{id: "typo", src: good, from: "global_batch_size", to: "global_batchsize", at: "global_batchsize", summary: "Unsupported argument"},
		{id: "svc", src: service, from: `type = "batch"`, to: `type = "service"`, at: `"service"`, summary: "Not a batch job"},
	}
	for _, tc := range cases {
		cli.jobRun(t, tc.id, strings.Replace(tc.src, tc.from, tc.to, 1))
	}
	for _, tc := range cases {
		src := strings.Replace(tc.src, tc.from, tc.to, 1)
		// Where the error is: the line and column of the changed text in
		// the file as submitted (its first line is empty).
		before := src[:strings.Index(src, tc.to)+strings.Index(tc.to, tc.at)]
		line, col := strings.Count(before, "\n")+1, len(before)-strings.LastIndex(before, "\n")
		file := tc.id + " (submitted to Nomad, version 0)"
		where := fmt.Sprintf("%s:%d:%d: %s", file, line, col, tc.summary)

		var job *nomadapi.Job
		agent.WaitFor(t, 2*time.Minute, "Nomad job "+tc.id+" stopped by Caravan", func() error {
			job = nomadJob(t, nc, tc.id)
			if job.Stop == nil || !*job.Stop || job.Meta["caravan_error"] == "" {
				return fmt.Errorf("Nomad job %s at version %d, stop %v, meta %v", tc.id, *job.Version, job.Stop, job.Meta)
			}
			return nil
		})
		t.Logf("Nomad job %s: name %q, meta caravan_error %q", tc.id, *job.Name, job.Meta["caravan_error"])
		must.StrContains(t, job.Meta["caravan_error"], where)
		must.StrHasPrefix(t, tc.id+" (rejected by Caravan: "+file+":", *job.Name, must.Sprint("the first error, with its line and column"))
		must.Eq(t, 2, *job.Version, must.Sprint("two versions written over the user's, once: its groups at count 0, then stopped"))
		must.Eq(t, "", job.Meta["caravan_job_id"])
		must.StrContains(t, job.UI.Description, where)

		// Nomad ran the groups as written until Caravan stopped them:
		// one allocation per group, its task restarted once at most (a
		// task without Caravan's environment exits at once).
		agent.WaitFor(t, time.Minute, "Nomad job "+tc.id+" dead", func() error {
			if job := nomadJob(t, nc, tc.id); *job.Status != "dead" {
				return fmt.Errorf("Nomad job %s is %s", tc.id, *job.Status)
			}
			return nil
		})
		status := cli.run(t, "job", "status", tc.id)
		t.Logf("nomad job status %s:\n%s", tc.id, status)
		must.StrContains(t, status, *job.Name)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Status\s+= dead \(stopped\)$`), status)
		allocs, _, err := nc.Client.Jobs().Allocations(tc.id, true, nil)
		must.NoError(t, err)
		most := 0
		for _, a := range allocs {
			for task, ts := range a.TaskStates {
				t.Logf("Nomad job %s: allocation %s, task %s: %d restarts", tc.id, a.ID, task, ts.Restarts)
				most = max(most, int(ts.Restarts))
			}
		}
		must.LessEq(t, 2, len(allocs), must.Sprint("one allocation per group, none rescheduled"))
		must.LessEq(t, 1, most, must.Sprint("no task restarted more than once (Nomad's first restart): Caravan stopped them"))

		out, err := exec.Command(bin, "job", "status", "-address", c.Address(), tc.id).CombinedOutput()
		t.Logf("caravan job status %s:\n%s", tc.id, out)
		must.NoError(t, err, must.Sprint(string(out)))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Status\s+= rejected$`), string(out))
		must.StrContains(t, string(out), where)
		sum := summary(t, c, tc.id)
		must.Eq(t, api.JobStatusRejected, sum.Job.Status)
	}
	list, err := exec.Command(bin, "job", "status", "-address", c.Address()).CombinedOutput()
	must.NoError(t, err, must.Sprint(string(list)))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^typo\s+default\s+rejected\s`), string(list))

	// The fixed file is a user's version like any other.
	cli.jobRun(t, "typo", good)
	agent.WaitFor(t, 2*time.Minute, "job typo running", jobIs(c, "typo", api.JobStatusRunning))
	waitEvent(t, c, "typo", api.EventTasksRunning, 1, 2*time.Minute)
	job := nomadJob(t, nc, "typo")
	must.Eq(t, "typo", *job.Name)
	must.Eq(t, "", job.Meta["caravan_error"])
	must.NotEq(t, "", job.Meta["caravan_job_id"], must.Sprint("Caravan runs the job"))
	must.SliceNotEmpty(t, caravanGroups(job))
}
