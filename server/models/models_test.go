package models

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/drf"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/planner/model"
	"github.com/caravan-sched/caravan/planner/optimus"
	"github.com/caravan-sched/caravan/planner/pollux"
	"github.com/caravan-sched/caravan/structs"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/shoenig/test/must"
)

func newJob(id string) *structs.Job {
	return planner.MockJob(id, structs.Bounds{Min: 1, Max: 4}, structs.Bounds{Min: 1, Max: 8})
}

func TestSet_Register(t *testing.T) {
	s := New(optimus.New(), Options{})
	must.NoError(t, s.Register(newJob("a")))
	must.ErrorIs(t, s.Register(newJob("a")), ErrDuplicateJob)
	bad := newJob("b")
	bad.Training.Mode = "semi"
	must.ErrorContains(t, s.Register(bad), `register job "b"`)
	must.Eq(t, 1, s.Active())

	reqs := s.ProfileRequests()
	must.SliceLen(t, 1, reqs)
	must.Eq(t, "a", reqs[0].Job.ID)
	must.SliceLen(t, 6, reqs[0].Configs)
	for _, c := range reqs[0].Configs {
		must.Between(t, 1, c.PS, 4)
		must.Between(t, 1, c.Workers, 8)
	}
	must.SliceEmpty(t, s.ProfileRequests(), must.Sprint("profiling is requested once"))
}

// TestSet_SamplesToPlan checks the pipeline: bad samples are dropped,
// good ones become fitted models, and the plan is a checked decision that
// grows the job beyond its minimum once its speed is known.
func TestSet_SamplesToPlan(t *testing.T) {
	s := New(optimus.New(), Options{})
	must.NoError(t, s.Register(newJob("a")))
	var samples []structs.Sample
	for _, c := range s.ProfileRequests()[0].Configs {
		p, w := float64(c.PS), float64(c.Workers)
		samples = append(samples, structs.Sample{JobID: "a", NumPS: c.PS, NumWorkers: c.Workers,
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
	loss, speed := s.Models(structs.NewJobKey("", "a"))
	must.NotNil(t, loss)
	must.NotNil(t, speed)
	must.False(t, s.Changed(), must.Sprint("nothing new since the plan"))

	s.Observe(plan.Placements[0].Key(), plan.Placements[0], nil)
	s.Complete(structs.NewJobKey("", "a"))
	must.Eq(t, 0, s.Active())
	loss, speed = s.Models(structs.NewJobKey("", "a"))
	must.Nil(t, loss)
	must.Nil(t, speed)
}

func TestSpeedError(t *testing.T) {
	truth := func(ps, w int) float64 { return float64(w) / (1 + 0.1*float64(w)/float64(ps)) }
	e := newEntry(nil)
	var pts []model.SpeedPoint
	for _, c := range []structs.Shape{{PS: 1, Workers: 1}, {PS: 1, Workers: 2}, {PS: 2, Workers: 4}, {PS: 2, Workers: 8}} {
		v := truth(c.PS, c.Workers)
		e.speed.means[c] = &mean{sum: 2 * v, n: 2}
		pts = append(pts, model.SpeedPoint{PS: c.PS, Workers: c.Workers, Speed: v})
	}
	fit, err := model.FitSpeed(model.SpeedAsync, 0, pts)
	must.NoError(t, err)
	e.speed.fit = fit
	exact, n := e.speed.error()
	must.Eq(t, 4, n)
	must.Less(t, 1e-9, exact, must.Sprint("a fit through every point has no error"))

	// One configuration measured twice as fast as the fit says: it is off
	// by 1/2 of what was measured, the mean over 4 by 1/8.
	e.speed.means[structs.Shape{PS: 1, Workers: 1}] = &mean{sum: 2 * 2 * truth(1, 1), n: 2}
	off, _ := e.speed.error()
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
	must.Eq(t, "unmeasured", reqs[0].Job.ID)

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

// TestSet_ProfileInPlace: under a model-driven algorithm, a new job
// runs at each profiling configuration in turn, smallest first, until
// ProfileSteps samples were measured there; then the algorithm sizes it.
// Its models are refitted as the samples arrive, before any round.
func TestSet_ProfileInPlace(t *testing.T) {
	s := New(optimus.New(), Options{ProfileInPlace: true, ProfileConfigs: 3, ProfileSteps: 2})
	must.NoError(t, s.Register(newJob("a")))
	must.SliceEmpty(t, s.ProfileRequests(), must.Sprint("the driver is not asked to profile"))
	configs := s.Profiling(structs.NewJobKey("", "a"))
	must.SliceLen(t, 3, configs)
	for i := 1; i < len(configs); i++ {
		must.LessEq(t, configs[i].Tasks(), configs[i-1].Tasks(), must.Sprint("smallest first"))
	}

	h := planner.NewHarness(t)
	h.AddNodes("n", 2, 16000, 65536, 0)
	sample := func(step int, c structs.Shape) structs.Sample {
		p, w := float64(c.PS), float64(c.Workers)
		return structs.Sample{JobID: "a", Step: int64(step), Loss: 1 / (0.01*float64(step) + 1),
			StepTimeS: (1 + 0.2*w/p + 0.01*w + 0.02*p) / w, NumPS: c.PS, NumWorkers: c.Workers} // async: w steps per that
	}
	step := 0
	for i, c := range configs {
		plan, err := s.Plan(h.Nodes, 0)
		must.NoError(t, err)
		p := plan.Placements[0]
		must.Eq(t, c, p.Shape(), must.Sprintf("round %d runs profiling configuration %d", i, i))
		then := "then sized by optimus"
		if left := len(configs) - i - 1; left > 0 {
			then = fmt.Sprintf("%s to go, %s", structs.Plural(left, "more configuration"), then)
		}
		must.Eq(t, fmt.Sprintf("optimus: %s; profiling its speed at this configuration (%s)", c, then), p.Reason,
			must.Sprint("the reason says the job is profiled, not that it is at its minimum or maximum"))
		s.Observe(p.Key(), p, nil)

		step++
		s.Ingest([]structs.Sample{sample(step, c)})
		must.False(t, s.Profiled(), must.Sprint("one sample of two"))
		step++
		s.Ingest([]structs.Sample{sample(step, c)})
		must.True(t, s.Profiled())
		must.False(t, s.Profiled(), must.Sprint("reported once"))
		must.SliceLen(t, len(configs)-i-1, s.Profiling(structs.NewJobKey("", "a")))
		_, speed := s.Models(structs.NewJobKey("", "a"))
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

// TestSet_ProfileInPlaceUnfit: a profiling configuration that does
// not fit is skipped when the job can run otherwise, kept while the job
// cannot run at all, and jobs are not pinned under algorithms that do not
// use speed models.
func TestSet_ProfileInPlaceUnfit(t *testing.T) {
	s := New(optimus.New(), Options{ProfileInPlace: true, ProfileConfigs: 3, ProfileSteps: 1})
	must.NoError(t, s.Register(newJob("a")))
	configs := s.Profiling(structs.NewJobKey("", "a"))
	big := configs[len(configs)-1]
	h := planner.NewHarness(t)
	h.AddNodes("n", 1, 1000*(big.Tasks()-1), 65536, 0) // everything but the largest fits
	for _, c := range configs[:len(configs)-1] {
		s.Ingest([]structs.Sample{{JobID: "a", Step: 1, StepTimeS: 1, NumPS: c.PS, NumWorkers: c.Workers}})
	}
	must.Eq(t, []structs.Shape{big}, s.Profiling(structs.NewJobKey("", "a")))
	plan, err := s.Plan(h.Nodes, 0)
	must.NoError(t, err)
	must.False(t, plan.Placements[0].Paused(), must.Sprint("runs unpinned"))
	must.SliceEmpty(t, s.Profiling(structs.NewJobKey("", "a")), must.Sprint("the configuration that does not fit is skipped"))

	// No room at all: the job waits and keeps its configurations.
	must.NoError(t, s.Register(newJob("b")))
	plan, err = s.Plan(nil, 0)
	must.NoError(t, err)
	for _, p := range plan.Placements {
		must.True(t, p.Paused())
	}
	must.SliceLen(t, 3, s.Profiling(structs.NewJobKey("", "b")))

	// drf sizes jobs without models: b is not pinned to (1, 1).
	s.SetAlgorithm(drf.New())
	plan, err = s.Plan(h.Nodes, 0)
	must.NoError(t, err)
	for _, p := range plan.Placements {
		if p.JobID == "b" {
			must.NotEq(t, s.Profiling(structs.NewJobKey("", "b"))[0], p.Shape())
		}
	}
}

// TestSet_Subtasks: samples' cpu_s and net_s become moving averages
// at the job's configuration, which start again when it changes, and reach
// the algorithm.
func TestSet_Subtasks(t *testing.T) {
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

// TestSet_Progress: the first worker's losses, with their times,
// reach the algorithm as the job's progress, a bounded window of the
// newest; other ranks, parameter servers and samples without a time or a
// loss do not.
func TestSet_Progress(t *testing.T) {
	rec := &recorder{Algorithm: drf.New()}
	s := New(rec, Options{ProfileConfigs: -1, MaxLossPoints: 4})
	must.NoError(t, s.Register(newJob("a")))
	smp := func(at int64, loss float64) structs.Sample {
		return structs.Sample{JobID: "a", Step: at, Loss: loss, Time: at, NumPS: 1, NumWorkers: 2}
	}
	other := smp(2, 9)
	other.Rank = 1
	ps := smp(3, 9)
	ps.Role = structs.RolePS
	s.Ingest([]structs.Sample{smp(1, 0.9), other, ps, smp(0, 9), smp(4, 0), smp(5, 0.8)})
	_, err := s.Plan(nil, 0)
	must.NoError(t, err)
	must.Eq(t, []planner.ProgressPoint{{Time: 1, Loss: 0.9}, {Time: 5, Loss: 0.8}}, rec.last.Jobs[0].Progress)

	s.Ingest([]structs.Sample{smp(6, 0.7), smp(7, 0.6), smp(8, 0.5)})
	_, err = s.Plan(nil, 0)
	must.NoError(t, err)
	must.Eq(t, []planner.ProgressPoint{{Time: 6, Loss: 0.7}, {Time: 7, Loss: 0.6}, {Time: 8, Loss: 0.5}}, rec.last.Jobs[0].Progress,
		must.Sprint("past the bound, the oldest half is dropped"))
}

// TestSet_Update: a new version of a job reaches the next plan (a
// lowered maximum caps it at once) and keeps what was measured of it.
func TestSet_Update(t *testing.T) {
	s := New(drf.New(), Options{ProfileConfigs: -1})
	must.NoError(t, s.Register(newJob("a")))
	h := planner.NewHarness(t)
	h.AddNodes("n", 4, 16000, 65536, 0)
	plan, err := s.Plan(h.Nodes, 0)
	must.NoError(t, err)
	must.Eq(t, 8, plan.Placements[0].NumWorkers, must.Sprint("drf grows the job to its maximum"))
	s.Ingest([]structs.Sample{{JobID: "a", Step: 10, Loss: 1, StepTimeS: 1, NumPS: 1, NumWorkers: 8}})

	lower := newJob("a")
	lower.Elastic.Workers.Max = 3
	lower.Version = 1
	must.NoError(t, s.Update(lower))
	must.True(t, s.Changed())
	must.Eq(t, 3, s.Job(structs.NewJobKey("", "a")).Elastic.Workers.Max)
	plan, err = s.Plan(h.Nodes, 0)
	must.NoError(t, err)
	must.Eq(t, 3, plan.Placements[0].NumWorkers)
	must.Eq(t, 10, s.Summaries()[0].Step, must.Sprint("what was measured stays"))

	bad := newJob("a")
	bad.Training.Mode = "semi"
	must.Error(t, s.Update(bad))
	must.Eq(t, 3, s.Job(structs.NewJobKey("", "a")).Elastic.Workers.Max, must.Sprint("an invalid version changes nothing"))
}

// TestSet_InFlight: a job whose change is in flight keeps its
// target in every plan, and the other jobs are planned around the
// capacity it holds.
func TestSet_InFlight(t *testing.T) {
	s := New(drf.New(), Options{ProfileConfigs: -1})
	must.NoError(t, s.Register(newJob("a")))
	h := planner.NewHarness(t)
	h.AddNodes("n", 1, 8000, 65536, 0) // room for 8 tasks of 1000 MHz
	target := &structs.Placement{Namespace: "default", JobID: "a", NumPS: 1, NumWorkers: 5,
		Nodes: []*structs.NodeTasks{{NodeID: h.Nodes[0].ID, PS: 1, Workers: 5}}}
	s.Observe(target.Key(), nil, &structs.Change{Target: target, Phase: structs.ChangeCheckpointing})
	must.NoError(t, s.Register(newJob("b")))

	plan, err := s.Plan(h.Nodes, 0)
	must.NoError(t, err)
	must.SliceLen(t, 2, plan.Placements)
	a, b := plan.Placements[0], plan.Placements[1]
	must.True(t, a.SameTasks(target), must.Sprint("the job in flight keeps its target"))
	must.Eq(t, 2, b.NumPS+b.NumWorkers, must.Sprint("the other job gets what is left: 8 - 6 tasks"))

	// Once the change is done, the job is planned again like any other.
	s.Observe(target.Key(), target, &structs.Change{Target: target, Phase: structs.ChangeDone})
	plan, err = s.Plan(h.Nodes, 0)
	must.NoError(t, err)
	must.Eq(t, 8, plan.Placements[0].NumPS+plan.Placements[0].NumWorkers+plan.Placements[1].NumPS+plan.Placements[1].NumWorkers)
}

// TestSet_AbortHold: a job whose change was aborted keeps what it
// runs for AbortHold, doubled with each abort in a row, and the other jobs
// are planned around it; then it is planned freely again.
func TestSet_AbortHold(t *testing.T) {
	s := New(drf.New(), Options{ProfileConfigs: -1, AbortHold: time.Minute})
	must.NoError(t, s.Register(newJob("a")))
	must.NoError(t, s.Register(newJob("b")))
	h := planner.NewHarness(t)
	h.AddNodes("n", 1, 8000, 65536, 0) // room for 8 tasks of 1000 MHz
	running := &structs.Placement{Namespace: "default", JobID: "a", NumPS: 2, NumWorkers: 6,
		Nodes: []*structs.NodeTasks{{NodeID: h.Nodes[0].ID, PS: 2, Workers: 6}}}
	smaller := &structs.Placement{Namespace: "default", JobID: "a", NumPS: 1, NumWorkers: 3,
		Nodes: []*structs.NodeTasks{{NodeID: h.Nodes[0].ID, PS: 1, Workers: 3}}}
	abortAt := func(at time.Duration) {
		s.Observe(running.Key(), running, &structs.Change{Target: smaller, Phase: structs.ChangeAborted, Since: int64(at)})
	}
	abortAt(0)
	plan, err := s.Plan(h.Nodes, int64(30*time.Second))
	must.NoError(t, err)
	must.True(t, plan.Placements[0].SameTasks(running), must.Sprint("a keeps what runs"))
	must.True(t, plan.Placements[1].Paused(), must.Sprint("b is not planned onto a's capacity"))

	plan, err = s.Plan(h.Nodes, int64(61*time.Second))
	must.NoError(t, err)
	must.False(t, plan.Placements[0].SameTasks(running), must.Sprint("after the hold, drf shares the node again"))
	must.False(t, plan.Placements[1].Paused())

	abortAt(70 * time.Second) // a second abort in a row: held for 2 minutes
	plan, err = s.Plan(h.Nodes, int64(70*time.Second+110*time.Second))
	must.NoError(t, err)
	must.True(t, plan.Placements[0].SameTasks(running))

	s.Observe(running.Key(), smaller, &structs.Change{Target: smaller, Phase: structs.ChangeDone, Since: int64(200 * time.Second)})
	plan, err = s.Plan(h.Nodes, int64(201*time.Second))
	must.NoError(t, err)
	must.False(t, plan.Placements[1].Paused(), must.Sprint("a change that is done ends the hold"))

	// A new version ends the hold, even when the abort is reported again.
	abortAt(300 * time.Second)
	v1 := newJob("a")
	v1.Priority, v1.Version = 70, 1
	must.NoError(t, s.Update(v1))
	abortAt(300 * time.Second) // the same abort, reported again
	plan, err = s.Plan(h.Nodes, int64(310*time.Second))
	must.NoError(t, err)
	must.False(t, plan.Placements[0].SameTasks(running), must.Sprint("a new version is planned at once; an abort counts once"))
	must.Eq(t, 1, plan.Placements[0].JobVersion, must.Sprint("the placement names the version it was made for"))

	lower := newJob("a")
	lower.Elastic.Workers.Max, lower.Version = 2, 2
	must.NoError(t, s.Update(lower))
	plan, err = s.Plan(h.Nodes, int64(320*time.Second))
	must.NoError(t, err)
	must.LessEq(t, 2, plan.Placements[0].NumWorkers, must.Sprint("a new version is planned within its bounds"))

	// A new leader's scheduler learns of the abort after the version: what
	// runs breaks the version's bounds, so it is not held.
	fresh := New(drf.New(), Options{ProfileConfigs: -1, AbortHold: time.Minute})
	must.NoError(t, fresh.Register(lower))
	fresh.Observe(running.Key(), running, &structs.Change{Target: smaller, Phase: structs.ChangeAborted, Since: int64(300 * time.Second)})
	plan, err = fresh.Plan(h.Nodes, int64(310*time.Second))
	must.NoError(t, err)
	must.LessEq(t, 2, plan.Placements[0].NumWorkers, must.Sprint("held beyond the version's bounds"))
}

// TestSet_DecideOffThread: a round decided on another goroutine
// plans what the scheduler held at Snapshot, while the scheduler takes
// samples, new versions and observations (go test -race checks that
// they share nothing); Version moves for the changes that make the
// plan stale, and not for samples.
func TestSet_DecideOffThread(t *testing.T) {
	s := New(drf.New(), Options{ProfileConfigs: -1})
	must.NoError(t, s.Register(newJob("a")))
	h := planner.NewHarness(t)
	h.AddNodes("n", 4, 16000, 65536, 0)
	round := s.Snapshot(h.Nodes, 0)
	must.Eq(t, s.Version(), round.Version)
	must.False(t, s.Changed())

	type result struct {
		dec *Decision
		err error
	}
	decided := make(chan result)
	go func() {
		dec, err := round.Decide(drf.New())
		decided <- result{dec, err}
	}()
	for step := range 50 {
		s.Ingest([]structs.Sample{{JobID: "a", Step: int64(step), Loss: 1 / float64(step+1), StepTimeS: 1, NumPS: 1, NumWorkers: 8, Time: int64(step)}})
	}
	must.Eq(t, round.Version, s.Version(), must.Sprint("samples do not make a plan stale"))
	lower := newJob("a")
	lower.Elastic.Workers.Max = 3
	lower.Version = 1
	must.NoError(t, s.Update(lower))
	s.Observe(structs.NewJobKey("", "a"), &structs.Placement{Namespace: "default", JobID: "a", NumPS: 1, NumWorkers: 2}, nil)
	must.Greater(t, round.Version, s.Version(), must.Sprint("a new version makes it stale"))

	res := <-decided
	must.NoError(t, res.err)
	plan := s.Finish(res.dec)
	must.Eq(t, 8, plan.Placements[0].NumWorkers, must.Sprint("planned on the version of the snapshot"))
	plan, err := s.Plan(h.Nodes, 0)
	must.NoError(t, err)
	must.Eq(t, 3, plan.Placements[0].NumWorkers)
}

// TestSnapshot_AttainedService: a job accrues, at every round, what ran
// of it at the round before over the time since: tasks for a job without
// GPUs (3 here), GPUs for one with them.
func TestSnapshot_AttainedService(t *testing.T) {
	s := New(drf.New(), Options{ProfileConfigs: -1})
	must.NoError(t, s.Register(newJob("a")))
	h := planner.NewHarness(t)
	h.AddNodes("n", 1, 8000, 65536, 0)
	attained := func(now int64) float64 { return s.Snapshot(h.Nodes, now).jobs[0].job.AttainedService }
	must.Eq(t, 0, attained(1e9))
	p := &structs.Placement{Namespace: "default", JobID: "a", NumPS: 1, NumWorkers: 2,
		Nodes: []*structs.NodeTasks{{NodeID: h.Nodes[0].ID, PS: 1, Workers: 2}}}
	s.Observe(p.Key(), p, nil)
	must.Eq(t, 0, attained(61e9), must.Sprint("nothing ran before this round"))
	must.Eq(t, 180, attained(121e9), must.Sprint("3 tasks for 60 s"))
	must.Eq(t, 180, attained(100e9), must.Sprint("a time before the last round adds nothing"))

	gpu := &structs.Job{
		ID: "g", Training: &structs.Training{Architecture: structs.ArchitectureAllReduce, Mode: structs.ModeSync, GlobalBatchSize: 64},
		Elastic: &structs.Elastic{Workers: structs.Bounds{Min: 1, Max: 4}},
		Worker: &structs.Role{Driver: "exec", Resources: &structs.Resources{CPU: 100, MemoryMB: 100,
			Devices: []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 2}}}},
	}
	gpu.Canonicalize()
	run := &structs.Placement{Namespace: "default", JobID: "g", NumWorkers: 3, Nodes: []*structs.NodeTasks{{NodeID: "x", Workers: 3}}}
	must.Eq(t, 6.0, serviceRate(gpu, run), must.Sprint("3 workers of 2 GPUs"))
	must.Eq(t, 0.0, serviceRate(gpu, nil))
}

// TestSet_Goodput checks the goodput pipeline: workers' step times
// at their configurations become a fitted throughput model, their
// gradient statistics are converted to the job's reference batch, both
// reach the request, restarts are counted, the summary shows the model,
// and pollux plans the job with a batch within its bounds.
func TestSet_Goodput(t *testing.T) {
	h := planner.NewHarness(t)
	nodes := h.AddNodes("gpu", 2, 32000, 65536, 4)
	s := New(pollux.New(), Options{ProfileConfigs: -1})
	j := planner.MockAllReduceJob("a", structs.Bounds{Min: 1, Max: 8}, &structs.BatchSize{Min: 128, Max: 4096, MinLocal: 32, MaxLocal: 256})
	must.NoError(t, s.Register(j))
	key := j.Key()

	// The truth: cifar10's fitted model (planner/goodput's traces).
	truth := goodput.PerfParams{AlphaC: 0.0173, BetaC: 0.0007, AlphaN: 0.121, BetaN: 0.0024, AlphaR: 0.0325, BetaR: 1e-8, Gamma: 2}
	run := func(workers int, spread ...int) {
		p := &structs.Placement{Namespace: "default", JobID: "a", NumWorkers: workers}
		for i, w := range spread {
			p.Nodes = append(p.Nodes, &structs.NodeTasks{NodeID: nodes[i].ID, Workers: w})
		}
		s.Observe(key, p, nil)
		var samples []structs.Sample
		for _, local := range []int{32, 64, 128} {
			tc := truth.ComputeTime(float64(local))
			step := truth.StepTime(len(spread), workers, float64(local), 1)
			samples = append(samples, structs.Sample{
				JobID: "a", Namespace: "default", Role: structs.RoleWorker, NumWorkers: workers, StepTimeS: step, CPUS: 2 * tc,
				BatchSize: int64(workers * local * 2), LocalBatchSize: int64(local), AccumSteps: 1,
				GradSqr: 2, GradVar: 0.5,
			})
		}
		s.Ingest(samples)
	}
	run(1, 1)
	run(4, 4)
	run(8, 4, 4)

	r := s.Snapshot(nodes, 0)
	must.SliceLen(t, 1, r.jobs)
	pj := r.jobs[0].job
	must.NotNil(t, pj.Perf)
	must.Eq(t, 9, pj.Perf.Points)
	must.Eq(t, 8, pj.Perf.MaxReplicas)
	must.Less(t, 0.02, pj.Perf.Error, must.Sprintf("fit %+v", pj.Perf))
	// grad_var 0.5 at the last batch, 8 × 128 × 2 = 2048, is 8 at the
	// reference batch 128.
	must.Eq(t, &goodput.GradParams{Sqr: 2, Var: 8}, pj.Grad)
	must.Eq(t, 2, pj.Restarts, must.Sprint("three placements: the first start and two restarts"))

	sum := s.Summaries()[0].Goodput
	must.NotNil(t, sum)
	must.SliceLen(t, 7, sum.Perf)
	must.Eq(t, 9, sum.Configs)
	must.Eq(t, 512.0, sum.NoiseScale, must.Sprint("8 × 128 / 2"))
	must.Eq(t, 128, sum.Batch, must.Sprint("running without a chosen batch: the reference"))
	must.Positive(t, sum.Goodput)

	plan, err := s.Plan(nodes, 0)
	must.NoError(t, err)
	p := plan.Placements[0]
	must.NotNil(t, p.Batch, must.Sprint(p.Reason))
	must.Between(t, 128, p.Batch.Global, 4096)
	must.Between(t, 32, p.Batch.Local, 256)
}

// TestSet_ShownGoodputBounded: under an algorithm that does not plan from
// throughput models (drf), a step refits at most shownGoodputFits of them
// however many jobs reported, the next steps refit the rest in job order,
// and the models left unfitted ask for no round; under pollux, which plans
// from them, every one is refitted at once.
func TestSet_ShownGoodputBounded(t *testing.T) {
	const jobs = 2*shownGoodputFits + 5
	ingest := func(s *Set) {
		var samples []structs.Sample
		for i := range jobs {
			samples = append(samples, structs.Sample{JobID: fmt.Sprintf("j%02d", i), Namespace: "default", Role: structs.RoleWorker,
				NumWorkers: 1, StepTimeS: 0.5, LocalBatchSize: 32, BatchSize: 32})
		}
		s.Ingest(samples)
		s.RefitShownGoodput()
	}
	fitted := func(s *Set) int {
		n := 0
		for _, e := range s.jobs {
			if e.goodput.all.fit != nil {
				n++
			}
		}
		return n
	}
	newSet := func(alg planner.Algorithm) *Set {
		s := New(alg, Options{ProfileConfigs: -1})
		for i := range jobs {
			must.NoError(t, s.Register(planner.MockAllReduceJob(fmt.Sprintf("j%02d", i), structs.Bounds{Min: 1, Max: 1}, nil)))
		}
		return s
	}

	s := newSet(drf.New())
	ingest(s)
	must.Eq(t, shownGoodputFits, fitted(s))
	s.changed = false // the speed models' refits ask for a round
	must.False(t, s.Changed(), must.Sprint("models no plan reads ask for no round"))
	must.NotNil(t, s.jobs[structs.NewJobKey("default", "j00")].goodput.all.fit, must.Sprint("job order"))
	ingest(s)
	must.Eq(t, 2*shownGoodputFits, fitted(s), must.Sprint("the next ones, not the same again"))
	s.Snapshot(nil, 0)
	must.Eq(t, jobs, fitted(s))

	s = newSet(pollux.New())
	ingest(s)
	must.Eq(t, jobs, fitted(s))
}

// TestSet_GoodputByType checks that each GPU type's step times make a
// throughput model of their own: a sample that names its type counts for
// that type (a profile), one that does not counts for the type of the
// nodes its job runs on, and one on an unknown node for no type; all of
// them still make the job's untyped model.
func TestSet_GoodputByType(t *testing.T) {
	h := planner.NewHarness(t)
	nodes := h.AddNodes("t4", 1, 32000, 65536, 4)
	nodes[0].Devices[0].Name = "Tesla T4"
	s := New(pollux.New(), Options{ProfileConfigs: -1})
	j := planner.MockAllReduceJob("a", structs.Bounds{Min: 1, Max: 8}, &structs.BatchSize{Min: 32, Max: 4096, MinLocal: 32, MaxLocal: 256})
	must.NoError(t, s.Register(j))
	key := j.Key()
	must.Nil(t, s.Snapshot(nodes, 0).jobs[0].job.PerfByType, must.Sprint("nothing measured"))

	slow := goodput.PerfParams{AlphaC: 0.04, BetaC: 0.002, AlphaN: 0.1, BetaN: 0.002, AlphaR: 0.03, BetaR: 1e-8, Gamma: 2}
	fast := goodput.PerfParams{AlphaC: 0.01, BetaC: 0.0004, AlphaN: 0.1, BetaN: 0.002, AlphaR: 0.03, BetaR: 1e-8, Gamma: 2}
	sample := func(p goodput.PerfParams, local int, typ string) structs.Sample {
		return structs.Sample{
			JobID: "a", Namespace: "default", Role: structs.RoleWorker, NumWorkers: 1, GPUType: typ,
			StepTimeS: p.StepTime(1, 1, float64(local), 0), CPUS: p.ComputeTime(float64(local)), LocalBatchSize: int64(local),
		}
	}
	var smps []structs.Sample
	for _, local := range []int{32, 64, 128, 256} {
		smps = append(smps, sample(fast, local, "A100"))
	}
	s.Ingest(smps)
	s.Observe(key, &structs.Placement{Namespace: "default", JobID: "a", NumWorkers: 1, Nodes: []*structs.NodeTasks{{NodeID: nodes[0].ID, Workers: 1}}}, nil)
	smps = smps[:0]
	for _, local := range []int{32, 64, 128, 256} {
		smps = append(smps, sample(slow, local, ""))
	}
	s.Ingest(smps)
	// Off every known node: no type.
	s.Observe(key, &structs.Placement{Namespace: "default", JobID: "a", NumWorkers: 1, Nodes: []*structs.NodeTasks{{NodeID: "gone", Workers: 1}}}, nil)
	s.Ingest([]structs.Sample{sample(slow, 512, "")})

	pj := s.Snapshot(nodes, 0).jobs[0].job
	must.MapLen(t, 2, pj.PerfByType)
	a100, t4 := pj.PerfByType["A100"], pj.PerfByType["Tesla T4"]
	must.NotNil(t, a100)
	must.NotNil(t, t4)
	must.Eq(t, 4, a100.Points)
	must.Eq(t, 4, t4.Points, must.Sprint("the sample on the unknown node has no type"))
	must.Eq(t, 5, pj.Perf.Points, must.Sprint("the untyped model takes every sample, averaging the types at the same configuration"))
	for _, local := range []float64{32, 256} {
		must.Less(t, 0.05, math.Abs(a100.Params.ComputeTime(local)/fast.ComputeTime(local)-1), must.Sprintf("A100 at %v", local))
		must.Less(t, 0.05, math.Abs(t4.Params.ComputeTime(local)/slow.ComputeTime(local)-1), must.Sprintf("T4 at %v", local))
	}
}

// TestSet_OneTypeFitsOnce checks that while every sample of a job is of
// one GPU type, its typed and untyped throughput models, which then hold
// the same measurements, are one fit, made once; and that a sample of no
// type makes them two fits again.
func TestSet_OneTypeFitsOnce(t *testing.T) {
	h := planner.NewHarness(t)
	nodes := h.AddNodes("a", 1, 32000, 65536, 4)
	s := New(pollux.New(), Options{ProfileConfigs: -1})
	j := planner.MockAllReduceJob("a", structs.Bounds{Min: 1, Max: 8}, &structs.BatchSize{Min: 32, Max: 4096, MinLocal: 32, MaxLocal: 256})
	must.NoError(t, s.Register(j))
	p := goodput.PerfParams{AlphaC: 0.01, BetaC: 0.0004, AlphaN: 0.1, BetaN: 0.002, AlphaR: 0.03, BetaR: 1e-8, Gamma: 2}
	var smps []structs.Sample
	var pts []goodput.Point
	for _, local := range []int{32, 64, 128} {
		smp := structs.Sample{
			JobID: "a", Namespace: "default", Role: structs.RoleWorker, NumWorkers: 1, GPUType: "A100",
			StepTimeS: p.StepTime(1, 1, float64(local), 0), CPUS: p.ComputeTime(float64(local)), LocalBatchSize: int64(local),
		}
		smps = append(smps, smp)
		pts = append(pts, goodput.Point{Nodes: 1, Replicas: 1, Local: float64(local), StepTime: smp.StepTimeS, ComputeTime: smp.CPUS})
	}
	s.Ingest(smps)
	pj := s.Snapshot(nodes, 0).jobs[0].job
	must.MapLen(t, 1, pj.PerfByType)
	must.True(t, pj.Perf == pj.PerfByType["A100"], must.Sprint("one type: one fit"))
	want, err := goodput.FitPerf(pts)
	must.NoError(t, err)
	must.Eq(t, want, pj.Perf)

	untyped := smps[0]
	untyped.GPUType, untyped.LocalBatchSize = "", 256
	untyped.StepTimeS, untyped.CPUS = p.StepTime(1, 1, 256, 0), p.ComputeTime(256)
	s.Ingest([]structs.Sample{untyped})
	pj = s.Snapshot(nodes, 0).jobs[0].job
	must.Eq(t, 4, pj.Perf.Points)
	must.Eq(t, want, pj.PerfByType["A100"], must.Sprint("the typed fit keeps its points"))
}

// typed is pollux that places by GPU type.
type typed struct{ planner.Algorithm }

func (typed) Capabilities() planner.Capabilities { return planner.Capabilities{GPUTypes: true} }

// TestSet_TypeProfileRequests checks that new jobs are asked for once,
// only those still active, and only under an algorithm that plans by GPU
// type.
func TestSet_TypeProfileRequests(t *testing.T) {
	s := New(typed{pollux.New()}, Options{ProfileConfigs: -1})
	a := planner.MockAllReduceJob("a", structs.Bounds{Min: 1, Max: 2}, nil)
	b := planner.MockAllReduceJob("b", structs.Bounds{Min: 1, Max: 2}, nil)
	must.NoError(t, s.Register(a))
	must.NoError(t, s.Register(b))
	s.Complete(a.Key())
	must.Eq(t, []structs.JobKey{b.Key()}, s.TypeProfileRequests())
	must.SliceEmpty(t, s.TypeProfileRequests(), must.Sprint("once per job"))

	s = New(pollux.New(), Options{ProfileConfigs: -1})
	must.NoError(t, s.Register(a))
	must.SliceEmpty(t, s.TypeProfileRequests(), must.Sprint("pollux plans without types"))
	s.SetAlgorithm(typed{pollux.New()})
	must.SliceEmpty(t, s.TypeProfileRequests(), must.Sprint("a job registered under pollux is not profiled later"))
}

// TestSet_RestartCost checks that a start's cost is measured from the
// placement running to the start of the first step reported there, by
// the chief, averaged over starts, and that a step across the start does
// not count.
func TestSet_RestartCost(t *testing.T) {
	s := New(pollux.New(), Options{ProfileConfigs: -1})
	j := planner.MockAllReduceJob("a", structs.Bounds{Min: 1, Max: 4}, nil)
	must.NoError(t, s.Register(j))
	key := j.Key()
	at := func(sec float64) int64 { return int64(sec * 1e9) }
	run := func(workers int, since float64) {
		p := &structs.Placement{Namespace: "default", JobID: "a", NumWorkers: workers, Nodes: []*structs.NodeTasks{{NodeID: "n", Workers: workers}}}
		s.Observe(key, p, &structs.Change{Target: p, Phase: structs.ChangeDone, Since: at(since)})
	}
	step := func(end, took float64, rank int) structs.Sample {
		return structs.Sample{JobID: "a", Namespace: "default", Role: structs.RoleWorker, Rank: rank, NumWorkers: 1, StepTimeS: took, Time: at(end)}
	}
	cost := func() float64 { return s.Snapshot(nil, 0).jobs[0].job.RestartCost }

	run(1, 100)
	s.Ingest([]structs.Sample{step(90, 1, 0), step(150, 2, 1)})
	must.Eq(t, 0.0, cost(), must.Sprint("a step before the start and another rank's do not count"))
	s.Ingest([]structs.Sample{step(152, 2, 0), step(160, 2, 0)})
	must.Eq(t, 50.0, cost(), must.Sprint("the first step began 50 s after the placement ran"))

	run(2, 1000)
	s.Ingest([]structs.Sample{step(1251, 1, 0)})
	must.Eq(t, 150.0, cost(), must.Sprint("(50 + 250) / 2"))
}

// TestSet_TypeProfileHold checks that a job held for profiling by GPU
// type waits, unplaced and saying why, until its first typed model,
// or until the hold ends; and that a profiling run's samples are no
// progress of the job.
func TestSet_TypeProfileHold(t *testing.T) {
	nodes := planner.NewHarness(t).AddNodes("t4", 1, 32000, 65536, 2)
	nodes[0].Devices[0].Name = "Tesla T4"
	s := New(typed{pollux.New()}, Options{ProfileConfigs: -1})
	a := planner.MockAllReduceJob("a", structs.Bounds{Min: 1, Max: 2}, nil)
	b := planner.MockAllReduceJob("b", structs.Bounds{Min: 1, Max: 2}, nil)
	must.NoError(t, s.Register(a))
	must.NoError(t, s.Register(b))
	sec := func(x float64) int64 { return int64(x * 1e9) }
	for _, key := range s.TypeProfileRequests() {
		s.HoldForTypes(key, sec(70))
	}

	r := s.Snapshot(nodes, sec(11))
	must.SliceEmpty(t, r.jobs, must.Sprint("both wait for a model"))
	must.SliceLen(t, 2, r.keep)
	for _, p := range r.keep {
		must.True(t, p.Paused())
		must.StrContains(t, p.Reason, "waiting for its first speed measurement on a GPU type")
	}

	s.Ingest([]structs.Sample{{
		JobID: "a", Namespace: "default", Role: structs.RoleWorker, NumWorkers: 1, GPUType: "Tesla T4", Profile: true,
		StepTimeS: 0.5, CPUS: 0.5, LocalBatchSize: 32, BatchSize: 32, Time: sec(12),
	}})
	r = s.Snapshot(nodes, sec(13))
	must.SliceLen(t, 1, r.jobs)
	must.Eq(t, "a", r.jobs[0].job.Job.ID, must.Sprint("a has a model of the T4"))
	must.NotNil(t, r.jobs[0].job.PerfByType["Tesla T4"])
	must.Eq(t, 0, r.jobs[0].job.Step, must.Sprint("a profiling run is no progress"))
	must.SliceLen(t, 1, r.keep)

	r = s.Snapshot(nodes, sec(70))
	must.SliceLen(t, 2, r.jobs, must.Sprint("b is planned once the hold ends, model or not"))
	must.SliceEmpty(t, r.keep)
}
