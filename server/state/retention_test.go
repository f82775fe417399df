package state

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

const ns = structs.DefaultNamespace

// TestCollectJobs: the collector's purge deletes a job that ended and did
// not change since it was found, with every row kept about it, and leaves
// a job that is active, was registered again, changed, or is gone.
func TestCollectJobs(t *testing.T) {
	s := newStore(t, "done", "again", "active", "other") // indexes 1-4
	for _, id := range []string{"done", "again", "other"} {
		must.NoError(t, s.UpsertObserved(5, 5, []*structs.Observed{observed(placement(id, 1), nil)}))
		_, err := s.AppendSamples(6, []structs.Sample{{JobID: id, Step: 1}}, 0, true)
		must.NoError(t, err)
		must.NoError(t, s.ApplyDecision(7, 7, "fifo", []*structs.Placement{placement(id, 1)}, []*structs.JobModel{{Namespace: ns, JobID: id}}))
	}
	must.NoError(t, s.UpdateJobStatus(10, 100, ns, "done", structs.JobStatusComplete, "converged"))
	must.NoError(t, s.UpdateJobStatus(11, 110, ns, "again", structs.JobStatusFailed, "tasks failed"))
	must.NoError(t, s.UpdateJobStatus(12, 120, ns, "other", structs.JobStatusComplete, "converged"))
	found := func(id string) Collectable {
		j, err := JobByID(s.Txn(), nil, ns, id)
		must.NoError(t, err)
		must.NotNil(t, j)
		return Collectable{Namespace: ns, JobID: id, ModifyIndex: j.ModifyIndex}
	}
	done, again, active, other := found("done"), found("again"), found("active"), found("other")
	must.Eq(t, 10, done.ModifyIndex)

	// Between the collector's look and the apply: "again" is registered
	// anew, and "other"'s record changes (as a rejection would rewrite it).
	register(t, s, 13, mockJob("again"), true)
	must.NoError(t, s.RejectJob(14, 140, ns, "other", "other", 3, "invalid"))

	n, err := s.CollectJobs(20, []Collectable{done, again, active, other, {Namespace: ns, JobID: "gone", ModifyIndex: 1}})
	must.NoError(t, err)
	must.Eq(t, 1, n)

	txn := s.Txn()
	j, err := JobByID(txn, nil, ns, "done")
	must.NoError(t, err)
	must.Nil(t, j)
	vs, err := JobVersions(txn, nil, ns, "done")
	must.NoError(t, err)
	must.SliceEmpty(t, vs)
	hist, err := Placements(txn, nil, ns, "done")
	must.NoError(t, err)
	must.SliceEmpty(t, hist)
	smp, err := Samples(txn, nil, ns, "done")
	must.NoError(t, err)
	must.Nil(t, smp)
	m, err := Model(txn, nil, ns, "done")
	must.NoError(t, err)
	must.Nil(t, m)
	d, err := Desired(txn, nil, ns, "done")
	must.NoError(t, err)
	must.Nil(t, d)
	o, err := ObservedOf(txn, nil, ns, "done")
	must.NoError(t, err)
	must.Nil(t, o)

	for _, id := range []string{"again", "active", "other"} {
		j, err := JobByID(txn, nil, ns, id)
		must.NoError(t, err)
		must.NotNil(t, j, must.Sprintf("job %s is kept", id))
	}
	j, err = JobByID(txn, nil, ns, "again")
	must.NoError(t, err)
	must.Eq(t, structs.JobStatusPending, j.Status, must.Sprint("registered again: a new run"))
	vs, err = JobVersions(txn, nil, ns, "again")
	must.NoError(t, err)
	must.SliceLen(t, 2, vs, must.Sprint("the new run keeps the job's versions"))
}

// TestActiveJobsIndex: writes that make or change a job that has not
// ended move the active jobs' index; the collector's purge of an ended job
// moves the jobs table's index only. Without the entry (a state restored
// from an earlier version's snapshot), it is the jobs table's.
func TestActiveJobsIndex(t *testing.T) {
	s := newStore(t, "done", "running") // indexes 1-2
	index := func() (uint64, uint64) {
		txn := s.Txn()
		return ActiveJobsIndex(txn), IndexOf(txn, TableJobs)
	}
	active, jobs := index()
	must.Eq(t, 2, active)
	must.Eq(t, 2, jobs)

	must.NoError(t, s.UpdateJobStatus(3, 30, ns, "done", structs.JobStatusComplete, "converged"))
	j, err := JobByID(s.Txn(), nil, ns, "done")
	must.NoError(t, err)
	n, err := s.CollectJobs(4, []Collectable{{Namespace: ns, JobID: "done", ModifyIndex: j.ModifyIndex}})
	must.NoError(t, err)
	must.Eq(t, 1, n)
	active, jobs = index()
	must.Eq(t, 3, active, must.Sprint("the end of a job moves it; the purge of an ended one does not"))
	must.Eq(t, 4, jobs)

	must.NoError(t, s.StopJob(5, 50, ns, "running", true))
	active, jobs = index()
	must.Eq(t, 5, active, must.Sprint("purging a running job moves it"))
	must.Eq(t, 5, jobs)

	txn := s.db.Txn(true)
	_, err = txn.DeleteAll(TableIndex, "id", indexActiveJobs)
	must.NoError(t, err)
	txn.Commit()
	active, _ = index()
	must.Eq(t, 5, active, must.Sprint("without the entry, the jobs table's index"))
}

// TestJob_ModifyTime: every write of a job's record stamps the entry's
// time, which the collector ages an ended job by.
func TestJob_ModifyTime(t *testing.T) {
	s := newStore(t, "a") // registered at index 1, time 1
	modified := func() int64 {
		j, err := JobByID(s.Txn(), nil, ns, "a")
		must.NoError(t, err)
		return j.ModifyTime
	}
	must.Eq(t, 1, modified())
	must.NoError(t, s.UpsertObserved(2, 200, []*structs.Observed{observed(placement("a", 1), nil)}))
	must.Eq(t, 200, modified(), must.Sprint("pending to running"))
	must.NoError(t, s.UpdateJobStatus(3, 300, ns, "a", structs.JobStatusComplete, "converged"))
	must.Eq(t, 300, modified())
	must.NoError(t, s.UpdateJobStatus(4, 400, ns, "a", structs.JobStatusFailed, "late report"))
	must.Eq(t, 300, modified(), must.Sprint("an ended job keeps its record"))
	must.NoError(t, s.RejectJob(5, 500, ns, "b", "b", 7, "invalid"))
	j, err := JobByID(s.Txn(), nil, ns, "b")
	must.NoError(t, err)
	must.Eq(t, 500, j.ModifyTime)
}

// TestSetRetention: committed bounds replace the defaults, trim what the
// store holds at once and bound what it takes next; bounds that keep
// nothing are refused.
func TestSetRetention(t *testing.T) {
	s := newStore(t, "a", "b") // two JobRegistered events, indexes 1-2
	r, err := Retention(s.Txn(), nil)
	must.NoError(t, err)
	must.Eq(t, structs.DefaultRetention(), r)

	idx := uint64(10)
	for w := 1; w <= 20; w++ {
		idx++
		must.NoError(t, s.UpsertObserved(idx, 0, []*structs.Observed{observed(placement("a", w), nil)}))
	}
	var batch []structs.Sample
	for i := range 200 {
		batch = append(batch, structs.Sample{JobID: "a", Step: int64(i)}, structs.Sample{JobID: "b", Step: int64(i)})
	}
	_, err = s.AppendSamples(idx+1, batch, 0, true)
	must.NoError(t, err)
	evs, err := Events(s.Txn(), nil, 0)
	must.NoError(t, err)
	last := evs[len(evs)-1].Seq
	must.Greater(t, 16, len(evs))

	must.ErrorIs(t, s.SetRetention(idx+2, &structs.Retention{MaxJobSamples: 2, MaxJobPlacements: 5, MaxEvents: 8}), ErrInvalidRetention)
	must.ErrorIs(t, s.SetRetention(idx+2, &structs.Retention{MaxJobSamples: 64, MaxJobPlacements: 0, MaxEvents: 8}), ErrInvalidRetention)
	r, err = Retention(s.Txn(), nil)
	must.NoError(t, err)
	must.Eq(t, 0, r.ModifyIndex, must.Sprint("a refused change changes nothing"))

	must.NoError(t, s.SetRetention(idx+3, &structs.Retention{MaxJobSamples: 64, MaxJobPlacements: 5, MaxEvents: 8}))
	txn := s.Txn()
	r, err = Retention(txn, nil)
	must.NoError(t, err)
	must.Eq(t, &structs.Retention{MaxJobSamples: 64, MaxJobPlacements: 5, MaxEvents: 8, ModifyIndex: idx + 3}, r)
	evs, err = Events(txn, nil, 0)
	must.NoError(t, err)
	must.SliceLen(t, 8, evs, must.Sprint("trimmed to the new bound at once"))
	must.Eq(t, last, evs[7].Seq, must.Sprint("the newest are kept"))
	hist, err := Placements(txn, nil, ns, "a")
	must.NoError(t, err)
	must.SliceLen(t, 5, hist)
	must.Eq(t, 20, hist[0].Placement.NumWorkers, must.Sprint("newest first"))
	for _, id := range []string{"a", "b"} {
		js, err := Samples(txn, nil, ns, id)
		must.NoError(t, err)
		must.LessEq(t, 64, len(js.Samples))
		must.Greater(t, 32, len(js.Samples))
		must.Eq(t, 199, js.Samples[len(js.Samples)-1].Step, must.Sprint("the newest sample is kept"))
	}

	// The new bounds hold for what comes next.
	for i := range 20 {
		must.NoError(t, s.AppendEvent(idx+10+uint64(i), &structs.Event{Type: structs.EventAlgorithmFallback}))
	}
	evs, err = Events(s.Txn(), nil, 0)
	must.NoError(t, err)
	must.SliceLen(t, 8, evs)
	must.NoError(t, s.UpsertObserved(idx+40, 0, []*structs.Observed{observed(placement("a", 30), nil)}))
	hist, err = Placements(s.Txn(), nil, ns, "a")
	must.NoError(t, err)
	must.SliceLen(t, 5, hist)
	batch = batch[:0]
	for i := 200; i < 400; i++ {
		batch = append(batch, structs.Sample{JobID: "a", Step: int64(i)})
	}
	_, err = s.AppendSamples(idx+41, batch, 0, true)
	must.NoError(t, err)
	js, err := Samples(s.Txn(), nil, ns, "a")
	must.NoError(t, err)
	must.LessEq(t, 64, len(js.Samples))

	// Bounds that grow keep more from then on.
	must.NoError(t, s.SetRetention(idx+50, &structs.Retention{MaxJobSamples: 64, MaxJobPlacements: 5, MaxEvents: 12}))
	for i := range 20 {
		must.NoError(t, s.AppendEvent(idx+60+uint64(i), &structs.Event{Type: structs.EventAlgorithmFallback}))
	}
	evs, err = Events(s.Txn(), nil, 0)
	must.NoError(t, err)
	must.SliceLen(t, 12, evs)
}
