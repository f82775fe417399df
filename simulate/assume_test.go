package simulate

import (
	"testing"
	"testing/fstest"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/shoenig/test/must"
)

// TestPolluxArtifact_Model checks the pieces of the Pollux artifact's job
// model on worked values, each computed by the artifact's own code
// (applications.py and simulator.py, with its traces), and that a run with
// AssumePollux charges its delays: a job alone waits for the next 60 s
// round, then 30 s for its allocation, then trains its steps.
func TestPolluxArtifact_Model(t *testing.T) {
	profiles, err := sim.PolluxProfiles()
	must.NoError(t, err)
	cifar := profiles["cifar10"]
	must.Eq(t, 128, cifar.InitBatch)
	must.Eq(t, 1024, cifar.MaxLocalBatch)

	// Throughput: a measured placement is interpolated over the per-GPU
	// batch (placement 1 between local batches 32 and 45: the artifact's
	// get_throughput((1,), 38.5) = 0.04663697, 0.00050178).
	step, sync := cifar.StepSync([]int{1}, 38.5)
	must.Between(t, 0.0466369, step, 0.0466370)
	must.Between(t, 0.00050177, sync, 0.00050179)

	// A step of 2048 samples on 3+3 GPUs: 342 per GPU, no accumulation
	// (the artifact's 0.30395481 s); on 4+2, 0.26877741 s; on one GPU,
	// 2 passes of 1024 (gradient accumulation), 1.40363817 s.
	for _, tc := range []struct {
		gpus    []int
		atomic  float64
		accum   int
		seconds float64
	}{
		{[]int{3, 3}, 342, 0, 0.30395481},
		{[]int{4, 2}, 342, 0, 0.26877741},
		{[]int{1}, 1024, 1, 1.40363817},
	} {
		it := cifar.Iteration(tc.gpus, 2048)
		must.Eq(t, tc.atomic, it.Atomic, must.Sprint(tc.gpus))
		must.Eq(t, tc.accum, it.Accum, must.Sprint(tc.gpus))
		must.Between(t, tc.seconds-1e-7, it.Seconds, tc.seconds+1e-7, must.Sprint(tc.gpus))
	}

	// Efficiency from the gradient noise scale: during epoch 10 at batch
	// 2048 (validation-2048.csv, row 10) |g|² = 0.14603737 and σ² =
	// 3.26298805, so a step gains (σ² + |g|²)/(σ²/16 + |g|²) = 9.74079288
	// units of progress (s = 2048/128 = 16); between measured batches the
	// statistics are interpolated linearly (1536: 0.14782494, 3.04843598).
	sqr, variance := cifar.GradStats(2048, 10)
	must.Between(t, 0.1460373, sqr, 0.1460374)
	must.Between(t, 3.2629880, variance, 3.2629881)
	must.Between(t, 9.7407928, cifar.Gain(2048, 10), 9.7407929)
	must.Between(t, 9.7407928/16, cifar.Efficiency(2048, 10), 9.7407929/16)
	sqr, variance = cifar.GradStats(1536, 10)
	must.Between(t, 0.1478249, sqr, 0.1478250)
	must.Between(t, 3.0484359, variance, 3.0484360)
	must.Eq(t, 1, cifar.Gain(128, 10), must.Sprint("a step at the initial batch makes one unit"))

	// Progress to the target: the smallest progress any batch reached at
	// the end of each epoch (390.71 after the first, 39062.91 after the
	// 100th); a job at the initial batch needs exactly that many steps.
	must.Between(t, 390.714, cifar.EpochProgress(1), 390.715)
	must.Between(t, 39062.908, cifar.EpochProgress(100), 39062.909)
	must.Eq(t, cifar.EpochProgress(100), sim.NewPolluxTruth(cifar, 128).TotalSteps())

	// One job alone, run by tiresias at its 6 replicas under the
	// artifact's assumptions: it arrives at 107 s, is seen at the 120 s
	// round, waits 30 s for its allocation (spread 3+3 by Caravan's
	// placement), and trains its steps at 3+3's step time.
	csv := fstest.MapFS{"w.csv": {Data: []byte("name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,6,2048\n")}}
	wl, err := sim.LoadPolluxWorkload(csv, "w.csv", profiles)
	must.NoError(t, err)
	opts := Options{Cluster: sim.DefaultConfig()}
	must.NoError(t, Assume(AssumePollux, &opts, wl))
	must.Eq(t, 1, wl.Arrivals[0].Job.Elastic.Workers.Min, must.Sprint("the artifact's bounds"))
	must.Eq(t, 64, wl.Arrivals[0].Job.Elastic.Workers.Max)
	must.Eq(t, 2052, wl.Arrivals[0].FixedJob().Training.GlobalBatchSize, must.Sprint("⌈2048/6⌉·6"))
	res, err := Run(wl, builtin.Algorithms["tiresias"](), opts)
	must.NoError(t, err)
	truth := wl.Arrivals[0].Truth
	want := 120 + 30 + truth.TotalSteps()*truth.StepTime(0, []int{3, 3})
	job := res.Jobs[0]
	must.Eq(t, 107, job.Arrival)
	must.Between(t, 120, job.Start, 120.001)
	must.Between(t, want-0.01, job.Finish, want+0.01)
}

// TestPollux_AdaptiveBatch runs Pollux-trace jobs under pollux through
// the server's loop with the artifact's assumptions: the scheduler learns
// each job's goodput model from the samples, chooses batches, and the
// simulator applies them without restarts. A job alone on the cluster
// grows, and its batch with it, beyond its initial batch; every batch
// the simulator ran stays within the job's bounds and splits over its
// workers as the decision said.
func TestPollux_AdaptiveBatch(t *testing.T) {
	wl, err := LoadWorkload("pollux/workloads/workload-6.csv", 1, 12)
	must.NoError(t, err)
	opts := Options{Cluster: sim.DefaultConfig()}
	must.NoError(t, Assume(AssumePollux, &opts, wl))
	res, err := Run(wl, builtin.Algorithms["pollux"](), opts)
	must.NoError(t, err)
	must.Eq(t, 12, res.Summary.Jobs, must.Sprint("every job finishes"))

	byID := map[string]*sim.Arrival{}
	for i := range wl.Arrivals {
		byID[wl.Arrivals[i].Job.ID] = &wl.Arrivals[i]
	}
	grew := 0
	for _, j := range res.Jobs {
		a := byID[j.JobID]
		bounds := a.Adaptive.Training.BatchSize
		if bounds == nil {
			must.SliceEmpty(t, j.Batches, must.Sprintf("%s: a fixed batch (ncf) never changes", j.JobID))
			continue
		}
		must.SliceNotEmpty(t, j.Batches, must.Sprintf("%s: an adaptive job is given a batch", j.JobID))
		for _, b := range j.Batches {
			must.Between(t, bounds.Min, b.Batch.Global, bounds.Max, must.Sprint(j.JobID))
			must.Between(t, bounds.MinLocal, b.Batch.Local, bounds.MaxLocal, must.Sprint(j.JobID))
			must.Eq(t, 0, b.Batch.Global%(b.Batch.Local*(b.Batch.AccumSteps+1)), must.Sprint(j.JobID))
		}
		if len(j.Batches) > 1 && j.Batches[len(j.Batches)-1].Batch.Global > bounds.Min {
			grew++
		}
	}
	must.Positive(t, grew, must.Sprint("some job trains at a larger batch than its initial one"))
	// Batch changes without a change of GPUs: the job kept running.
	moved := map[string]map[float64]bool{}
	for _, c := range res.Allocs {
		if moved[c.JobID] == nil {
			moved[c.JobID] = map[float64]bool{}
		}
		moved[c.JobID][c.Time] = true
	}
	alone := 0
	for _, j := range res.Jobs {
		for _, b := range j.Batches {
			if !moved[j.JobID][b.Time] {
				alone++
			}
		}
	}
	must.Positive(t, alone, must.Sprint("some batch changes move no GPU"))
}
