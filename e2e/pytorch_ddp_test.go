//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// minTorchAccuracy is the test accuracy examples/pytorch-ddp must reach
// on the digits after its rescales (0.96 measured without one).
const minTorchAccuracy = 0.90

// torchEpochs and torchStepDelay are how long the example trains on the
// e2e cluster (23 steps an epoch, each made at least 10 ms longer, as by
// a bigger model): a minute or more, so that it is still training when
// the second job has come and gone, and not bound to the machine's speed
// alone (unloaded, a step takes about 3 ms).
const (
	torchEpochs    = 200
	torchStepDelay = "0.01"
)

// needTorch skips the test unless Debian's Python can import torch and
// scikit-learn, as examples/pytorch-ddp's own tests do.
func needTorch(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("/usr/bin/python3", "-c", "import torch.distributed, sklearn").CombinedOutput(); err != nil {
		t.Skipf("/usr/bin/python3 cannot import torch and sklearn (make tools, or tools/build.sh torch, installs python3-torch and python3-sklearn): %v\n%s", err, out)
	}
}

// torchJob is examples/pytorch-ddp/pytorch-ddp.hcl with this repository
// as its caravan_dir, and each worker taking one of the cluster's fake
// GPUs, so that it competes with the trainer jobs for them.
func torchJob(t *testing.T, id string) *api.JobRegisterRequest {
	t.Helper()
	src, err := os.ReadFile("../examples/pytorch-ddp/pytorch-ddp.hcl")
	must.NoError(t, err)
	repo, err := filepath.Abs("..")
	must.NoError(t, err)
	hcl := strings.Replace(string(src), `job "pytorch-ddp" {`, fmt.Sprintf("job %q {", id), 1)
	withGPU := strings.Replace(hcl, "      memory = 512\n", "      memory = 512\n      device \"nvidia/gpu\" {\n        count = 1\n      }\n", 1)
	must.NotEq(t, hcl, withGPU, must.Sprint("the example's worker resources changed: update torchJob"))
	slower := strings.Replace(withGPU, `"--epochs", "${var.epochs}"`, `"--epochs", "${var.epochs}", "--step-delay", "`+torchStepDelay+`"`, 1)
	must.NotEq(t, withGPU, slower, must.Sprint("the example's arguments changed: update torchJob"))
	return &api.JobRegisterRequest{JobHCL: slower, Filename: "pytorch-ddp.hcl", Variables: map[string]string{
		"caravan_dir": repo, "epochs": strconv.Itoa(torchEpochs),
	}}
}

// torchAccuracy reads the final test accuracy examples/pytorch-ddp's
// rank 0 prints ("final step=<s> test_accuracy=<a>") from the stdout of
// the completed allocations of the Nomad job that ran it, whose task is
// named task.
func torchAccuracy(t *testing.T, c *nomadapi.Client, nomadJob, task string) (step int64, acc float64) {
	t.Helper()
	final := regexp.MustCompile(`final step=(\d+) test_accuracy=([0-9.]+)`)
	allocs, _, err := c.Jobs().Allocations(nomadJob, true, nil)
	must.NoError(t, err)
	for _, stub := range allocs {
		if stub.ClientStatus != nomadapi.AllocClientStatusComplete {
			continue
		}
		alloc, _, err := c.Allocations().Info(stub.ID, nil)
		must.NoError(t, err)
		out, err := catFile(c, alloc, "alloc/logs/"+task+".stdout.0")
		if err != nil {
			continue
		}
		if m := final.FindStringSubmatch(out); m != nil {
			step, _ = strconv.ParseInt(m[1], 10, 64)
			acc, _ = strconv.ParseFloat(m[2], 64)
			return step, acc
		}
	}
	t.Fatalf("no completed allocation of %s printed its final accuracy", nomadJob)
	return 0, 0
}

// torchSamples returns a job's samples in step-time order.
func torchSamples(t *testing.T, c *api.Client, id string) []api.Sample {
	t.Helper()
	smps, _, err := c.Jobs().Samples(id, nil)
	must.NoError(t, err)
	out := smps.Samples
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time < out[j].Time })
	return out
}

// torchRescale checks a rescale of a torch job to workers, confirmed at
// step k at time confirmed: the first sample of the new count after it
// has checkpoint_step k, or that of a later snapshot (the old generation
// trains on until it is stopped, and under load it may save its periodic
// snapshot first), and is the step after it (no step lost beyond the
// snapshot loaded); no later sample goes back to k or before. It returns
// the time from the checkpoint request to that first step.
func torchRescale(t *testing.T, c *api.Client, id string, requested, confirmed *api.Event, workers int) float64 {
	t.Helper()
	k := confirmedStep(t, confirmed)
	var first *api.Sample
	agent.WaitFor(t, 2*time.Minute, fmt.Sprintf("a sample of job %s on %d workers after step %d", id, workers, k), func() error {
		for _, s := range torchSamples(t, c, id) {
			if s.Time > confirmed.Time && s.NumWorkers == workers {
				first = &s
				return nil
			}
		}
		return fmt.Errorf("none yet")
	})
	lost := first.Step - (first.CheckpointStep + 1)
	took := float64(first.Time-requested.Time) / 1e9
	t.Logf("rescale of %s to %d workers: checkpoint confirmed at step %d, first step on %d workers %d (checkpoint_step %d): %d steps lost; checkpoint request to that step %.1fs",
		id, workers, k, workers, first.Step, first.CheckpointStep, lost, took)
	must.GreaterEq(t, k, first.CheckpointStep, must.Sprint("the new generation loaded the confirmed snapshot, or a later one"))
	must.Eq(t, int64(0), lost, must.Sprint("progress lost beyond the snapshot loaded"))
	for _, s := range torchSamples(t, c, id) {
		if s.Time > first.Time {
			must.Greater(t, k, s.Step, must.Sprintf("a sample after the rescale went back to step %d", s.Step))
		}
	}
	return took
}

// longTrainer is a trainer job of one worker (one of the cluster's
// GPUs) that runs until it is stopped.
func longTrainer(id, trainer string) *api.JobRegisterRequest {
	return trainerJobSpec{
		ID: id, Trainer: trainer, MaxWorkers: 1,
		WorkerArgs: []string{"-features", "100", "-examples", "20000", "-sample-cost", "1ms"},
		PSArgs:     []string{"-features", "100", "-examples", "20000"},
		Threshold:  0.0001, Patience: 1000, MaxEpochs: 1000,
	}.request()
}

// killTorchWorker sends signal 9, as the kernel's OOM killer does, to
// the train.py process that the given task group of a Nomad job runs
// under torchrun, found by the Nomad environment it inherits. It
// returns the killed process's id.
func killTorchWorker(t *testing.T, nomadJob, group string) int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	must.NoError(t, err)
	want := []string{"NOMAD_JOB_ID=" + nomadJob, "NOMAD_GROUP_NAME=" + group}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(string(cmd), "train.py") || strings.Contains(string(cmd), "torchrun") {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		vars := strings.Split(string(env), "\x00")
		if slices.Contains(vars, want[0]) && slices.Contains(vars, want[1]) {
			must.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
			return pid
		}
	}
	t.Fatalf("no train.py process of group %s of Nomad job %s", group, nomadJob)
	return 0
}

// TestCaravanNomad_PyTorchDDP runs examples/pytorch-ddp (real torchrun,
// real gloo, PyTorch DDP on the digits) under drf on the e2e Nomad
// cluster with two fake GPUs, one per worker, the scenario of issue 31:
//   - A trainer job holds one GPU, so the torch job starts on 1 worker.
//   - That job is stopped: the torch job grows to 2 (2 torchrun agents on
//     two nodes, meeting at rank 0's reserved port) through a confirmed
//     checkpoint.
//   - Signal 9, as from the kernel's OOM killer, kills the train.py of
//     the worker without the rendezvous: both torchrun agents fail, Nomad
//     restarts both tasks in place (the groups' restart policy), and they
//     meet again and resume from the last snapshot.
//   - A second trainer job arrives: the torch job shrinks to 1, again
//     through a confirmed checkpoint.
//
// Each time it resumes at the snapshot's step with no step lost beyond
// it, and it finishes above minTorchAccuracy.
func TestCaravanNomad_PyTorchDDP(t *testing.T) {
	needTorch(t)
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{Clients: 3, GPUClients: []int{1, 1}})
	dumpOnFailure(t, nc)
	trainer, bin := buildTrainer(t), agent.BuildCaravan(t)
	body := nomadAgentBodyEvery(nc, t.TempDir(), "drf", 5*time.Second, "", "")
	cl := startCaravans(t, bin, 1, body)
	c := cl.clients[cl.waitLeader(t, "")]
	waitNodes(t, c, 3, 2)

	_, _, err := c.Jobs().Register(longTrainer("a", trainer), nil)
	must.NoError(t, err)
	waitEvent(t, c, "a", api.EventTasksRunning, 1, 2*time.Minute)

	// One GPU is free: the torch job starts on 1 worker.
	start := time.Now()
	_, _, err = c.Jobs().Register(torchJob(t, "ddp"), nil)
	must.NoError(t, err)
	info, _, err := c.Jobs().Info("ddp", nil)
	must.NoError(t, err)
	waitEvent(t, c, "ddp", api.EventTasksRunning, 1, 2*time.Minute)
	waitWorkers(t, c, "ddp", 1)
	waitStep(t, c, "ddp", 1)
	smps := torchSamples(t, c, "ddp")
	must.Eq(t, 1, smps[0].NumWorkers)
	t.Logf("job run → first step: %.1fs (step %d on %d worker)", float64(smps[0].Time-info.SubmitTime)/1e9, smps[0].Step, smps[0].NumWorkers)
	waitStep(t, c, "ddp", 30)

	// The trainer job is stopped: the torch job grows to 2.
	_, err = c.Jobs().Stop("a", false, nil)
	must.NoError(t, err)
	requested := waitEvent(t, c, "ddp", api.EventCheckpointRequested, 1, time.Minute)
	confirmed := waitEvent(t, c, "ddp", api.EventCheckpointConfirmed, 1, time.Minute)
	grown := waitEvent(t, c, "ddp", api.EventTasksRunning, 2, 2*time.Minute)
	must.Eq(t, "true", grown.Details["Rescale"])
	grow := torchRescale(t, c, "ddp", requested, confirmed, 2)

	// A worker is killed: Nomad restarts both failed tasks in place
	// (the group's restart policy) and they resume from the last snapshot.
	waitStep(t, c, "ddp", confirmedStep(t, confirmed)+60)
	var before, newest int64
	for _, s := range torchSamples(t, c, "ddp") {
		before, newest = max(before, s.CheckpointStep), max(newest, s.Step)
	}
	job := nomadJob(t, nc, "caravan-ddp")
	var rank1 string
	for _, tg := range job.TaskGroups {
		if strings.HasPrefix(*tg.Name, "worker-") && !strings.HasSuffix(*tg.Name, "-rdzv") && *tg.Count > 0 {
			rank1 = *tg.Name
		}
	}
	must.NotEq(t, "", rank1, must.Sprint("a worker group without the rendezvous"))
	killed := time.Now()
	pid := killTorchWorker(t, "caravan-ddp", rank1)
	var resumed *api.Sample
	agent.WaitFor(t, 2*time.Minute, "a sample of ddp back at its snapshot after the kill", func() error {
		for _, s := range torchSamples(t, c, "ddp") {
			if s.Time > killed.UnixNano() && s.Step <= newest+1 && s.Step < s.CheckpointStep+5 {
				resumed = &s
				return nil
			}
		}
		return fmt.Errorf("none yet")
	})
	t.Logf("kill of train.py (pid %d, group %s) at step %d or later: last checkpoint named before it step %d; first step after %d (checkpoint_step %d), %.1fs after the kill, on %d workers",
		pid, rank1, newest, before, resumed.Step, resumed.CheckpointStep, float64(resumed.Time-killed.UnixNano())/1e9, resumed.NumWorkers)
	must.GreaterEq(t, before, resumed.CheckpointStep)
	must.Eq(t, resumed.CheckpointStep+1, resumed.Step, must.Sprint("the job resumed from its snapshot"))
	must.Eq(t, 2, resumed.NumWorkers)
	restarts := 0
	allocs, _, err := nc.Client.Jobs().Allocations("caravan-ddp", false, nil)
	must.NoError(t, err)
	for _, a := range allocs {
		if a.TaskGroup == rank1 && a.ClientStatus == nomadapi.AllocClientStatusRunning {
			restarts += int(a.TaskStates["worker"].Restarts)
		}
	}
	must.Eq(t, 1, restarts, must.Sprint("Nomad restarted the killed worker's task in place"))
	must.SliceEmpty(t, events(t, c, "ddp", api.EventJobRestarted))

	// A second trainer job arrives: the torch job shrinks to 1.
	waitStep(t, c, "ddp", resumed.Step+30)
	_, _, err = c.Jobs().Register(longTrainer("b", trainer), nil)
	must.NoError(t, err)
	requested = waitEvent(t, c, "ddp", api.EventCheckpointRequested, 2, time.Minute)
	confirmed = waitEvent(t, c, "ddp", api.EventCheckpointConfirmed, 2, time.Minute)
	shrunk := waitEvent(t, c, "ddp", api.EventTasksRunning, 3, 2*time.Minute)
	must.Eq(t, "true", shrunk.Details["Rescale"])
	shrink := torchRescale(t, c, "ddp", requested, confirmed, 1)

	agent.WaitFor(t, 6*time.Minute, "job ddp complete", jobIs(c, "ddp", api.JobStatusComplete))
	makespan := time.Since(start).Seconds()
	must.SliceEmpty(t, events(t, c, "ddp", api.EventRescaleAborted))
	step, acc := torchAccuracy(t, nc.Client, "caravan-ddp", "worker")
	t.Logf("final step %d, test accuracy %.4f (threshold %.2f)", step, acc, minTorchAccuracy)
	must.Eq(t, int64(torchEpochs*23), step)
	must.Greater(t, minTorchAccuracy, acc)
	t.Logf("rescales: driver %ss and %ss (checkpoint request to all tasks running); to the first step %.1fs and %.1fs; run %.1fs, of which %.1f%% in rescales",
		grown.Details["Seconds"], shrunk.Details["Seconds"], grow, shrink, makespan, 100*(shrink+grow)/makespan)
}

// TestNomadJobRun_PyTorchDDP submits examples/pytorch-ddp/pytorch-ddp.nomad.hcl,
// unchanged but for its variables, with `nomad job run` on a cluster
// without GPUs: Caravan takes it over, runs its 2 workers as torchrun
// agents in the user's Nomad job (rank 0's group reserving the
// rendezvous port), and it trains to above minTorchAccuracy.
func TestNomadJobRun_PyTorchDDP(t *testing.T) {
	needTorch(t)
	nc := agent.StartNomadCluster(t, agent.ClusterOptions{GPUClients: []int{}})
	dumpOnFailure(t, nc)
	cl := startCaravans(t, agent.BuildCaravan(t), 1, nomadAgentBody(nc, t.TempDir(), "drf"))
	c := cl.clients[cl.waitLeader(t, "")]
	waitNodes(t, c, 3, 0)
	repo, err := filepath.Abs("..")
	must.NoError(t, err)

	ran := time.Now()
	nomadCLI{addr: nc.Address}.run(t, "job", "run", "-detach", "-var", "caravan_dir="+repo, "-var", "epochs=10",
		"../examples/pytorch-ddp/pytorch-ddp.nomad.hcl")
	first := waitEvent(t, c, "pytorch-ddp", api.EventTasksRunning, 1, 2*time.Minute)
	waitWorkers(t, c, "pytorch-ddp", 2)
	job := nomadJob(t, nc, "pytorch-ddp")
	var rdzv *nomadapi.TaskGroup
	for _, tg := range job.TaskGroups {
		if strings.HasSuffix(*tg.Name, "-rdzv") {
			rdzv = tg
		}
	}
	must.NotNil(t, rdzv, must.Sprint("rank 0's group of its own"))
	must.Eq(t, 1, *rdzv.Count)
	must.Eq(t, "rdzv", rdzv.Networks[0].ReservedPorts[0].Label)
	must.StrContains(t, rdzv.Tasks[0].Env["CARAVAN_RDZV_ENDPOINT"], fmt.Sprintf(":%d", rdzv.Networks[0].ReservedPorts[0].Value))
	waitStep(t, c, "pytorch-ddp", 1)
	smps := torchSamples(t, c, "pytorch-ddp")
	t.Logf("nomad job run → Caravan's placement running: %.1fs; → first step: %.1fs", float64(first.Time-ran.UnixNano())/1e9,
		float64(smps[0].Time-ran.UnixNano())/1e9)

	agent.WaitFor(t, 4*time.Minute, "job pytorch-ddp complete", jobIs(c, "pytorch-ddp", api.JobStatusComplete))
	step, acc := torchAccuracy(t, nc.Client, "pytorch-ddp", "train")
	t.Logf("final step %d, test accuracy %.4f (threshold %.2f)", step, acc, minTorchAccuracy)
	must.Eq(t, int64(10*23), step)
	must.Greater(t, minTorchAccuracy, acc)
}
