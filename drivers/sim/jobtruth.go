package sim

import (
	"sync"

	"github.com/caravan-sched/caravan/structs"
)

// TruthFor returns the ground truth a job from a jobspec trains against,
// for jobs that come without one (`caravan sim` jobspec workloads, the
// real-time Driver):
//
//   - a job whose meta names a model of profiles as "application" trains as
//     that model with its global batch (a PolluxTruth);
//   - any other job is a parametric PS job (a ParametricTruth) with the
//     coefficients ParametricWorkload draws for its first job from seed,
//     and the job's own global batch, steps per epoch and convergence
//     threshold and patience. A field the job leaves at zero keeps the
//     drawn value. max_epochs is not part of the truth: the job trains
//     until its loss curve converges.
//
// The same job, profiles and seed give the same truth. profiles may be nil
// (every job is then parametric); it is only read.
func TruthFor(job *structs.Job, profiles map[string]*Profile, seed uint64) Truth {
	tr := job.Training
	if p, ok := profiles[job.Meta["application"]]; ok && tr != nil && tr.GlobalBatchSize > 0 {
		return NewPolluxTruth(p, float64(tr.GlobalBatchSize))
	}
	truth := *ParametricWorkload(1, 1, seed).Arrivals[0].Truth.(*ParametricTruth)
	if tr != nil {
		if tr.GlobalBatchSize > 0 {
			truth.Batch = float64(tr.GlobalBatchSize)
		}
		if tr.StepsPerEpoch > 0 {
			truth.StepsPerEpoch = float64(tr.StepsPerEpoch)
		}
		if c := tr.Convergence; c != nil {
			if c.Threshold > 0 {
				truth.Threshold = c.Threshold
			}
			if c.Patience > 0 {
				truth.Patience = c.Patience
			}
			truth.MaxEpochs = float64(c.MaxEpochs)
		}
	}
	return truth.Init()
}

// PolluxProfiles returns the profiles of every Pollux model in the embedded
// data set (LoadProfiles(Data)), loaded on the first call and shared by all
// callers after it. Profiles are read-only, so the map and its profiles are
// safe for concurrent use; callers must not modify them.
func PolluxProfiles() (map[string]*Profile, error) { return polluxProfiles() }

var polluxProfiles = sync.OnceValues(func() (map[string]*Profile, error) {
	return LoadProfiles(Data)
})
