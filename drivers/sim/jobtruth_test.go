package sim

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

func TestTruthFor(t *testing.T) {
	profiles, err := PolluxProfiles()
	must.NoError(t, err)
	drawn := ParametricWorkload(1, 1, 7).Arrivals[0].Truth.(*ParametricTruth)

	withApp := func(app string) *structs.Job {
		j := structs.MockJob()
		j.Meta["application"] = app
		return j
	}
	cases := []struct {
		name     string
		job      *structs.Job
		profiles map[string]*Profile
		pollux   string // model of the PolluxTruth wanted; "" for parametric
		// batch, stepsPerEpoch, threshold and patience of a parametric truth
		batch, spe, threshold float64
		patience              int
	}{
		{name: "pollux model", job: withApp("cifar10"), profiles: profiles, pollux: "cifar10"},
		{name: "no application", job: structs.MockJob(), profiles: profiles,
			batch: 512, spe: 2500, threshold: 0.02, patience: 3},
		{name: "unknown application", job: withApp("gpt-9"), profiles: profiles,
			batch: 512, spe: 2500, threshold: 0.02, patience: 3},
		{name: "no profiles", job: withApp("cifar10"),
			batch: 512, spe: 2500, threshold: 0.02, patience: 3},
		{name: "no training block keeps the drawn values", job: &structs.Job{ID: "bare"}, profiles: profiles,
			batch: drawn.Batch, spe: drawn.StepsPerEpoch, threshold: drawn.Threshold, patience: drawn.Patience},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			truth := TruthFor(tc.job, tc.profiles, 7)
			if tc.pollux != "" {
				pt, ok := truth.(*PolluxTruth)
				must.True(t, ok, must.Sprintf("got %T", truth))
				must.Eq(t, profiles[tc.pollux], pt.Profile)
				must.Eq(t, 512.0, pt.Batch)
				must.Eq(t, NewPolluxTruth(profiles[tc.pollux], 512).TotalSteps(), pt.TotalSteps())
				return
			}
			pt, ok := truth.(*ParametricTruth)
			must.True(t, ok, must.Sprintf("got %T", truth))
			must.Eq(t, drawn.Theta, pt.Theta, must.Sprint("speed coefficients come from the seed"))
			must.Eq(t, drawn.B, pt.B, must.Sprint("loss coefficients come from the seed"))
			must.Eq(t, tc.batch, pt.Batch)
			must.Eq(t, tc.spe, pt.StepsPerEpoch)
			must.Eq(t, tc.threshold, pt.Threshold)
			must.Eq(t, tc.patience, pt.Patience)
			want := (&ParametricTruth{Theta: pt.Theta, Batch: pt.Batch, B: pt.B, StepsPerEpoch: pt.StepsPerEpoch,
				Threshold: pt.Threshold, Patience: pt.Patience, MaxEpochs: pt.MaxEpochs}).Init()
			must.Eq(t, want.TotalSteps(), pt.TotalSteps(), must.Sprint("the truth is initialised"))
			must.Positive(t, pt.TotalSteps())
		})
	}

	capped := structs.MockJob()
	capped.Training.Convergence.MaxEpochs = 2
	must.Eq(t, 2*2500.0, TruthFor(capped, profiles, 7).TotalSteps(), must.Sprint("max_epochs caps training"))
	uncapped := structs.MockJob()
	uncapped.Training.Convergence.MaxEpochs = 0
	must.Greater(t, 2*2500.0, TruthFor(uncapped, profiles, 7).TotalSteps())

	other := TruthFor(structs.MockJob(), profiles, 8).(*ParametricTruth)
	must.NotEq(t, drawn.Theta, other.Theta, must.Sprint("another seed draws other coefficients"))
}

func TestPolluxProfiles(t *testing.T) {
	a, err := PolluxProfiles()
	must.NoError(t, err)
	b, err := PolluxProfiles()
	must.NoError(t, err)
	must.MapLen(t, len(PolluxModels), a)
	for name := range PolluxModels {
		must.True(t, a[name] == b[name], must.Sprintf("%s is loaded once and shared", name))
	}
}
