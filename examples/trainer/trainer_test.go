package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// initialLoss is the loss of the zero parameters: ln 2.
var initialLoss = math.Log(2)

// TestTrainerConverges trains with 2 parameter servers and 2 workers until
// the convergence rule stops it, and checks what the chief reported.
func TestTrainerConverges(t *testing.T) {
	dir, coll := t.TempDir(), newCollector(t)
	j := startJob(t, jobSpec{
		ps: 2, workers: 2, generation: "1", dir: dir, collector: coll,
		env:   trainingEnv(structs.ModeSync, 64, 2, 50, 0.01, 2, 60),
		flags: []string{"-sample-cost", "100us", "-lr", "0.05"},
	})
	for name, code := range j.waitExit(60 * time.Second) {
		must.Eq(t, 0, code, must.Sprintf("exit status of %s", name))
	}

	samples := coll.all()
	must.SliceNotEmpty(t, samples)
	first, last := samples[0], samples[len(samples)-1]
	must.Eq(t, 0, first.Step)
	must.Less(t, 1e-9, math.Abs(first.Loss-initialLoss), must.Sprint("the zero model's loss is ln 2"))
	must.Less(t, 0.6*initialLoss, last.Loss, must.Sprintf("loss fell from %.3f to %.3f", first.Loss, last.Loss))
	must.Greater(t, 10*50, last.Step, must.Sprint("converging takes more than 10 epochs"))
	must.Less(t, 60*50, last.Step, must.Sprint("convergence stopped training before max_epochs"))
	must.Eq(t, last.Step, last.CheckpointStep, must.Sprint("the last sample announces the final checkpoint"))

	m, err := readManifest(ckptRoot(dir))
	must.NoError(t, err)
	must.Eq(t, last.Step, m.Step)
	must.Eq(t, 2, m.EpochsBelow)
	must.SliceLen(t, 2, m.Shards)
	must.Eq(t, last.Loss, m.Loss)

	for i, s := range samples {
		must.Eq(t, "logreg", s.JobID)
		must.Eq(t, "default", s.Namespace)
		must.Eq(t, structs.RoleWorker, s.Role)
		must.Eq(t, 0, s.Rank)
		must.Eq(t, 2, s.NumPS)
		must.Eq(t, 2, s.NumWorkers)
		must.Eq(t, float64(s.Step)/50, s.Epoch)
		must.Positive(t, s.Time)
		if i == 0 {
			continue
		}
		must.Eq(t, samples[i-1].Step+1, s.Step, must.Sprint("one sample per step, in order"))
		must.Eq(t, 64, s.Samples)
		must.Positive(t, s.StepTimeS)
		must.GreaterEq(t, (32 * 100 * time.Microsecond).Seconds(), s.CPUS, must.Sprint("cpu_s includes the sample cost"))
		must.Positive(t, s.NetS)
		must.LessEq(t, s.StepTimeS*1.05+0.002, s.CPUS+s.NetS, must.Sprint("computation and communication fit in the step"))
	}
}

// TestTrainerCheckpointAndResume checkpoints a 2 PS + 2 worker run on the
// checkpoint signal, stops it as Nomad does, and resumes it as 1 PS + 3
// workers: training continues from the checkpoint.
func TestTrainerCheckpointAndResume(t *testing.T) {
	dir := t.TempDir()
	// Convergence never stops these runs.
	training := func(workers int) map[string]string {
		env := trainingEnv(structs.ModeSync, 64, workers, 50, 1e-9, 1000, 0)
		// The chief holds at a checkpoint asked for at most this long
		// when no stop follows.
		env[envCheckpointTimeout] = "1s"
		return env
	}
	flags := []string{"-sample-cost", "100us"}

	coll1 := newCollector(t)
	j1 := startJob(t, jobSpec{ps: 2, workers: 2, generation: "1", dir: dir, collector: coll1, env: training(2), flags: flags})
	coll1.waitSample(t, 30*time.Second, "step 150", func(s structs.Sample) bool { return s.Step >= 150 })
	j1.chief.signal(t, syscall.SIGUSR1)
	ckpt := coll1.waitSample(t, 20*time.Second, "a checkpoint", func(s structs.Sample) bool { return s.CheckpointStep > 0 })
	must.Eq(t, ckpt.Step, ckpt.CheckpointStep, must.Sprint("the checkpoint is taken at the step boundary the sample names"))
	must.GreaterEq(t, 150, ckpt.CheckpointStep)

	m, err := readManifest(ckptRoot(dir))
	must.NoError(t, err)
	must.Eq(t, ckpt.CheckpointStep, m.Step)
	must.Eq(t, ckpt.Loss, m.Loss)
	must.Less(t, 0.85*initialLoss, m.Loss)
	// The shard files of the checkpoint exist; the signal only asked for
	// one checkpoint, so there is one directory.
	dirs, err := filepath.Glob(filepath.Join(ckptRoot(dir), checkpointPrefix+"*"))
	must.NoError(t, err)
	must.SliceLen(t, 1, dirs)

	// No stop follows the checkpoint, so the chief trains on after
	// holding at it. SIGINT then stops the trainers: the chief
	// checkpoints at the next step boundary and reports it, and each
	// process exits with the signal's status.
	coll1.waitSample(t, 30*time.Second, "training to go on after the checkpoint", func(s structs.Sample) bool { return s.Step >= m.Step+20 })
	for name, code := range j1.stop(time.Minute) {
		must.Eq(t, 128+int(syscall.SIGINT), code, must.Sprintf("exit status of %s", name))
	}
	signalled := m
	m, err = readManifest(ckptRoot(dir))
	must.NoError(t, err)
	last := coll1.all()[len(coll1.all())-1]
	must.Greater(t, signalled.Step+20-1, m.Step, must.Sprint("the stop wrote a newer checkpoint than the signal's"))
	must.Eq(t, m.Step, last.CheckpointStep, must.Sprint("the chief reported the stop's checkpoint"))
	must.Eq(t, m.Step, last.Step, must.Sprint("at the last step it trained: nothing trained after it is lost"))
	t.Logf("checkpoint on SIGUSR1 at step %d, on SIGINT at step %d", signalled.Step, m.Step)

	coll2 := newCollector(t)
	j2 := startJob(t, jobSpec{ps: 1, workers: 3, generation: "2", resume: true, dir: dir, collector: coll2, env: training(3), flags: flags})
	resumed := coll2.waitSample(t, 30*time.Second, "the first sample after resuming", func(structs.Sample) bool { return true })
	must.Eq(t, m.Step, resumed.Step, must.Sprint("resumed at the stop's checkpoint: no progress lost"))
	must.Eq(t, m.Step, resumed.CheckpointStep)
	must.Less(t, 0.01, math.Abs(resumed.Loss-m.Loss)/m.Loss, must.Sprintf("loss after resuming %.4f, at the checkpoint %.4f", resumed.Loss, m.Loss))
	must.Eq(t, 1, resumed.NumPS)
	must.Eq(t, 3, resumed.NumWorkers)

	later := coll2.waitSample(t, 30*time.Second, "training to go on", func(s structs.Sample) bool { return s.Step >= m.Step+50 })
	must.Eq(t, 63, later.Samples, must.Sprint("3 workers of 21 examples"))
	must.Less(t, m.Loss, later.Loss, must.Sprint("the loss goes on falling"))
	j2.stop(10 * time.Second)
}

// TestTrainerMoreWorkersStepFaster checks the sample-cost model: with the
// global batch split over 3 workers a sync step takes far less time than
// with 1.
//
// The times are wall-clock, so the test asserts what load cannot undo: a
// sleep never ends early, so a step's computation takes at least its
// simulated accelerator time (96 or 32 examples at -sample-cost), and load,
// which delays both runs alike, cannot close the gap of 64 examples'
// simulated time between them (the test asks for half of it). No ratio of
// measured times is asserted.
func TestTrainerMoreWorkersStepFaster(t *testing.T) {
	const (
		global     = 96
		sampleCost = 500 * time.Microsecond
	)
	simulated := func(workers int) float64 { return (time.Duration(global/workers) * sampleCost).Seconds() }
	stepTime := func(workers int) float64 {
		dir, coll := t.TempDir(), newCollector(t)
		j := startJob(t, jobSpec{
			ps: 1, workers: workers, generation: "1", dir: dir, collector: coll,
			env:   trainingEnv(structs.ModeSync, global, workers, 1000, 0.01, 3, 0),
			flags: []string{"-sample-cost", sampleCost.String(), "-max-steps", "60"},
		})
		for name, code := range j.waitExit(30 * time.Second) {
			must.Eq(t, 0, code, must.Sprintf("exit status of %s", name))
		}
		var times []float64
		for _, s := range coll.all() {
			if s.Step > 5 && s.StepTimeS > 0 {
				times = append(times, s.StepTimeS)
				must.GreaterEq(t, simulated(workers), s.CPUS, must.Sprintf("%d workers: a step computes for its simulated time", workers))
			}
		}
		must.Greater(t, 40, len(times))
		slices.Sort(times)
		return times[len(times)/2]
	}
	one, three := stepTime(1), stepTime(3)
	gap := simulated(1) - simulated(3)
	t.Logf("median step time: %.2fms with 1 worker, %.2fms with 3; simulated gap %.2fms", one*1000, three*1000, gap*1000)
	must.Less(t, one-gap/2, three, must.Sprintf("1 worker: %.4fs per step, 3 workers: %.4fs", one, three))
}

// TestTrainerAsync trains in async mode, where every push is a step.
func TestTrainerAsync(t *testing.T) {
	dir, coll := t.TempDir(), newCollector(t)
	j := startJob(t, jobSpec{
		ps: 1, workers: 2, generation: "1", dir: dir, collector: coll,
		env:   trainingEnv(structs.ModeAsync, 32, 2, 50, 0.01, 3, 0),
		flags: []string{"-sample-cost", "100us", "-max-steps", "400"},
	})
	for name, code := range j.waitExit(30 * time.Second) {
		must.Eq(t, 0, code, must.Sprintf("exit status of %s", name))
	}
	samples := coll.all()
	last := samples[len(samples)-1]
	must.GreaterEq(t, 400, last.Step)
	must.Eq(t, last.Step, last.CheckpointStep)
	must.Less(t, 0.8*initialLoss, last.Loss)
	for i, s := range samples[1:] {
		must.Greater(t, samples[i].Step, s.Step, must.Sprint("steps advance"))
		must.Eq(t, 32, s.Samples, must.Sprint("an async step is one worker's batch"))
	}
}

// TestTrainerExitsWhenPSGone kills the parameter server: the worker gives
// up after -rpc-timeout with a nonzero status.
func TestTrainerExitsWhenPSGone(t *testing.T) {
	dir, coll := t.TempDir(), newCollector(t)
	j := startJob(t, jobSpec{
		ps: 1, workers: 1, generation: "1", dir: dir, collector: coll,
		env:   trainingEnv(structs.ModeSync, 32, 1, 50, 1e-9, 1000, 0),
		flags: []string{"-rpc-timeout", "1s"},
	})
	coll.waitSample(t, 30*time.Second, "step 5", func(s structs.Sample) bool { return s.Step >= 5 })
	j.procs[0].kill()
	must.Eq(t, 1, j.chief.exitCode(t, 20*time.Second))
	must.StrContains(t, agent.Tail(j.chief.logPath, 5), "unreachable")
}

// TestTrainerRejectsBadEnvironment checks that a misconfigured task exits
// with status 2 and names every problem.
func TestTrainerRejectsBadEnvironment(t *testing.T) {
	j := startJob(t, jobSpec{ps: 1, workers: 1, generation: "../x", dir: t.TempDir(),
		env: map[string]string{envCheckpointSignal: "SIGTERM", envMode: "eager"}})
	for _, p := range j.procs {
		must.Eq(t, 2, p.exitCode(t, 10*time.Second))
		log := agent.Tail(p.logPath, 20)
		for _, want := range []string{envGeneration + `="../x"`, envCheckpointSignal, envMode + `="eager"`} {
			must.StrContains(t, log, want)
		}
	}
}

// TestTrainerSlowNode: every worker reports its own time per step, named
// by its allocation; a worker on a node listed in -slow-nodes computes 4
// times as long, and its own time shows it while its peers' do not.
//
// The times are wall-clock, so the test asserts what load cannot undo: a
// sleep never ends early, so a worker's own step takes at least its
// simulated accelerator time (-sample-cost per example), and the slow
// worker's at least 4 times that; and load, which delays every worker
// alike, cannot close the gap of 3 simulated steps that the slow worker
// sleeps on top of its peers (the test asks for half of it). No ratio of
// measured times is asserted.
func TestTrainerSlowNode(t *testing.T) {
	const (
		sampleCost = 500 * time.Microsecond
		local      = 32 // examples per worker and step: 96 over 3
		slowFactor = 4  // -slow-factor's default
	)
	simulated := (local * sampleCost).Seconds()
	dir, coll := t.TempDir(), newCollector(t)
	slow := filepath.Join(t.TempDir(), "slow-nodes")
	must.NoError(t, os.WriteFile(slow, []byte("node-1\n"), 0o644))
	j := startJob(t, jobSpec{
		ps: 1, workers: 3, generation: "1", dir: dir, collector: coll,
		env:   trainingEnv(structs.ModeSync, 3*local, 3, 20, 0.0001, 100, 3),
		flags: []string{"-sample-cost", sampleCost.String(), "-report-every", "5", "-slow-nodes", slow},
		rankFlags: func(role string, rank int) []string {
			return []string{"-node", fmt.Sprintf("node-%d", rank)}
		},
	})
	for name, code := range j.waitExit(60 * time.Second) {
		must.Eq(t, 0, code, must.Sprintf("exit status of %s", name))
	}
	own := map[int][]float64{}
	for _, s := range coll.others() {
		must.Eq(t, structs.RoleWorker, s.Role)
		must.Eq(t, fmt.Sprintf("gen1-worker-%d", s.Rank), s.AllocID)
		must.Eq(t, 3, s.NumWorkers)
		own[s.Rank] = append(own[s.Rank], s.TaskStepTimeS)
	}
	for _, s := range coll.all()[1:] {
		must.Eq(t, "gen1-worker-0", s.AllocID)
		own[0] = append(own[0], s.TaskStepTimeS)
	}
	must.MapLen(t, 3, own)
	med := map[int]float64{}
	for r, v := range own {
		must.Greater(t, 2, len(v))
		slices.Sort(v)
		med[r] = v[len(v)/2]
		must.GreaterEq(t, simulated, v[0], must.Sprintf("rank %d's own step takes its simulated time", r))
	}
	t.Logf("median own step times by rank: %v; simulated %.4fs", med, simulated)
	must.GreaterEq(t, slowFactor*simulated, own[1][0], must.Sprint("the slow node's worker takes 4 simulated steps a step"))
	for _, peer := range []int{0, 2} {
		must.Less(t, med[1]-(slowFactor-1)*simulated/2, med[peer],
			must.Sprintf("rank %d does not wait for the slow node's worker in its own time", peer))
	}
}
