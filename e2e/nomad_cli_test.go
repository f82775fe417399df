//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/shoenig/test/must"
)

// TestCaravanNomad_CLIAndRestart runs Caravan's CLI against an agent on a
// real Nomad cluster as a Nomad user does (issue 28, items 5 and 8):
//   - `job plan`, `job inspect` and `job run` take Nomad job files;
//     inspect is shaped as Nomad's ({"Job": …}); `job run` of a Nomad file
//     exits 1 and names `nomad job run`;
//   - `node status` prints short IDs, full ones with -verbose;
//   - the agent killed and restarted while a trainer job reports to it
//     loses no sample: no trainer drops a report (before, the restarted
//     leader answered 404 for jobs it had not loaded yet), and the job
//     completes;
//   - with the Nomad server stopped, `node status` exits 1 with the error.
func TestCaravanNomad_CLIAndRestart(t *testing.T) {
	o := startOnNomad(t, func(nc *agent.NomadCluster, checkpoints string) string {
		return nomadAgentBody(nc, checkpoints, "drf")
	})
	nc, cl, c, addr := o.nc, o.cl, o.c, o.addr
	caravan := func(args ...string) (string, int) { return o.cli(t, args...) }
	nomadFile := filepath.Join("..", "examples", "demo.nomad.hcl")

	t.Run("nomad files", func(t *testing.T) {
		out, code := caravan("job", "plan", nomadFile)
		must.EqOp(t, 1, code, must.Sprintf("job plan of a new job exits 1 (changes), as Nomad's:\n%s", out))
		must.StrContains(t, out, "demo")
		out, code = caravan("job", "inspect", nomadFile)
		must.EqOp(t, 0, code, must.Sprint(out))
		var wrapped struct{ Job *api.Job }
		must.NoError(t, json.Unmarshal([]byte(out), &wrapped), must.Sprint(out))
		must.NotNil(t, wrapped.Job)
		must.EqOp(t, "demo", wrapped.Job.ID)
		out, code = caravan("job", "run", nomadFile)
		must.EqOp(t, 1, code, must.Sprint(out))
		must.StrContains(t, out, "nomad job run")
	})

	_, _, err := c.Jobs().Register(elasticTrainerJob("r", o.trainer, 2), nil)
	must.NoError(t, err)
	waitEvent(t, c, "r", api.EventTasksRunning, 1, 2*time.Minute)

	t.Run("short IDs", func(t *testing.T) {
		out, code := caravan("node", "status")
		must.EqOp(t, 0, code, must.Sprint(out))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^[0-9a-f]{8}\s`), out)
		must.False(t, regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-`).MatchString(out), must.Sprintf("full IDs without -verbose:\n%s", out))
		out, code = caravan("node", "status", "-verbose")
		must.EqOp(t, 0, code, must.Sprint(out))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\s`), out)
	})

	t.Run("restart loses no sample", func(t *testing.T) {
		waitStep(t, c, "r", 20)
		cl.restart(t, addr)
		cl.waitLeader(t, "")
		sum, _, err := c.Jobs().Summary("r", nil)
		must.NoError(t, err)
		waitStep(t, c, "r", sum.LastSample.Step+20)
		agent.WaitFor(t, 4*time.Minute, "job r complete", jobIs(c, "r", api.JobStatusComplete))
		allocs, _, err := nc.Client.Jobs().Allocations("caravan-r", true, nil)
		must.NoError(t, err)
		read := 0
		for _, stub := range allocs {
			if _, ok := stub.TaskStates["worker"]; !ok {
				continue
			}
			alloc, _, err := nc.Client.Allocations().Info(stub.ID, nil)
			must.NoError(t, err)
			logs, err := catFile(nc.Client, alloc, "alloc/logs/worker.stderr.0")
			must.NoError(t, err)
			read++
			must.StrNotContains(t, logs, "dropping them", must.Sprintf("allocation %s dropped samples:\n%s", stub.ID, lastLines(logs, 20)))
		}
		must.Positive(t, read)
	})

	t.Run("nomad down", func(t *testing.T) {
		nc.StopServer()
		t.Cleanup(nc.StartServer)
		agent.WaitFor(t, time.Minute, "node status to fail", func() error {
			out, code := caravan("node", "status")
			if code != 1 {
				return fmt.Errorf("exit %d:\n%s", code, out)
			}
			if strings.Contains(out, "No nodes") {
				return fmt.Errorf("says there are no nodes:\n%s", out)
			}
			return nil
		})
	})
}
