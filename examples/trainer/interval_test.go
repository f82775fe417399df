package main

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestTrainerCheckpointInterval checks CARAVAN_CHECKPOINT_INTERVAL: with
// no checkpoint signal, the chief checkpoints on its own, again and again,
// each at a step boundary it reports with that step as checkpoint_step,
// and the manifest holds the latest.
func TestTrainerCheckpointInterval(t *testing.T) {
	dir := t.TempDir()
	env := trainingEnv(structs.ModeSync, 64, 2, 50, 1e-9, 1000, 0)
	env[envCheckpointInterval] = "300ms"
	coll := newCollector(t)
	j := startJob(t, jobSpec{ps: 1, workers: 2, generation: "1", dir: dir, collector: coll, env: env, flags: []string{"-sample-cost", "100us"}})

	var steps []int64
	agent.WaitFor(t, 60*time.Second, "three periodic checkpoints", func() error {
		steps = steps[:0]
		for _, s := range coll.all() {
			if s.CheckpointStep > 0 && !slices.Contains(steps, s.CheckpointStep) {
				steps = append(steps, s.CheckpointStep)
			}
		}
		if len(steps) < 3 {
			return fmt.Errorf("checkpoint steps reported: %v", steps)
		}
		return nil
	})
	must.True(t, slices.IsSorted(steps), must.Sprintf("checkpoint steps %v", steps))
	for _, s := range coll.all() {
		must.GreaterEq(t, s.CheckpointStep, s.Step, must.Sprint("a sample names its step's checkpoint or an earlier one"))
	}
	for name, code := range j.stop(time.Minute) {
		must.Eq(t, 128+int(syscall.SIGINT), code, must.Sprintf("exit status of %s", name))
	}
	m, err := readManifest(ckptRoot(dir))
	must.NoError(t, err)
	all := coll.all()
	must.Eq(t, all[len(all)-1].CheckpointStep, m.Step, must.Sprint("the manifest holds the last checkpoint reported"))
	t.Logf("checkpoints every 300ms at steps %v, the last (on stop) at %d", steps, m.Step)
}
