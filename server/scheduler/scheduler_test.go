package scheduler

import (
	"math"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/model"
	"github.com/caravan-sched/caravan/planner/optimus"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

func newJob(id string) *structs.Job {
	return planner.MockJob(id, structs.Bounds{Min: 1, Max: 4}, structs.Bounds{Min: 1, Max: 8})
}

func TestScheduler_Register(t *testing.T) {
	s := New(optimus.New(), Options{})
	must.NoError(t, s.Register(newJob("a")))
	must.ErrorIs(t, s.Register(newJob("a")), ErrDuplicateJob)
	bad := newJob("b")
	bad.Training.Mode = "semi"
	must.ErrorContains(t, s.Register(bad), `register job "b"`)
	must.Eq(t, 1, s.Active())

	reqs := s.ProfileRequests()
	must.SliceLen(t, 1, reqs)
	must.Eq(t, "a", reqs[0].JobID)
	must.SliceLen(t, 6, reqs[0].Configs)
	for _, c := range reqs[0].Configs {
		must.Between(t, 1, c[0], 4)
		must.Between(t, 1, c[1], 8)
	}
	must.SliceEmpty(t, s.ProfileRequests(), must.Sprint("profiling is requested once"))
}

// TestScheduler_SamplesToPlan checks the pipeline: bad samples are dropped,
// good ones become fitted models, and the plan is a checked decision that
// grows the job beyond its minimum once its speed is known.
func TestScheduler_SamplesToPlan(t *testing.T) {
	s := New(optimus.New(), Options{})
	must.NoError(t, s.Register(newJob("a")))
	var samples []structs.Sample
	for _, c := range s.ProfileRequests()[0].Configs {
		p, w := float64(c[0]), float64(c[1])
		samples = append(samples, structs.Sample{JobID: "a", NumPS: c[0], NumWorkers: c[1],
			StepTimeS: 1 + 0.2*w/p + 0.01*w + 0.02*p}) // async: w steps per that
	}
	for step := range 40 {
		samples = append(samples, structs.Sample{JobID: "a", Step: int64(step * 10), Loss: 1 / (0.01*float64(step*10) + 1), StepTimeS: 1.2, NumPS: 1, NumWorkers: 1})
	}
	samples = append(samples,
		structs.Sample{JobID: "a", Step: 5, Loss: math.NaN(), NumWorkers: 1},
		structs.Sample{JobID: "ghost", Step: 5, Loss: 1, NumWorkers: 1},
	)
	s.Ingest(samples)
	must.Eq(t, 2, s.Rejected)
	must.True(t, s.Changed())

	h := planner.NewHarness(t)
	h.AddNodes("n", 2, 16000, 65536, 0)
	plan, err := s.Plan(h.Nodes, 0)
	must.NoError(t, err)
	must.Eq(t, "optimus", plan.Algorithm)
	must.SliceLen(t, 1, plan.Placements)
	must.Greater(t, 2, plan.Placements[0].NumWorkers+plan.Placements[0].NumPS)
	loss, speed := s.Models("default", "a")
	must.NotNil(t, loss)
	must.NotNil(t, speed)
	must.False(t, s.Changed(), must.Sprint("nothing new since the plan"))

	s.Enacted(plan)
	s.Complete("default", "a")
	must.Eq(t, 0, s.Active())
	loss, speed = s.Models("default", "a")
	must.Nil(t, loss)
	must.Nil(t, speed)
}

func TestSpeedError(t *testing.T) {
	truth := func(ps, w int) float64 { return float64(w) / (1 + 0.1*float64(w)/float64(ps)) }
	e := &entry{speeds: map[[2]int]*mean{}}
	var pts []model.SpeedPoint
	for _, c := range [][2]int{{1, 1}, {1, 2}, {2, 4}, {2, 8}} {
		v := truth(c[0], c[1])
		e.speeds[c] = &mean{sum: 2 * v, n: 2}
		pts = append(pts, model.SpeedPoint{PS: c[0], Workers: c[1], Speed: v})
	}
	fit, err := model.FitSpeed(model.SpeedAsync, 0, pts)
	must.NoError(t, err)
	e.speedFit = fit
	exact, n := speedError(e)
	must.Eq(t, 4, n)
	must.Less(t, 1e-9, exact, must.Sprint("a fit through every point has no error"))

	// One configuration measured twice as fast as the fit says: it is off
	// by 1/2 of what was measured, the mean over 4 by 1/8.
	e.speeds[[2]int{1, 1}] = &mean{sum: 2 * 2 * truth(1, 1), n: 2}
	off, _ := speedError(e)
	must.Less(t, 1e-9, math.Abs(off-0.125))
}

// TestRegister_SpeedPriors: speeds given in the jobspec fit the speed
// model at once, and the job is not profiled.
func TestRegister_SpeedPriors(t *testing.T) {
	s := New(optimus.New(), Options{})
	j := newJob("measured")
	j.Training.Speeds = []*structs.SpeedPrior{{PS: 1, Workers: 1, StepsPerSecond: 2}, {PS: 1, Workers: 4, StepsPerSecond: 6}, {PS: 2, Workers: 8, StepsPerSecond: 10}}
	must.NoError(t, s.Register(j))
	must.NoError(t, s.Register(newJob("unmeasured")))

	reqs := s.ProfileRequests()
	must.SliceLen(t, 1, reqs)
	must.Eq(t, "unmeasured", reqs[0].JobID)

	_, err := s.Plan(nil, 0)
	must.NoError(t, err)
	var got *structs.JobModel
	for _, m := range s.Summaries() {
		if m.JobID == "measured" {
			got = m
		}
	}
	must.NotNil(t, got)
	must.SliceNotEmpty(t, got.Speed, must.Sprint("the priors fit the speed model"))
	must.Eq(t, 3, got.SpeedConfigs)
}
