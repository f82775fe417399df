package state

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"
)

func mockJob(id string) *structs.Job {
	j := structs.MockJob()
	j.ID = id
	j.Canonicalize()
	return j
}

func newStore(t *testing.T, ids ...string) *Store {
	s, err := New()
	must.NoError(t, err)
	for i, id := range ids {
		register(t, s, uint64(i+1), mockJob(id), true)
	}
	return s
}

// register registers job at index and returns what the store did.
func register(t *testing.T, s *Store, index uint64, job *structs.Job, mustBeNew bool) Registration {
	t.Helper()
	reg, err := s.RegisterJob(index, int64(index), job, mustBeNew, true)
	must.NoError(t, err)
	return reg
}

func placement(id string, workers int) *structs.Placement {
	return &structs.Placement{
		Namespace: structs.DefaultNamespace, JobID: id, NumWorkers: workers,
		Nodes: []*structs.NodeTasks{{NodeID: "n1", Workers: workers}},
	}
}

func observed(p *structs.Placement, c *structs.Change) *structs.Observed {
	return &structs.Observed{Namespace: p.Namespace, JobID: p.JobID, Placement: p, Change: c}
}

// TestPlacements_HistoryPerJob: the history records what ran, as observed,
// once per change, bounded per job.
func TestPlacements_HistoryPerJob(t *testing.T) {
	s := newStore(t, "a", "ab")
	idx := uint64(10)
	for w := 1; w <= MaxPlacements+5; w++ {
		idx++
		must.NoError(t, s.UpsertObserved(idx, 0, []*structs.Observed{observed(placement("a", w), nil), observed(placement("ab", 1), nil)}))
	}
	hist, err := Placements(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.SliceLen(t, MaxPlacements, hist, must.Sprint("history is bounded, and job ab's rows are not job a's"))
	must.Eq(t, MaxPlacements+5, hist[0].Placement.NumWorkers, must.Sprint("newest first"))
	hist, err = Placements(s.Txn(), nil, structs.DefaultNamespace, "ab")
	must.NoError(t, err)
	must.SliceLen(t, 1, hist, must.Sprint("an unchanged placement is recorded once"))

	job, err := JobByID(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, structs.JobStatusRunning, job.Status)

	must.NoError(t, s.StopJob(idx+1, 0, structs.DefaultNamespace, "a", true))
	hist, err = Placements(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.SliceEmpty(t, hist)
	o, err := ObservedOf(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Nil(t, o, must.Sprint("purged with the job"))
	hist, err = Placements(s.Txn(), nil, structs.DefaultNamespace, "ab")
	must.NoError(t, err)
	must.SliceLen(t, 1, hist, must.Sprint("purging a keeps ab"))
}

// TestApplyDecision_OnlyChanges: a decision stores each job's desired
// placement; the plan in force is a view of them; a decision changes
// neither the history nor the status, which follow what runs.
func TestApplyDecision_OnlyChanges(t *testing.T) {
	s := newStore(t, "a", "b")
	must.NoError(t, s.ApplyDecision(10, 100, "drf", []*structs.Placement{placement("a", 2), placement("b", 1)}, nil))
	must.NoError(t, s.ApplyDecision(11, 200, "drf", []*structs.Placement{placement("b", 3)}, nil))
	plan, err := LatestPlan(s.Txn(), nil)
	must.NoError(t, err)
	must.Eq(t, uint64(11), plan.Index)
	must.SliceLen(t, 2, plan.Placements)
	must.Eq(t, 2, plan.Placements[0].NumWorkers)
	must.Eq(t, 3, plan.Placements[1].NumWorkers)
	d, err := Desired(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, uint64(10), d.PlanIndex, must.Sprint("a's placement did not change at 11"))

	hist, err := Placements(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.SliceEmpty(t, hist, must.Sprint("nothing ran yet"))
	job, err := JobByID(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, structs.JobStatusPending, job.Status)

	must.NoError(t, s.StopJob(12, 0, structs.DefaultNamespace, "b", false))
	plan, err = LatestPlan(s.Txn(), nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, plan.Placements, must.Sprint("the plan in force holds active jobs only"))
}

// TestObserved_Lifecycle follows a job through what its driver reports:
// waiting, placed, a rescale in flight, the rescale aborted.
func TestObserved_Lifecycle(t *testing.T) {
	s := newStore(t, "a")
	paused := &structs.Placement{Namespace: structs.DefaultNamespace, JobID: "a", Reason: "waiting: no room"}
	must.NoError(t, s.ApplyDecision(5, 0, "drf", []*structs.Placement{paused}, nil))
	job, err := JobByID(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, structs.JobStatusPending, job.Status)
	evs, err := Events(s.Txn(), nil, 1)
	must.NoError(t, err)
	must.SliceLen(t, 1, evs)
	must.Eq(t, structs.EventJobWaiting, evs[0].Type)
	must.Eq(t, "waiting: no room", evs[0].Message)

	two := placement("a", 2)
	must.NoError(t, s.ApplyDecision(6, 0, "drf", []*structs.Placement{two}, nil))
	must.NoError(t, s.UpsertObserved(7, 0, []*structs.Observed{observed(two, &structs.Change{Target: two, PlanIndex: 6, Phase: structs.ChangeDone})}))
	evs, err = Events(s.Txn(), nil, 2)
	must.NoError(t, err)
	must.Eq(t, structs.EventJobPlaced, evs[0].Type)
	job, err = JobByID(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, structs.JobStatusRunning, job.Status)
	hist, err := Placements(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, uint64(6), hist[0].PlanIndex, must.Sprint("the history names the decision that asked for it"))

	four := placement("a", 4)
	must.NoError(t, s.UpsertObserved(8, 0, []*structs.Observed{observed(two, &structs.Change{Target: four, PlanIndex: 8, Phase: structs.ChangeCheckpointing})}))
	job, err = JobByID(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, structs.JobStatusRescaling, job.Status)

	must.NoError(t, s.UpsertObserved(9, 0, []*structs.Observed{observed(two, &structs.Change{Target: four, PlanIndex: 8, Phase: structs.ChangeAborted, Message: "no checkpoint"})}))
	job, err = JobByID(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, structs.JobStatusRunning, job.Status)
	hist, err = Placements(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.SliceLen(t, 1, hist, must.Sprint("an aborted change never ran"))
	o, err := ObservedOf(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, 2, o.Placement.NumWorkers)
	must.Eq(t, structs.ChangeAborted, o.Change.Phase)

	// A worker ends with no change on its way: its loss is no rescale.
	must.NoError(t, s.UpsertObserved(10, 0, []*structs.Observed{observed(placement("a", 1), &structs.Change{Target: four, PlanIndex: 8, Phase: structs.ChangeAborted, Message: "no checkpoint"})}))
	evs, err = Events(s.Txn(), nil, 2)
	must.NoError(t, err)
	lost := evs[len(evs)-1]
	must.Eq(t, structs.EventTasksLost, lost.Type)
	must.Eq(t, "0 ps and 1 worker run on 1 node, short of the decision's 0 ps and 2 workers: tasks ended or their nodes went away", lost.Message)
}

// TestObserved_FinishedTasksAreNotLost: tasks that finished their work
// (the job is ending) leave fewer tasks running than decided, and that is
// no TasksLost; tasks missing beyond those that finished are.
func TestObserved_FinishedTasksAreNotLost(t *testing.T) {
	s := newStore(t, "a")
	two := placement("a", 2)
	must.NoError(t, s.ApplyDecision(5, 0, "drf", []*structs.Placement{two}, nil))
	must.NoError(t, s.UpsertObserved(6, 0, []*structs.Observed{observed(two, &structs.Change{Target: two, PlanIndex: 5, Phase: structs.ChangeDone})}))

	one := placement("a", 1)
	one.Finished = &structs.Shape{Workers: 1}
	must.NoError(t, s.UpsertObserved(7, 0, []*structs.Observed{observed(one, &structs.Change{Target: two, PlanIndex: 5, Phase: structs.ChangeDone})}))
	evs, err := Events(s.Txn(), nil, 1)
	must.NoError(t, err)
	last := evs[len(evs)-1]
	must.Eq(t, structs.EventTasksFinished, last.Type)
	must.Eq(t, "0 ps and 1 worker run on 1 node; the others of the decision's 0 ps and 2 workers finished their work (0 ps and 1 worker): the job is ending", last.Message)

	// Of three decided, one finished and one is missing: that one is lost.
	three := placement("a", 3)
	must.NoError(t, s.ApplyDecision(8, 0, "drf", []*structs.Placement{three}, nil))
	must.NoError(t, s.UpsertObserved(9, 0, []*structs.Observed{observed(three, &structs.Change{Target: three, PlanIndex: 8, Phase: structs.ChangeDone})}))
	must.NoError(t, s.UpsertObserved(10, 0, []*structs.Observed{observed(one, &structs.Change{Target: three, PlanIndex: 8, Phase: structs.ChangeDone})}))
	evs, err = Events(s.Txn(), nil, 1)
	must.NoError(t, err)
	must.Eq(t, structs.EventTasksLost, evs[len(evs)-1].Type)
}

func TestAppendSamples_BoundedAndActiveOnly(t *testing.T) {
	s := newStore(t, "a")
	var batch []structs.Sample
	for i := range 3 * MaxSamples {
		batch = append(batch, structs.Sample{JobID: "a", Step: int64(i)})
	}
	batch = append(batch, structs.Sample{JobID: "unknown", Step: 1})
	res, err := s.AppendSamples(5, batch, 42, true)
	must.NoError(t, err)
	must.Eq(t, Appended{Kept: 3 * MaxSamples}, res)
	js, err := Samples(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.LessEq(t, MaxSamples, len(js.Samples))
	must.Greater(t, MaxSamples/2, len(js.Samples))
	must.Eq(t, 0, js.Samples[0].Step, must.Sprint("the oldest sample survives thinning"))
	must.Eq(t, int64(3*MaxSamples-1), js.Samples[len(js.Samples)-1].Step)
	must.Eq(t, int64(3*MaxSamples), js.Received)
	cursor, err := Cursor(s.Txn(), MetricsCursor)
	must.NoError(t, err)
	must.Eq(t, 42, cursor)
	for i := 1; i < len(js.Samples); i++ {
		must.Less(t, js.Samples[i].Step, js.Samples[i-1].Step)
	}
}

// TestAppendSamples_Tasks: samples of tasks other than the chief keep
// the latest of each task, by role and rank, out of the job's history; an
// older one, or one of a rank beyond the job's bounds, is not kept.
func TestAppendSamples_Tasks(t *testing.T) {
	s := newStore(t, "a")
	job, err := JobByID(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	maxW, maxPS := job.Elastic.Workers.Max, job.Elastic.ParameterServers.Max
	smp := func(role string, rank int, at int64) structs.Sample {
		return structs.Sample{JobID: "a", Role: role, Rank: rank, Time: at, TaskStepTimeS: float64(at)}
	}
	res, err := s.AppendSamples(5, []structs.Sample{
		smp(structs.RoleWorker, 0, 10), smp(structs.RoleWorker, 1, 10), smp(structs.RolePS, 0, 10),
		smp(structs.RoleWorker, 1, 20), smp(structs.RoleWorker, 1, 15), smp("", 1, 12),
		smp(structs.RoleWorker, maxW, 30), smp(structs.RolePS, maxPS, 30),
	}, 0, true)
	must.NoError(t, err)
	must.Eq(t, Appended{Kept: 4}, res)
	js, err := Samples(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, []structs.Sample{smp(structs.RoleWorker, 0, 10)}, js.Samples)
	must.Eq(t, 1, js.Received)
	must.Eq(t, []structs.Sample{smp(structs.RolePS, 0, 10), smp(structs.RoleWorker, 1, 20)}, js.Tasks)

	// The stored row is not changed under its readers.
	_, err = s.AppendSamples(6, []structs.Sample{smp(structs.RolePS, 0, 40)}, 0, true)
	must.NoError(t, err)
	must.Eq(t, 10, js.Tasks[0].Time)
}

// TestAppendSamples_Once: a sample whose job, task, step, time and
// configuration are stored already, or repeated within its batch, counts as
// repeated and is stored once; the same step at another time (a step
// trained again after a restart from a checkpoint), or at the same time in
// another configuration (a profiler's measurements: task counts, GPU type,
// per-GPU batch), is a new sample. Without once, as servers
// before 0.2.0 apply SampleBatchType, repeats are stored again.
func TestAppendSamples_Once(t *testing.T) {
	chief := func(step, at int64) structs.Sample { return structs.Sample{JobID: "a", Step: step, Time: at} }
	worker := func(step, at int64) structs.Sample { return structs.Sample{JobID: "a", Rank: 1, Step: step, Time: at} }
	first := []structs.Sample{chief(1, 10), chief(2, 20), worker(2, 20)}
	profiled := chief(3, 30)
	profiled.NumWorkers = 4
	// A profile of two GPU types at two batches, all at step 0 of one
	// instant, is four samples; the last repeats the first.
	typed := func(typ string, local int64) structs.Sample {
		smp := chief(0, 30)
		smp.GPUType, smp.LocalBatchSize, smp.NumWorkers = typ, local, 1
		return smp
	}
	retry := []structs.Sample{chief(1, 10), chief(2, 20), worker(2, 20), chief(3, 30), chief(3, 30), chief(2, 25), profiled,
		typed("T4", 32), typed("T4", 64), typed("A100", 32), typed("A100", 64), typed("T4", 32)}
	for _, tc := range []struct {
		once     bool
		want     Appended
		received int64
	}{
		{once: true, want: Appended{Kept: 7, Repeated: 5}, received: 9},
		{once: false, want: Appended{Kept: 12}, received: 13},
	} {
		t.Run(fmt.Sprint("once=", tc.once), func(t *testing.T) {
			s := newStore(t, "a")
			res, err := s.AppendSamples(5, first, 0, tc.once)
			must.NoError(t, err)
			must.Eq(t, Appended{Kept: 3}, res)
			res, err = s.AppendSamples(6, retry, 0, tc.once)
			must.NoError(t, err)
			must.Eq(t, tc.want, res)
			js, err := Samples(s.Txn(), nil, structs.DefaultNamespace, "a")
			must.NoError(t, err)
			must.Eq(t, tc.received, js.Received)
			must.Eq(t, 30, js.Newest, must.Sprint("the latest chief sample's time"))
			must.SliceLen(t, int(tc.received), js.Samples)
			must.Eq(t, []structs.Sample{worker(2, 20)}, js.Tasks)
		})
	}
}

// TestAppendSamples_RowWithoutNewest: a row written before rows kept
// their latest sample time (Newest 0) is looked through for it, so that a
// repeat of its latest sample is still found, and the row keeps it from
// then on.
func TestAppendSamples_RowWithoutNewest(t *testing.T) {
	s := newStore(t, "a")
	job, err := JobByID(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	chief := func(step, at int64) structs.Sample { return structs.Sample{JobID: "a", Step: step, Time: at} }
	old := &structs.JobSamples{Namespace: structs.DefaultNamespace, JobID: "a", Run: job.CreateIndex, Samples: []structs.Sample{chief(3, 30), chief(1, 10)}, Received: 2}
	must.NoError(t, s.write(5, func(w *writer) error { return w.insert(TableSamples, old) }))
	res, err := s.AppendSamples(6, []structs.Sample{chief(2, 20), chief(3, 30)}, 0, true)
	must.NoError(t, err)
	must.Eq(t, Appended{Kept: 1, Repeated: 1}, res)
	js, err := Samples(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, 30, js.Newest)
}

// TestHeldSamples_HashesOnlyOlder: the batch's repeats are found by
// hashing the job's history only when a sample is not later than every
// sample it holds, which a trainer's steady reports always are.
func TestHeldSamples_HashesOnlyOlder(t *testing.T) {
	held := []structs.Sample{{Step: 1, Time: 10}, {Step: 2, Time: 20}}
	for _, tc := range []struct {
		name   string
		batch  []structs.Sample
		added  []bool
		hashed bool
	}{
		{name: "later", batch: []structs.Sample{{Step: 3, Time: 30}, {Step: 4, Time: 40}}, added: []bool{true, true}},
		{name: "repeat in batch", batch: []structs.Sample{{Step: 3, Time: 30}, {Step: 3, Time: 30}}, added: []bool{true, false}},
		{name: "repeat of held", batch: []structs.Sample{{Step: 2, Time: 20}, {Step: 3, Time: 30}}, added: []bool{false, true}, hashed: true},
		{name: "other configuration at the newest time", batch: []structs.Sample{{Step: 2, Time: 20, NumWorkers: 4}}, added: []bool{true}, hashed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHeldSamples(held, 20)
			var added []bool
			for _, smp := range tc.batch {
				added = append(added, h.add(idOf(&smp)))
			}
			must.Eq(t, tc.added, added)
			must.Eq(t, tc.hashed, h.ids != nil, must.Sprint("hashed the history"))
		})
	}
}

func TestBlockingQuery(t *testing.T) {
	s := newStore(t, "a")
	current := func() *Store { return s }
	jobs := func(txn *memdb.Txn, ws memdb.WatchSet) (any, uint64, error) {
		js, err := Jobs(txn, ws, "")
		return len(js), IndexOf(txn, TableJobs), err
	}

	// An index below the current one returns at once.
	res, idx, err := BlockingQuery(context.Background(), current, 0, time.Minute, jobs)
	must.NoError(t, err)
	must.Eq(t, 1, res)
	must.Eq(t, 1, idx)

	// At the current index it waits for a write.
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, idx, err = BlockingQuery(context.Background(), current, 1, time.Minute, jobs)
	}()
	register(t, s, 7, mockJob("b"), true)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("blocking query did not return after a write")
	}
	must.NoError(t, err)
	must.Eq(t, 2, res)
	must.Eq(t, 7, idx)

	// Without a write it returns the same result when the wait is over.
	res, idx, err = BlockingQuery(context.Background(), current, 7, 50*time.Millisecond, jobs)
	must.NoError(t, err)
	must.Eq(t, 2, res)
	must.Eq(t, 7, idx)
}

func TestEvents_BlockingQueryWakes(t *testing.T) {
	s := newStore(t, "a")
	current := func() *Store { return s }
	events := func(txn *memdb.Txn, ws memdb.WatchSet) (any, uint64, error) {
		evs, err := Events(txn, ws, 1)
		if len(evs) == 0 {
			return evs, 1, err
		}
		return evs, evs[len(evs)-1].Seq, err
	}
	done := make(chan []*structs.Event)
	go func() {
		res, _, _ := BlockingQuery(context.Background(), current, 1, time.Minute, events)
		done <- res.([]*structs.Event)
	}()
	register(t, s, 9, mockJob("b"), true)
	select {
	case evs := <-done:
		must.SliceLen(t, 1, evs)
		must.Eq(t, "b", evs[0].JobID)
	case <-time.After(10 * time.Second):
		t.Fatal("a blocking query on events did not wake for a new event")
	}
}

func TestEvents_AfterSeq(t *testing.T) {
	s := newStore(t, "a", "b", "c")
	evs, err := Events(s.Txn(), nil, 1)
	must.NoError(t, err)
	must.SliceLen(t, 2, evs)
	must.Eq(t, 2, evs[0].Seq)
	must.Eq(t, "b", evs[0].JobID)
}

func TestEvents_Bounded(t *testing.T) {
	s := newStore(t)
	for i := range MaxEvents + 10 {
		must.NoError(t, s.AppendEvent(uint64(i+1), &structs.Event{Type: structs.EventAlgorithmFallback}))
	}
	evs, err := Events(s.Txn(), nil, 0)
	must.NoError(t, err)
	must.SliceLen(t, MaxEvents, evs)
	must.Eq(t, 11, evs[0].Seq)
	must.Eq(t, MaxEvents+10, evs[len(evs)-1].Seq)
}

// TestRegisterJob_Idempotent registers the same spec again, as "caravan job
// run" of an unchanged file does: an active job stores nothing new, an
// ended one starts a new version.
func TestRegisterJob_Idempotent(t *testing.T) {
	s := newStore(t, "a")
	tables := []string{TableJobs, TableVersions, TableEvents}
	versions := func() []*structs.Job {
		vs, err := JobVersions(s.Txn(), nil, structs.DefaultNamespace, "a")
		must.NoError(t, err)
		return vs
	}
	events := func() int {
		evs, err := Events(s.Txn(), nil, 0)
		must.NoError(t, err)
		return len(evs)
	}

	for _, mustBeNew := range []bool{false, true} {
		again := mockJob("a")
		again.SubmitTime = 42 // stamped anew by every request
		must.Eq(t, Registration{Version: 0, Unchanged: true}, register(t, s, 5, again, mustBeNew))
		must.Eq(t, 1, s.Index(tables...), must.Sprint("no table index moved"))
		must.SliceLen(t, 1, versions())
		must.Eq(t, 1, events())
	}

	changed := mockJob("a")
	changed.Elastic.Workers.Max = 16
	changed.Training.GlobalBatchSize = 512
	_, err := s.RegisterJob(6, 6, changed, true, true)
	must.ErrorIs(t, err, ErrJobExists)
	must.Eq(t, Registration{Version: 1}, register(t, s, 7, changed, false))
	must.Eq(t, 7, s.Index(tables...))
	must.SliceLen(t, 2, versions())
	must.Eq(t, 2, events())

	// A running job keeps its status, and its spec is compared with the
	// new version's, not the first.
	must.NoError(t, s.UpsertObserved(8, 0, []*structs.Observed{observed(placement("a", 2), nil)}))
	must.Eq(t, Registration{Version: 1, Unchanged: true}, register(t, s, 9, changed.Copy(), false))
	job, err := JobByID(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, structs.JobStatusRunning, job.Status)
	must.Eq(t, 8, job.ModifyIndex)

	// A stopped job registered with the same spec runs again as a new
	// version.
	must.NoError(t, s.StopJob(10, 10, structs.DefaultNamespace, "a", false))
	must.Eq(t, Registration{Version: 2}, register(t, s, 11, changed.Copy(), true))
	job, err = JobByID(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, structs.JobStatusPending, job.Status)
	must.Eq(t, 2, job.Version)
	must.Eq(t, 11, job.CreateIndex)
	must.SliceLen(t, 3, versions())
}

// TestRegisterJob_NewRunForgets: a job that ended and is registered again
// starts a new run: what was decided for and ran of the last run is gone.
func TestRegisterJob_NewRunForgets(t *testing.T) {
	s := newStore(t, "a")
	two := placement("a", 2)
	must.NoError(t, s.ApplyDecision(2, 0, "drf", []*structs.Placement{two}, nil))
	must.NoError(t, s.UpsertObserved(3, 0, []*structs.Observed{observed(two, &structs.Change{Target: two, Phase: structs.ChangeStarting})}))
	must.NoError(t, s.StopJob(4, 0, structs.DefaultNamespace, "a", false))
	_, err := s.RegisterJob(5, 0, mockJob("a"), true, true)
	must.NoError(t, err)
	d, err := Desired(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Nil(t, d)
	o, err := ObservedOf(s.Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Nil(t, o)
}

// TestApplyDecision_ActionEvents: the task actions of a decision that
// changes a job's placement become events with their reasons; the same
// placement again records nothing.
func TestApplyDecision_ActionEvents(t *testing.T) {
	s := newStore(t, "a")
	pl := placement("a", 3)
	pl.Actions = []*structs.TaskAction{
		{Kind: structs.ActionStragglerReplaced, Role: structs.RoleWorker, Rank: 2, NodeID: "n2", Reason: "worker 2 is slow: moved from n2 to n1",
			Details: map[string]string{"From": "n2", "To": "n1"}},
		{Kind: structs.ActionOOMResized, Role: structs.RoleWorker, Rank: 0, NodeID: "n1", Reason: "OOM: double memory"},
		{Kind: structs.ActionHotPSReplaced, Role: structs.RolePS, Rank: 1, Reason: "hot"},
	}
	must.NoError(t, s.ApplyDecision(10, 100, "dlrover", []*structs.Placement{pl}, nil))
	evs, err := Events(s.Txn(), nil, 1)
	must.NoError(t, err)
	must.SliceLen(t, 3, evs)
	must.Eq(t, structs.EventStragglerReplaced, evs[0].Type)
	must.Eq(t, "worker 2 is slow: moved from n2 to n1", evs[0].Message)
	must.Eq(t, map[string]string{"Algorithm": "dlrover", "Kind": "straggler-replaced", "Role": "worker", "Rank": "2", "NodeID": "n2", "From": "n2", "To": "n1"}, evs[0].Details)
	must.Eq(t, structs.EventTaskResized, evs[1].Type)
	must.Eq(t, structs.EventHotPSReplaced, evs[2].Type)

	again := pl.Copy()
	again.Reason = "kept"
	must.NoError(t, s.ApplyDecision(11, 200, "dlrover", []*structs.Placement{again}, nil))
	evs, err = Events(s.Txn(), nil, 1)
	must.NoError(t, err)
	must.SliceLen(t, 3, evs, must.Sprint("no new events for the same tasks"))
}
