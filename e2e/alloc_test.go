//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/shoenig/test/must"
)

// TestCaravanNomad_AllocStatusAndLogs: for a job Caravan runs on Nomad,
// `caravan alloc status JOB` lists its Nomad allocations, `caravan alloc
// status ALLOC` (an ID's start) describes one with its tasks, and
// `caravan job logs` prints a worker's log, all read from the Nomad
// cluster whose address the agent reports, with no nomad CLI.
func TestCaravanNomad_AllocStatusAndLogs(t *testing.T) {
	o := startOnNomad(t, func(nc *agent.NomadCluster, checkpoints string) string {
		return nomadAgentBody(nc, checkpoints, "fifo")
	})
	c, trainer := o.c, o.trainer
	_, _, err := c.Jobs().Register(elasticTrainerJob("logs", trainer, 1), (&api.WriteOptions{}).WithContext(t.Context()))
	must.NoError(t, err)
	waitEvent(t, c, "logs", api.EventTasksRunning, 1, 2*time.Minute)

	caravan := func(args ...string) (string, error) {
		out, code := o.cli(t, args...)
		if code != 0 {
			return out, fmt.Errorf("exit %d", code)
		}
		return out, nil
	}
	out, err := caravan("alloc", "status", "logs")
	must.NoError(t, err, must.Sprint(out))
	t.Logf("caravan alloc status logs:\n%s", out)
	must.StrContains(t, out, `Nomad job "caravan-logs"`)
	worker := regexp.MustCompile(`(?m)^([0-9a-f]{8})\s+worker-\S+\s+[0-9a-f]{8}\s+run\s+running\s`).FindStringSubmatch(out)
	must.SliceLen(t, 2, worker, must.Sprint("a running worker allocation"))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^[0-9a-f]{8}\s+ps-\S+\s+[0-9a-f]{8}\s+run\s+running\s`), out)

	out, err = caravan("alloc", "status", worker[1])
	must.NoError(t, err, must.Sprint(out))
	t.Logf("caravan alloc status %s:\n%s", worker[1], out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^ID\s+= `+worker[1]+`[0-9a-f-]{28}$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Job\s+= caravan-logs$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^worker\s+running\s+false\s+0\s+Started`), out)

	// The trainer logs through hclog to stderr; the chief finds the
	// parameter servers before its first step.
	agent.WaitFor(t, time.Minute, "the worker's log", func() error {
		out, err := caravan("job", "logs", "-stderr", "logs")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if !strings.Contains(out, "found the parameter servers") {
			return fmt.Errorf("no line about the parameter servers in:\n%s", out)
		}
		return nil
	})
	out, err = caravan("job", "logs", "-role", "nope", "logs")
	must.Error(t, err)
	must.StrContains(t, out, `has no running allocation of role "nope"`)
}
