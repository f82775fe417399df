package sim

import (
	"math"
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestSim_AdaptiveBatch checks that a decision's batch is applied to a
// running Pollux job at once and without a restart, that from then on the
// job trains at the step time and statistical efficiency of the chosen
// batch, and that its samples report what the goodput model needs at that
// batch.
func TestSim_AdaptiveBatch(t *testing.T) {
	profiles, err := PolluxProfiles()
	must.NoError(t, err)
	p := profiles["cifar10"]
	wl, err := LoadPolluxWorkload(Data, "pollux/workloads/workload-6.csv", profiles)
	must.NoError(t, err)
	var arr *Arrival
	for i := range wl.Arrivals {
		if wl.Arrivals[i].Job.Meta["application"] == "cifar10" {
			arr = &wl.Arrivals[i]
			break
		}
	}
	must.NotNil(t, arr)
	job := arr.Adaptive
	must.NotNil(t, job.Training.BatchSize, must.Sprint("a cifar10 job may vary its batch"))
	must.Eq(t, int(p.InitBatch), job.Training.GlobalBatchSize)
	must.Eq(t, int(p.MaxBatch), job.Training.BatchSize.Max)

	cfg := testConfig()
	s := New(cfg)
	must.NoError(t, s.Submit(job, arr.AdaptiveTruth))
	id := job.ID
	small := structs.Batch{Global: int(p.InitBatch), Local: int(p.InitBatch) / 4, AccumSteps: 0}
	large := structs.Batch{Global: 4 * int(p.InitBatch), Local: int(p.InitBatch) / 2, AccumSteps: 1}
	at := func(b structs.Batch) *structs.Plan {
		pl := plan(id, map[string]int{"node-00": 4})
		pl.Placements[0].Batch = &b
		return pl
	}
	must.NoError(t, s.Enact(at(small)))
	s.Advance(100)
	j := s.jobs[id]
	before := s.Jobs()[0].Step
	epoch := j.truth.Epoch(j.step)
	must.Positive(t, before)

	// The batch changes alone: no restart, the same progress.
	must.NoError(t, s.Enact(at(large)))
	must.Eq(t, 0, j.rescales, must.Sprint("a batch change is no rescale"))
	must.Len(t, 2, j.batches, must.Sprint("the first placement set the small batch, this one the large"))
	must.Eq(t, cfg.RestartPenalty.Seconds(), j.restartTo, must.Sprint("no restart penalty but the first start's"))
	must.Eq(t, before, s.Jobs()[0].Step, must.Sprint("the reported steps carry over"))
	must.InDelta(t, epoch, j.truth.Epoch(j.step), 1e-9, must.Sprint("the progress carries over"))

	// The step time and the progress per step are the large batch's.
	per := []int{4}
	step, sync := p.StepSync(per, float64(large.Local))
	want := step + (step - sync)
	must.InDelta(t, want, j.truth.StepTime(0, j.perNode), 1e-12)
	e := int(epoch)
	must.InDelta(t, p.Gain(float64(large.Global), e), progressRate(j.truth.(*PolluxTruth), j.step), 1e-9)
	must.Greater(t, p.Gain(float64(small.Global), e), p.Gain(float64(large.Global), e))

	// The job finishes when the large batch's remaining steps run out.
	remaining := j.truth.TotalSteps() - j.step
	must.InDelta(t, 100+remaining*want, s.NextEvent(), 1e-6)

	// Samples report the batch, its split, the compute time and the
	// gradient statistics at the batch.
	_, cursor := s.Samples(0)
	s.Advance(100 + 2*cfg.SampleInterval.Seconds())
	smps, _ := s.Samples(cursor)
	must.SliceNotEmpty(t, smps)
	smp := smps[len(smps)-1]
	must.Eq(t, int64(large.Global), smp.BatchSize)
	must.Eq(t, int64(large.Local), smp.LocalBatchSize)
	must.Eq(t, int64(large.AccumSteps), smp.AccumSteps)
	must.InDelta(t, 2*(step-sync), smp.CPUS, 1e-9)
	must.InDelta(t, want, smp.StepTimeS, 1e-9)
	sqr, variance := p.GradStats(float64(large.Global), int(j.truth.Epoch(j.step)))
	must.Eq(t, sqr, smp.GradSqr)
	must.InDelta(t, variance/4, smp.GradVar, 1e-12, must.Sprint("the variance of a batch 4 times the initial one"))
	must.Greater(t, before, float64(smp.Step))
}

// progressRate is the statistical progress one step of t makes at step.
func progressRate(t *PolluxTruth, step float64) float64 {
	e := int(math.Floor(t.Epoch(step)))
	from := 0.0
	if e > 0 {
		from = t.cum[e-1]
	}
	return (t.Profile.EpochProgress(e+1) - t.Profile.EpochProgress(e)) / (t.cum[e] - from)
}
