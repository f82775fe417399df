//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/shoenig/test/must"
)

// The test of this file changes a running trainer job as a Nomad user does
// (issue 28): `nomad job run` of a changed file stops Caravan's groups at
// once, so the trainer checkpoints as it stops (its chief at the next step
// boundary, within the kill_timeout Caravan gives its tasks), and Caravan
// takes the new version over only once those tasks stopped, so that the
// next generation resumes from that checkpoint: no step trained is lost.

// TestNomadJobRun_UpdateLosesNoStep runs a long trainer job with `nomad
// job run`, lets it train, and runs the same file with a changed meta
// value. The old generation's last sample and the checkpoint it wrote on
// stop name the same step k, no sample of it is past k, the new
// generation's first sample is at k having loaded that checkpoint, and
// `caravan job status` shows the step that runs, from k on.
func TestNomadJobRun_UpdateLosesNoStep(t *testing.T) {
	u := startUpdateCluster(t)
	nc, c := u.nc, u.client
	cli := nomadCLI{addr: nc.Address}

	src := trainerFile{id: "up", trainer: u.trainer, maxWorkers: 2, long: true}.String()
	cli.jobRun(t, "up", src)
	waitEvent(t, c, "up", api.EventTasksRunning, 1, 2*time.Minute)
	waitStep(t, c, "up", 40)
	job := nomadJob(t, nc, "up")
	must.Eq(t, "1", job.Meta["caravan_generation"])
	for _, name := range caravanGroups(job) {
		for _, tg := range job.TaskGroups {
			if *tg.Name == name {
				must.Eq(t, 30*time.Second, *tg.Tasks[0].KillTimeout, must.Sprintf("group %s: the checkpoint timeout to checkpoint in when stopped", name))
				must.Eq(t, "30s", tg.Tasks[0].Env["CARAVAN_CHECKPOINT_TIMEOUT"])
			}
		}
	}
	before := summary(t, c, "up").LastSample
	must.Zero(t, before.CheckpointStep, must.Sprint("nothing asked the trainer to checkpoint yet"))

	// The same job with another meta value: Nomad replaces Caravan's
	// groups with the user's at once.
	changed := strings.Replace(src, `type = "batch"`, "type = \"batch\"\n  meta {\n    revision = \"2\"\n  }", 1)
	must.NotEq(t, src, changed)
	cli.jobRun(t, "up", changed)

	confirmed := waitEvent(t, c, "up", api.EventCheckpointConfirmed, 1, 2*time.Minute)
	must.StrContains(t, confirmed.Message, "earlier generation stopped")
	k := confirmedStep(t, confirmed)
	m := u.manifest(t, "up")
	must.Eq(t, k, m.Step, must.Sprint("the checkpoint Caravan confirmed is the one on disk"))
	must.Eq(t, "1", m.Generation, must.Sprint("written by the stopped generation"))
	resumedAtNoLoss(t, c, "up", k)

	agent.WaitFor(t, time.Minute, "generation 2 running", func() error {
		sum := summary(t, c, "up")
		if o := sum.Observed; o == nil || o.Change == nil || o.Change.Phase != api.ChangeDone {
			return fmt.Errorf("observed: %+v", o)
		}
		return nil
	})
	must.Eq(t, "2", nomadJob(t, nc, "up").Meta["caravan_generation"])
	must.Eq(t, "2", nomadJob(t, nc, "up").Meta["revision"], must.Sprint("the user's change is in what runs"))

	// `caravan job status` shows the step the new generation runs at.
	waitStep(t, c, "up", k+5)
	var shown int64
	agent.WaitFor(t, time.Minute, "job status showing a step", func() error {
		out, err := exec.Command(u.bin, "job", "status", "-address", "http://"+u.leader, "up").CombinedOutput()
		if err != nil {
			return fmt.Errorf("caravan job status: %v\n%s", err, out)
		}
		match := regexp.MustCompile(`(?m)^Step\s+=\s+(\d+)\s*$`).FindSubmatch(out)
		if match == nil {
			return fmt.Errorf("no step in:\n%s", out)
		}
		shown, err = strconv.ParseInt(string(match[1]), 10, 64)
		return err
	})
	newest := summary(t, c, "up").LastSample.Step
	must.GreaterEq(t, k+5, shown, must.Sprint("the new generation's step"))
	must.LessEq(t, newest, shown, must.Sprint("not beyond what the trainer reported"))
	t.Logf("caravan job status shows step %d (newest sample %d)", shown, newest)
	must.SliceEmpty(t, events(t, c, "up", api.EventRescaleAborted))
}

// updateCluster is a Nomad cluster with 4 fake GPUs and one Caravan agent
// on it (drf), whose checkpoints the test reads.
type updateCluster struct {
	nc                          *agent.NomadCluster
	client                      *api.Client
	trainer, bin, leader, ckpts string
}

func startUpdateCluster(t *testing.T) *updateCluster {
	t.Helper()
	u := &updateCluster{nc: agent.StartNomadCluster(t, agent.ClusterOptions{}), ckpts: t.TempDir()}
	dumpOnFailure(t, u.nc)
	u.trainer, u.bin = buildTrainer(t), agent.BuildCaravan(t)
	cl := startCaravans(t, u.bin, 1, nomadAgentBody(u.nc, u.ckpts, "drf"))
	u.leader = cl.waitLeader(t, "")
	u.client = cl.clients[u.leader]
	waitNodes(t, u.client, 3, 4)
	return u
}

// manifest reads the checkpoint manifest of job id (namespace default).
func (u *updateCluster) manifest(t *testing.T, id string) checkpointManifest {
	t.Helper()
	return readCheckpointManifest(t, filepath.Join(u.ckpts, "default", id))
}

// resumedAtNoLoss checks that job id's generation after its checkpoint at
// step k lost no step: the sample of that checkpoint is at step k, no
// sample before the new generation's is past it, and the new generation's
// first sample is at step k, having loaded that checkpoint.
func resumedAtNoLoss(t *testing.T, c *api.Client, id string, k int64) {
	t.Helper()
	resumed, at := resumedSample(t, c, id, k)
	must.Eq(t, k, at.Step, must.Sprint("the checkpoint's sample is at its step"))
	must.Eq(t, k, resumed.Step, must.Sprint("the new generation starts at exactly that step"))
	must.Eq(t, k, resumed.CheckpointStep, must.Sprint("having loaded that checkpoint"))
	smps, _, err := c.Jobs().Samples(id, nil)
	must.NoError(t, err)
	var oldMax int64
	for _, s := range smps.Samples {
		if s.Time >= resumed.Time {
			break
		}
		oldMax = max(oldMax, s.Step)
	}
	must.Eq(t, k, oldMax, must.Sprint("no step of the earlier generation lies beyond its checkpoint"))
	t.Logf("job %s: earlier generation trained to step %d and checkpointed at step %d; next generation's first step %d, checkpoint_step %d; steps lost: %d",
		id, oldMax, k, resumed.Step, resumed.CheckpointStep, oldMax-resumed.Step)
}

// checkpointManifest is what the test reads of examples/trainer's
// ckpt/manifest.json.
type checkpointManifest struct {
	Step       int64  `json:"step"`
	Generation string `json:"generation"`
}

func readCheckpointManifest(t *testing.T, dir string) checkpointManifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "ckpt", "manifest.json"))
	must.NoError(t, err)
	var m checkpointManifest
	must.NoError(t, json.Unmarshal(data, &m))
	return m
}

// TestCaravanJobRun_UpdateLosesNoStep registers a long trainer job with
// Caravan's API (as `caravan job run` does), lets it train, and registers
// it again with a changed meta value: the new version is applied as a
// rescale is, through a checkpoint Caravan asks for and confirms; the
// chief holds at it until Nomad stops it, so the old generation trains no
// step past it, and the new generation resumes at exactly that step.
func TestCaravanJobRun_UpdateLosesNoStep(t *testing.T) {
	u := startUpdateCluster(t)
	nc, c := u.nc, u.client

	spec := trainerJobSpec{
		ID: "cr", Trainer: u.trainer, MaxWorkers: 2,
		WorkerArgs: []string{"-features", "100", "-examples", "20000", "-sample-cost", "1ms"},
		PSArgs:     []string{"-features", "100", "-examples", "20000"},
		Threshold:  0.000001, Patience: 1000, MaxEpochs: 100000,
	}
	req := spec.request()
	_, _, err := c.Jobs().Register(req, nil)
	must.NoError(t, err)
	waitEvent(t, c, "cr", api.EventTasksRunning, 1, 2*time.Minute)
	waitStep(t, c, "cr", 40)
	must.Eq(t, "1", nomadJob(t, nc, "caravan-cr").Meta["caravan_generation"])

	changed := *req
	changed.JobHCL = strings.Replace(req.JobHCL, `job "cr" {`, "job \"cr\" {\n  meta {\n    revision = \"2\"\n  }", 1)
	must.NotEq(t, req.JobHCL, changed.JobHCL)
	_, _, err = c.Jobs().Update("cr", &changed, nil) // as caravan job run of a changed file
	must.NoError(t, err)

	waitEvent(t, c, "cr", api.EventCheckpointRequested, 1, time.Minute)
	confirmed := waitEvent(t, c, "cr", api.EventCheckpointConfirmed, 1, time.Minute)
	k := confirmedStep(t, confirmed)
	resumedAtNoLoss(t, c, "cr", k)
	must.Eq(t, k, u.manifest(t, "cr").Step, must.Sprint("the stop wrote no other checkpoint"))

	agent.WaitFor(t, time.Minute, "the new version running", func() error {
		nj := nomadJob(t, nc, "caravan-cr")
		if nj.Meta["caravan_generation"] != "2" || nj.Meta["revision"] != "2" {
			return fmt.Errorf("Nomad job meta %v", nj.Meta)
		}
		return nil
	})
	must.Eq(t, uint64(1), summary(t, c, "cr").Job.Version)
	must.SliceEmpty(t, events(t, c, "cr", api.EventRescaleAborted))
}
