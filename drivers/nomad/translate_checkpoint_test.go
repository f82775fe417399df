package nomad

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestTranslate_CheckpointContract checks what a job's tasks learn of its
// checkpoints: the interval and timeout in their environment, and a
// kill_timeout as long as the checkpoint timeout, so that a stopped task
// has the time to write its checkpoint.
func TestTranslate_CheckpointContract(t *testing.T) {
	job := resnet(t)
	job.Elastic.Checkpoint.Timeout = 45 * time.Second
	job.Elastic.Checkpoint.Interval = 10 * time.Minute
	nj, err := Translate(job, placement(), Submission{CheckpointDir: "/ckpt", Generation: 2})
	must.NoError(t, err)
	for _, tg := range nj.TaskGroups {
		task := tg.Tasks[0]
		must.Eq(t, "10m0s", task.Env["CARAVAN_CHECKPOINT_INTERVAL"], must.Sprintf("group %s", *tg.Name))
		must.Eq(t, "45s", task.Env["CARAVAN_CHECKPOINT_TIMEOUT"], must.Sprintf("group %s", *tg.Name))
		must.Eq(t, 45*time.Second, *task.KillTimeout, must.Sprintf("group %s", *tg.Name))
	}

	job.Elastic.Checkpoint.Interval = 0
	nj, err = Translate(job, placement(), Submission{CheckpointDir: "/ckpt", Generation: 2})
	must.NoError(t, err)
	must.MapNotContainsKey(t, nj.TaskGroups[0].Tasks[0].Env, "CARAVAN_CHECKPOINT_INTERVAL", must.Sprint("no interval: checkpoints only when asked"))

	// A job declared in Nomad: the user's main tasks get the checkpoint
	// timeout as kill_timeout (or keep a longer one of theirs); its
	// sidecars keep theirs.
	declared := declaredResnet(t) // checkpoint { timeout = "2m", interval = "30m" }
	nj, err = Translate(declared, placement(), Submission{CheckpointDir: "/ckpt", Generation: 3, Collector: &Sidecar{Command: "/bin/caravan"}})
	must.NoError(t, err)
	mains := 0
	for _, tg := range nj.TaskGroups {
		for _, task := range tg.Tasks {
			if task.Name == collectorTask {
				must.Nil(t, task.KillTimeout, must.Sprint("Caravan's collector stops at once"))
				continue
			}
			must.Eq(t, "30m0s", task.Env["CARAVAN_CHECKPOINT_INTERVAL"])
			must.Eq(t, "2m0s", task.Env["CARAVAN_CHECKPOINT_TIMEOUT"])
			if task.Lifecycle == nil {
				mains++
				must.Eq(t, 2*time.Minute, *task.KillTimeout, must.Sprintf("group %s task %s", *tg.Name, task.Name))
			}
		}
	}
	must.Positive(t, mains)
}
