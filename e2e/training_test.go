//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/shoenig/test/must"
)

// buildTrainer builds examples/trainer into a temporary folder.
func buildTrainer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "trainer")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/caravan-sched/caravan/examples/trainer").CombinedOutput(); err != nil {
		t.Fatalf("build trainer: %v\n%s", err, out)
	}
	return bin
}

// trainerJob is a parameter-server job of examples/trainer: up to 4
// workers with a GPU each and one parameter server, converging in a few
// hundred steps.
func trainerJob(id, trainer string) *api.JobRegisterRequest {
	return elasticTrainerJob(id, trainer, 4)
}

// trainingOnNomad starts a Nomad cluster with 4 fake GPUs and a caravan
// agent on it, and returns the cluster, the trainer binary and the agent's
// client once the agent sees every node.
func trainingOnNomad(t *testing.T) (*agent.NomadCluster, string, *api.Client) {
	t.Helper()
	return trainingOnNomadWith(t, func(nc *agent.NomadCluster, checkpoints string) string {
		return nomadAgentBody(nc, checkpoints, "drf")
	})
}

// trainingOnNomadWith is trainingOnNomad with the agent configuration
// body returns for the cluster and a checkpoint directory.
func trainingOnNomadWith(t *testing.T, body func(nc *agent.NomadCluster, checkpoints string) string) (*agent.NomadCluster, string, *api.Client) {
	t.Helper()
	o := startOnNomad(t, body)
	return o.nc, o.trainer, o.c
}

// onNomad is one caravan agent on a Nomad cluster of three clients with
// 4 fake GPUs, with the trainer and caravan binaries.
type onNomad struct {
	nc                 *agent.NomadCluster
	cl                 *caravans
	c                  *api.Client
	trainer, bin, addr string
}

// startOnNomad starts the cluster and the agent, its configuration body
// returns for the cluster and a checkpoint directory, and waits until
// the agent sees every node.
func startOnNomad(t *testing.T, body func(nc *agent.NomadCluster, checkpoints string) string) *onNomad {
	t.Helper()
	o := &onNomad{nc: agent.StartNomadCluster(t, agent.ClusterOptions{})}
	dumpOnFailure(t, o.nc)
	o.trainer, o.bin = buildTrainer(t), agent.BuildCaravan(t)
	o.cl = startCaravans(t, o.bin, 1, body(o.nc, t.TempDir()))
	o.addr = o.cl.waitLeader(t, "")
	o.c = o.cl.clients[o.addr]
	waitNodes(t, o.c, 3, 4)
	return o
}

// cli runs the caravan CLI against the agent, as a user does with
// CARAVAN_ADDR, and returns its output and exit code.
func (o *onNomad) cli(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(o.bin, args...)
	cmd.Env = append(cmd.Environ(), "CARAVAN_ADDR=http://"+o.addr)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	must.NoError(t, err)
	return string(out), 0
}

// waitEvent waits for a job's n-th event of a type and returns it.
func waitEvent(t *testing.T, c *api.Client, job, typ string, n int, timeout time.Duration) *api.Event {
	t.Helper()
	var ev *api.Event
	agent.WaitFor(t, timeout, fmt.Sprintf("%s event %d of job %s", typ, n, job), func() error {
		evs := events(t, c, job, typ)
		if len(evs) < n {
			return fmt.Errorf("%d %s events so far", len(evs), typ)
		}
		ev = evs[n-1]
		return nil
	})
	return ev
}

// waitStep waits until a job reported a step of at least step.
func waitStep(t *testing.T, c *api.Client, job string, step int64) {
	t.Helper()
	waitStepIn(t, c, "", job, step)
}

// waitStepIn is waitStep of a job of namespace ns ("" for "default").
func waitStepIn(t *testing.T, c *api.Client, ns, job string, step int64) {
	t.Helper()
	agent.WaitFor(t, 2*time.Minute, fmt.Sprintf("job %s at step %d", job, step), func() error {
		sum, _, err := c.Jobs().Summary(job, &api.QueryOptions{Namespace: ns})
		if err != nil {
			return err
		}
		if sum.LastSample == nil || sum.LastSample.Step < step {
			return fmt.Errorf("job %s not at step %d yet", job, step)
		}
		return nil
	})
}

func seconds(t *testing.T, ev *api.Event) float64 {
	s, err := strconv.ParseFloat(ev.Details["Seconds"], 64)
	must.NoError(t, err)
	return s
}

// TestCaravanNomad_RescaleOnArrival runs two trainer jobs on a real Nomad
// cluster with 4 fake GPUs. The first gets all four GPUs; when the second
// arrives, Caravan checkpoints the first, confirms the checkpoint from its
// reported samples, and restarts it on two; it resumes from the
// checkpoint's step. Both converge and complete.
func TestCaravanNomad_RescaleOnArrival(t *testing.T) {
	_, trainer, c := trainingOnNomad(t)

	start := time.Now()
	_, _, err := c.Jobs().Register(trainerJob("a", trainer), nil)
	must.NoError(t, err)
	running := waitEvent(t, c, "a", api.EventTasksRunning, 1, 2*time.Minute)
	a, _, err := c.Jobs().Info("a", nil)
	must.NoError(t, err)
	t.Logf("job run → all tasks running on Nomad: %.3fs (driver: %ss from submission)",
		float64(running.Time-a.SubmitTime)/1e9, running.Details["Seconds"])
	waitWorkers(t, c, "a", 4) // alone, the first job gets every GPU
	waitStep(t, c, "a", 40)

	_, _, err = c.Jobs().Register(trainerJob("b", trainer), nil)
	must.NoError(t, err)
	confirmed := waitEvent(t, c, "a", api.EventCheckpointConfirmed, 1, time.Minute)
	k, err := strconv.ParseInt(confirmed.Details["Step"], 10, 64)
	must.NoError(t, err)
	rescaled := waitEvent(t, c, "a", api.EventTasksRunning, 2, 2*time.Minute)
	must.Eq(t, "true", rescaled.Details["Rescale"])
	waitWorkers(t, c, "a", 2) // the first job shares the GPUs with the second

	// The first sample on two workers continues from the checkpoint.
	var resumed *api.Sample
	agent.WaitFor(t, time.Minute, "a sample of job a on 2 workers", func() error {
		smps, _, err := c.Jobs().Samples("a", nil)
		if err != nil {
			return err
		}
		for i := range smps.Samples {
			if s := smps.Samples[i]; s.NumWorkers == 2 {
				resumed = &s
				return nil
			}
		}
		return fmt.Errorf("no sample on 2 workers yet")
	})
	t.Logf("checkpoint at step %d; first step after the rescale: %d (checkpoint_step %d)", k, resumed.Step, resumed.CheckpointStep)
	must.Eq(t, k, resumed.CheckpointStep, must.Sprint("the resumed tasks loaded the confirmed checkpoint"))
	must.Between(t, k, resumed.Step, k+3)

	for _, id := range []string{"a", "b"} {
		agent.WaitFor(t, 4*time.Minute, "job "+id+" complete", jobIs(c, id, api.JobStatusComplete))
	}
	makespan := time.Since(start).Seconds()
	var inRescales float64
	rescales := 0
	for _, id := range []string{"a", "b"} {
		for _, ev := range events(t, c, id, api.EventTasksRunning) {
			if ev.Details["Rescale"] == "true" {
				t.Logf("rescale of job %s: %ss", id, ev.Details["Seconds"])
				inRescales += seconds(t, ev)
				rescales++
			}
		}
		must.SliceEmpty(t, events(t, c, id, api.EventRescaleAborted))
	}
	t.Logf("makespan %.1fs, of which %.1fs in %d rescales (%.2f%%)", makespan, inRescales, rescales, 100*inRescales/makespan)
}

// TestCaravanNomad_ProfileInPlace runs a trainer job without speed priors
// under optimus on Nomad, which cannot profile out of band: Caravan runs
// the job at its three profiling configurations in turn, smallest first,
// until each has three samples, rescaling it through confirmed
// checkpoints; then optimus sizes it from the fitted speed model, and the
// job completes.
func TestCaravanNomad_ProfileInPlace(t *testing.T) {
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{})
	dumpOnFailure(t, nc)
	trainer := buildTrainer(t)
	body := nomadAgentBodyWith(nc, t.TempDir(), "optimus", "", "profile_configs = 3\n  profile_steps = 3")
	cl := startCaravans(t, agent.BuildCaravan(t), 1, body)
	c := cl.clients[cl.waitLeader(t, "")]
	waitNodes(t, c, 3, 4)

	_, _, err := c.Jobs().Register(trainerJob("p", trainer), nil)
	must.NoError(t, err)
	want := [][2]int{{1, 1}, {1, 2}, {1, 4}} // model.ProfileConfigs for 1 ps, 1..4 workers
	first := waitEvent(t, c, "p", api.EventTasksRunning, 1, 2*time.Minute)
	profiled := waitEvent(t, c, "p", api.EventTasksRunning, len(want), 2*time.Minute)
	agent.WaitFor(t, time.Minute, "job p profiled", func() error {
		sum, _, err := c.Jobs().Summary("p", nil)
		switch {
		case err != nil:
			return err
		case sum.Model == nil || len(sum.Model.Profiling) > 0 || sum.Model.SpeedConfigs < len(want):
			return fmt.Errorf("model: %+v", sum.Model)
		}
		return nil
	})
	agent.WaitFor(t, 4*time.Minute, "job p complete", jobIs(c, "p", api.JobStatusComplete))

	// The samples show the configurations in order, each measured enough
	// before the next.
	smps, _, err := c.Jobs().Samples("p", nil)
	must.NoError(t, err)
	var order [][2]int
	measured := map[[2]int]int{}
	for _, s := range smps.Samples {
		cfg := [2]int{s.NumPS, s.NumWorkers}
		if len(order) == 0 || order[len(order)-1] != cfg {
			if len(order) > 0 && len(order) <= len(want) {
				must.GreaterEq(t, 3, measured[order[len(order)-1]], must.Sprintf("samples at %v before moving on", order[len(order)-1]))
			}
			order = append(order, cfg)
		}
		if s.StepTimeS > 0 {
			measured[cfg]++
		}
	}
	must.GreaterEq(t, len(want), len(order))
	must.Eq(t, want, order[:len(want)])
	must.SliceEmpty(t, events(t, c, "p", api.EventRescaleAborted))
	var rescales float64
	for _, ev := range events(t, c, "p", api.EventTasksRunning)[1:len(want)] {
		rescales += seconds(t, ev)
	}
	t.Logf("profiling at %v: %.1fs from the first tasks running to the last configuration's, %.1fs of it in %d rescales",
		want, float64(profiled.Time-first.Time)/1e9, rescales, len(want)-1)
}

// nomadJobVersion returns the version of a Caravan job's Nomad job.
func nomadJobVersion(t *testing.T, nc *agent.NomadCluster, id string) uint64 {
	t.Helper()
	job, _, err := nc.Client.Jobs().Info("caravan-"+id, nil)
	must.NoError(t, err)
	return *job.Version
}

// TestCaravanNomad_LeaderKilled kills the Caravan leader of three while a
// trainer job runs on Nomad: the new leader adopts the running Nomad job
// without submitting it again and the job completes. Its trainers report
// to `caravan collector` sidecars registered in Consul, which whichever
// server leads scrapes.
func TestCaravanNomad_LeaderKilled(t *testing.T) {
	consul := agent.StartConsul(t)
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{})
	dumpOnFailure(t, nc)
	trainer := buildTrainer(t)
	bin := agent.BuildCaravan(t)
	cl := startCaravans(t, bin, 3, nomadAgentBodyWith(nc, t.TempDir(), "drf", fmt.Sprintf("collector_command = %q", bin), "")+
		fmt.Sprintf("consul {\n  address = %q\n}\n", consul.HTTPAddr))
	leader := cl.waitLeader(t, "")
	c := cl.clients[leader]
	waitNodes(t, c, 3, 4)

	_, _, err := c.Jobs().Register(trainerJob("a", trainer), nil)
	must.NoError(t, err)
	waitEvent(t, c, "a", api.EventTasksRunning, 1, 2*time.Minute)
	waitStep(t, c, "a", 20)
	version := nomadJobVersion(t, nc, "a")
	entries, _, err := consul.Client.Health().Service("caravan-collector", "job=a", true, nil)
	must.NoError(t, err)
	hist, _, err := c.Jobs().History("a", nil)
	must.NoError(t, err)
	must.Eq(t, hist[0].Placement.NumPS+hist[0].Placement.NumWorkers, len(entries), must.Sprint("a passing collector per task"))

	cl.procs[leader].Kill()
	next := cl.waitLeader(t, leader)
	c = cl.clients[next]
	sum, _, err := c.Jobs().Summary("a", nil)
	must.NoError(t, err)
	waitStep(t, c, "a", sum.LastSample.Step+10)
	must.Eq(t, version, nomadJobVersion(t, nc, "a"), must.Sprint("the new leader submitted the running job again"))
	jobs, _, err := nc.Client.Jobs().PrefixList("caravan-")
	must.NoError(t, err)
	must.SliceLen(t, 1, jobs, must.Sprint("one Nomad job per Caravan job"))

	agent.WaitFor(t, 4*time.Minute, "job a complete", jobIs(c, "a", api.JobStatusComplete))
	must.Eq(t, version, nomadJobVersion(t, nc, "a"))
	info, _, err := nc.Client.Jobs().Info("caravan-a", nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, info.TaskGroups[0].Tasks, must.Sprint("each group has its collector sidecar"))
}

// TestCaravanNomad_NomadUnreachable stops the Nomad server while a trainer
// job runs: Caravan keeps its state and reports the outage, a job
// registered meanwhile waits, and when Nomad returns Caravan catches up
// and both jobs complete.
func TestCaravanNomad_NomadUnreachable(t *testing.T) {
	nc, trainer, c := trainingOnNomad(t)

	_, _, err := c.Jobs().Register(trainerJob("a", trainer), nil)
	must.NoError(t, err)
	waitEvent(t, c, "a", api.EventTasksRunning, 1, 2*time.Minute)

	nc.StopServer()
	outage := waitEvent(t, c, "", api.EventDriverError, 1, time.Minute)
	t.Logf("reported: %s", outage.Message)
	_, _, err = c.Jobs().Register(trainerJob("b", trainer), nil)
	must.NoError(t, err, must.Sprint("Caravan takes jobs while Nomad is away"))
	must.NoError(t, jobIs(c, "b", api.JobStatusPending)())
	must.NoError(t, jobIs(c, "a", api.JobStatusRunning)())

	nc.StartServer()
	waitEvent(t, c, "", api.EventDriverRecovered, 1, 2*time.Minute)
	for _, id := range []string{"a", "b"} {
		agent.WaitFor(t, 4*time.Minute, "job "+id+" complete", jobIs(c, id, api.JobStatusComplete))
	}
	must.SliceLen(t, 1, events(t, c, "", api.EventDriverError), must.Sprint("one event per outage"))
}

// waitWorkers waits until the latest entry of a job's placement history,
// what ran of it as its driver reported, has the given workers.
func waitWorkers(t *testing.T, c *api.Client, id string, workers int) {
	t.Helper()
	waitWorkersIn(t, c, "", id, workers)
}

// waitWorkersIn is waitWorkers of a job of namespace ns ("" for
// "default").
func waitWorkersIn(t *testing.T, c *api.Client, ns, id string, workers int) {
	t.Helper()
	agent.WaitFor(t, time.Minute, fmt.Sprintf("job %s running %d workers", id, workers), func() error {
		hist, _, err := c.Jobs().History(id, &api.QueryOptions{Namespace: ns})
		switch {
		case err != nil:
			return err
		case len(hist) == 0:
			return fmt.Errorf("nothing ran yet")
		case hist[0].Placement.NumWorkers != workers:
			return fmt.Errorf("%d workers run", hist[0].Placement.NumWorkers)
		}
		return nil
	})
}
