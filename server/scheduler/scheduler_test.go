package scheduler

import (
	"math"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/drf"
	"github.com/caravan-sched/caravan/planner/model"
	"github.com/caravan-sched/caravan/planner/optimus"
	"github.com/caravan-sched/caravan/structs"
	"github.com/google/go-cmp/cmp/cmpopts"
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

// TestScheduler_ProfileInPlace: under a model-driven algorithm, a new job
// runs at each profiling configuration in turn, smallest first, until
// ProfileSteps samples were measured there; then the algorithm sizes it.
// Its models are refitted as the samples arrive, before any round.
func TestScheduler_ProfileInPlace(t *testing.T) {
	s := New(optimus.New(), Options{ProfileInPlace: true, ProfileConfigs: 3, ProfileSteps: 2})
	must.NoError(t, s.Register(newJob("a")))
	must.SliceEmpty(t, s.ProfileRequests(), must.Sprint("the driver is not asked to profile"))
	configs := s.Profiling("default", "a")
	must.SliceLen(t, 3, configs)
	for i := 1; i < len(configs); i++ {
		must.LessEq(t, configs[i][0]+configs[i][1], configs[i-1][0]+configs[i-1][1], must.Sprint("smallest first"))
	}

	h := planner.NewHarness(t)
	h.AddNodes("n", 2, 16000, 65536, 0)
	sample := func(step int, c [2]int) structs.Sample {
		p, w := float64(c[0]), float64(c[1])
		return structs.Sample{JobID: "a", Step: int64(step), Loss: 1 / (0.01*float64(step) + 1),
			StepTimeS: (1 + 0.2*w/p + 0.01*w + 0.02*p) / w, NumPS: c[0], NumWorkers: c[1]} // async: w steps per that
	}
	step := 0
	for i, c := range configs {
		plan, err := s.Plan(h.Nodes, 0)
		must.NoError(t, err)
		p := plan.Placements[0]
		must.Eq(t, c, [2]int{p.NumPS, p.NumWorkers}, must.Sprintf("round %d runs profiling configuration %d", i, i))
		s.Enacted(plan)

		step++
		s.Ingest([]structs.Sample{sample(step, c)})
		must.False(t, s.Profiled(), must.Sprint("one sample of two"))
		step++
		s.Ingest([]structs.Sample{sample(step, c)})
		must.True(t, s.Profiled())
		must.False(t, s.Profiled(), must.Sprint("reported once"))
		must.SliceLen(t, len(configs)-i-1, s.Profiling("default", "a"))
		_, speed := s.Models("default", "a")
		must.NotNil(t, speed, must.Sprint("refitted on ingest, before the round"))
	}
	rec := &recorder{Algorithm: optimus.New()}
	s.SetAlgorithm(rec)
	_, err := s.Plan(h.Nodes, 0)
	must.NoError(t, err)
	ps, workers := rec.last.Jobs[0].Bounds()
	must.Eq(t, structs.Bounds{Min: 1, Max: 4}, ps, must.Sprint("unpinned once profiled"))
	must.Eq(t, structs.Bounds{Min: 1, Max: 8}, workers)
}

// recorder is a model-driven algorithm that keeps the last request.
type recorder struct {
	planner.Algorithm
	last *planner.Request
}

func (r *recorder) Plan(req *planner.Request) (*planner.Decision, error) {
	r.last = req
	return r.Algorithm.Plan(req)
}

func (r *recorder) SpeedModels() bool { return true }

// TestScheduler_ProfileInPlaceUnfit: a profiling configuration that does
// not fit is skipped when the job can run otherwise, kept while the job
// cannot run at all, and jobs are not pinned under algorithms that do not
// use speed models.
func TestScheduler_ProfileInPlaceUnfit(t *testing.T) {
	s := New(optimus.New(), Options{ProfileInPlace: true, ProfileConfigs: 3, ProfileSteps: 1})
	must.NoError(t, s.Register(newJob("a")))
	configs := s.Profiling("default", "a")
	big := configs[len(configs)-1]
	h := planner.NewHarness(t)
	h.AddNodes("n", 1, 1000*(big[0]+big[1]-1), 65536, 0) // everything but the largest fits
	for _, c := range configs[:len(configs)-1] {
		s.Ingest([]structs.Sample{{JobID: "a", Step: 1, StepTimeS: 1, NumPS: c[0], NumWorkers: c[1]}})
	}
	must.Eq(t, [][2]int{big}, s.Profiling("default", "a"))
	plan, err := s.Plan(h.Nodes, 0)
	must.NoError(t, err)
	must.False(t, plan.Placements[0].Paused(), must.Sprint("runs unpinned"))
	must.SliceEmpty(t, s.Profiling("default", "a"), must.Sprint("the configuration that does not fit is skipped"))

	// No room at all: the job waits and keeps its configurations.
	must.NoError(t, s.Register(newJob("b")))
	plan, err = s.Plan(nil, 0)
	must.NoError(t, err)
	for _, p := range plan.Placements {
		must.True(t, p.Paused())
	}
	must.SliceLen(t, 3, s.Profiling("default", "b"))

	// drf sizes jobs without models: b is not pinned to (1, 1).
	s.SetAlgorithm(drf.New())
	plan, err = s.Plan(h.Nodes, 0)
	must.NoError(t, err)
	for _, p := range plan.Placements {
		if p.JobID == "b" {
			must.NotEq(t, s.Profiling("default", "b")[0], [2]int{p.NumPS, p.NumWorkers})
		}
	}
}

// TestScheduler_Subtasks: samples' cpu_s and net_s become moving averages
// at the job's configuration, which start again when it changes, and reach
// the algorithm.
func TestScheduler_Subtasks(t *testing.T) {
	rec := &recorder{Algorithm: optimus.New()}
	s := New(rec, Options{ProfileConfigs: -1})
	must.NoError(t, s.Register(newJob("a")))
	smp := func(cpu, net float64, w int) structs.Sample {
		return structs.Sample{JobID: "a", Step: 1, CPUS: cpu, NetS: net, NumPS: 1, NumWorkers: w}
	}
	s.Ingest([]structs.Sample{smp(1, 2, 2), smp(2, 1, 2)})
	_, err := s.Plan(nil, 0)
	must.NoError(t, err)
	got := rec.last.Jobs[0].Subtasks
	must.NotNil(t, got)
	must.Eq(t, planner.Subtasks{CPU: 1.2, Net: 1.8, PS: 1, Workers: 2}, *got, must.Cmp(cmpopts.EquateApprox(0, 1e-12)))

	s.Ingest([]structs.Sample{smp(0.5, 3, 4)})
	_, err = s.Plan(nil, 0)
	must.NoError(t, err)
	must.Eq(t, planner.Subtasks{CPU: 0.5, Net: 3, PS: 1, Workers: 4}, *rec.last.Jobs[0].Subtasks, must.Sprint("a new configuration starts again"))
}
