package state

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
)

// ErrJobExists is returned when a job is registered as new while a job with
// the same namespace and ID is still active.
var ErrJobExists = errors.New("job is already registered and active")

// ErrJobElsewhere is returned when a registration would change an active
// job through the other way in: a job declared in Nomad through Caravan's
// API, or a job submitted to Caravan by a Nomad job's caravan policy.
var ErrJobElsewhere = errors.New("job is managed through the other way in")

// ErrJobNotFound is returned for a job the store does not hold.
var ErrJobNotFound = errors.New("job not found")

// Store is the state store. The zero value is not usable; call New.
type Store struct {
	db *memdb.MemDB
	// abandon is closed when the store is replaced by a restore, so that
	// blocking queries on it wake up and retry on the new one.
	abandon chan struct{}
}

// New returns an empty store.
func New() (*Store, error) {
	db, err := memdb.NewMemDB(schema())
	if err != nil {
		return nil, fmt.Errorf("create state store: %w", err)
	}
	return &Store{db: db, abandon: make(chan struct{})}, nil
}

// Abandon marks the store as replaced; AbandonCh is closed.
func (s *Store) Abandon() { close(s.abandon) }

// AbandonCh is closed when the store has been replaced.
func (s *Store) AbandonCh() <-chan struct{} { return s.abandon }

// Index returns the largest Raft index of the last writes to tables, or of
// all tables when none is named.
func (s *Store) Index(tables ...string) uint64 {
	return index(s.db.Txn(false), tables...)
}

func index(txn *memdb.Txn, tables ...string) uint64 {
	var max uint64
	if len(tables) == 0 {
		it, err := txn.Get(TableIndex, "id")
		if err != nil {
			return 0
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			max = maxOf(max, raw.(*indexEntry).Value)
		}
		return max
	}
	for _, t := range tables {
		if raw, err := txn.First(TableIndex, "id", t); err == nil && raw != nil {
			max = maxOf(max, raw.(*indexEntry).Value)
		}
	}
	return max
}

func maxOf(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// write runs fn in a write transaction and commits it when fn succeeds,
// bumping the index of every table fn touched to index.
func (s *Store) write(index uint64, fn func(w *writer) error) error {
	w := &writer{txn: s.db.Txn(true), index: index, touched: map[string]bool{}}
	defer w.txn.Abort()
	if err := fn(w); err != nil {
		return err
	}
	for t := range w.touched {
		if err := w.txn.Insert(TableIndex, &indexEntry{Key: t, Value: index}); err != nil {
			return fmt.Errorf("update index of %s: %w", t, err)
		}
	}
	w.txn.Commit()
	return nil
}

// writer is one write transaction.
type writer struct {
	txn     *memdb.Txn
	index   uint64
	touched map[string]bool
	// ret is the retention bounds in force, read when first needed.
	ret *structs.Retention
}

func (w *writer) insert(table string, obj any) error {
	w.touched[table] = true
	if table == TableJobs {
		w.touched[indexActiveJobs] = true
	}
	if err := w.txn.Insert(table, obj); err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	return nil
}

func (w *writer) delete(table string, obj any) error {
	w.touched[table] = true
	if j, ok := obj.(*structs.Job); ok && table == TableJobs && !structs.Terminal(j.Status) {
		w.touched[indexActiveJobs] = true
	}
	if err := w.txn.Delete(table, obj); err != nil {
		return fmt.Errorf("delete from %s: %w", table, err)
	}
	return nil
}

// trim deletes the oldest objects of table (in its id order, under prefix
// args) beyond keep.
func (w *writer) trim(table string, keep int, args ...any) error {
	var objs []any
	it, err := w.txn.Get(table, "id"+prefixSuffix(args), args...)
	if err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		objs = append(objs, raw)
	}
	for _, obj := range objs[:max(len(objs)-keep, 0)] {
		if err := w.delete(table, obj); err != nil {
			return err
		}
	}
	return nil
}

func prefixSuffix(args []any) string {
	if len(args) > 0 {
		return "_prefix"
	}
	return ""
}

func (w *writer) event(now int64, typ, namespace, jobID, msg string, details map[string]string) error {
	var seq uint64
	if raw, err := w.txn.Last(TableEvents, "id"); err != nil {
		return fmt.Errorf("read events: %w", err)
	} else if raw != nil {
		seq = raw.(*structs.Event).Seq
	}
	ev := &structs.Event{
		Seq: seq + 1, Index: w.index, Time: now, Type: typ,
		Namespace: namespace, JobID: jobID, Message: msg, Details: details,
	}
	if err := w.insert(TableEvents, ev); err != nil {
		return err
	}
	// Sequence numbers are dense, and SetRetention trims the table to a
	// new bound, so the oldest event beyond the bound is found without
	// scanning the table.
	ret, err := w.retention()
	if err != nil {
		return err
	}
	keep := uint64(ret.MaxEvents)
	if ev.Seq <= keep {
		return nil
	}
	old, err := w.txn.First(TableEvents, "id", ev.Seq-keep)
	if err != nil || old == nil {
		return err
	}
	return w.delete(TableEvents, old)
}

// Registration is what RegisterJob did.
type Registration struct {
	// Version is the job's current version: the new one, or the one that
	// was already registered when Unchanged.
	Version uint64
	// Unchanged is true when the job was active with the same spec
	// (structs.Job.SpecChanged): nothing was stored, no event recorded and
	// no table's index moved.
	Unchanged bool
}

// RegisterJob stores a new version of job at index, with Status pending when
// the job is new or had ended. Registering an active job's spec again is
// idempotent, as Nomad's job run: it stores nothing and reports Unchanged. A
// job that has ended starts a new version even with the same spec. With
// mustBeNew it fails with ErrJobExists if an active job has the same
// namespace and ID and another spec. job must be canonical and valid, and is
// not retained: the store keeps a copy. An active job is never changed
// through the other way in (ErrJobElsewhere): a job declared in Nomad
// (Job.Nomad set) only by a Nomad registration and the other way round.
//
// A registration that starts a new run (the job is new or had ended)
// deletes what was decided for and ran of the earlier run, and, with
// fresh, its samples and models too: a run's models are fitted from its
// own samples alone. Entries of servers before 0.2.0 leave them.
func (s *Store) RegisterJob(index uint64, now int64, job *structs.Job, mustBeNew, fresh bool) (Registration, error) {
	var reg Registration
	err := s.write(index, func(w *writer) error {
		j := job.Copy()
		prev, err := jobByID(w.txn, nil, j.Namespace, j.ID)
		if err != nil {
			return err
		}
		if prev != nil && !structs.Terminal(prev.Status) && (prev.Nomad == nil) != (j.Nomad == nil) {
			where := "declared in Nomad; change it with nomad job run"
			if prev.Nomad == nil {
				where = "submitted to Caravan; change it with caravan job run"
			}
			return fmt.Errorf("register job %q: %w: it is %s", j.ID, ErrJobElsewhere, where)
		}
		if prev != nil && !structs.Terminal(prev.Status) && !prev.SpecChanged(j) {
			reg = Registration{Version: prev.Version, Unchanged: true}
			return nil
		}
		j.Status, j.StatusDescription = structs.JobStatusPending, ""
		j.CreateIndex, j.ModifyIndex, j.ModifyTime, j.Version = index, index, now, 0
		if prev != nil {
			if mustBeNew && !structs.Terminal(prev.Status) {
				return fmt.Errorf("register job %q: %w (version %d, %s)", j.ID, ErrJobExists, prev.Version, prev.Status)
			}
			j.Version = prev.Version + 1
			if !structs.Terminal(prev.Status) {
				j.Status, j.StatusDescription = prev.Status, prev.StatusDescription
				j.CreateIndex = prev.CreateIndex
			}
		}
		if j.SubmitTime == 0 {
			j.SubmitTime = now
		}
		if j.CreateIndex == index {
			// A new run: what was decided for and ran of an earlier run
			// is no longer so.
			tables := []string{TableDesired, TableObserved, TableUsage}
			if fresh {
				tables = append(tables, TableSamples, TableModels)
			}
			for _, t := range tables {
				w.touched[t] = true
				if _, err := w.txn.DeleteAll(t, "id", j.Namespace, j.ID); err != nil {
					return fmt.Errorf("start job %q anew: %w", j.ID, err)
				}
			}
		}
		if err := w.insert(TableJobs, j); err != nil {
			return err
		}
		if err := w.insert(TableVersions, j); err != nil {
			return err
		}
		reg = Registration{Version: j.Version}
		return w.event(now, structs.EventJobRegistered, j.Namespace, j.ID,
			fmt.Sprintf("registered version %d", j.Version), nil)
	})
	if err != nil {
		return Registration{}, err
	}
	return reg, nil
}

// RejectJob records that version nomadIndex of a job declared in the
// cluster was rejected, and why (desc, one error a line), with a
// JobRejected event that lists them on one line: the
// job's record becomes one with status rejected, which is terminal, so
// that `job status` answers for it and nothing plans it. The record has
// no spec (the version declared none Caravan could run) and no version
// of its own: it keeps the version number of the job's last record, and
// a later valid version registers anew over it. A job that is active is
// not rejected (ErrJobExists); the same rejection again changes nothing.
func (s *Store) RejectJob(index uint64, now int64, namespace, id, name string, nomadIndex uint64, desc string) error {
	return s.write(index, func(w *writer) error {
		prev, err := jobByID(w.txn, nil, namespace, id)
		if err != nil {
			return err
		}
		var version uint64
		if prev != nil {
			if !structs.Terminal(prev.Status) {
				return fmt.Errorf("reject job %q: %w (version %d, %s)", id, ErrJobExists, prev.Version, prev.Status)
			}
			if prev.Status == structs.JobStatusRejected && prev.Nomad != nil && prev.Nomad.JobModifyIndex == nomadIndex && prev.StatusDescription == desc {
				return nil
			}
			version = prev.Version
		}
		j := &structs.Job{
			ID: id, Name: cmp.Or(name, id), Namespace: namespace,
			Nomad:  &structs.NomadSource{JobModifyIndex: nomadIndex},
			Status: structs.JobStatusRejected, StatusDescription: desc,
			Version: version, SubmitTime: now, CreateIndex: index, ModifyIndex: index, ModifyTime: now,
		}
		if err := w.insert(TableJobs, j); err != nil {
			return err
		}
		return w.event(now, structs.EventJobRejected, namespace, id,
			fmt.Sprintf("version at cluster index %d not run by Caravan: %s", nomadIndex, strings.ReplaceAll(desc, "\n", "; ")), nil)
	})
}

// UpdateJobStatus sets the status of an active job. A job that has already
// ended keeps its status; an unknown job is ErrJobNotFound.
func (s *Store) UpdateJobStatus(index uint64, now int64, namespace, id, status, desc string) error {
	return s.write(index, func(w *writer) error {
		prev, err := jobByID(w.txn, nil, namespace, id)
		if err != nil {
			return err
		}
		if prev == nil {
			return fmt.Errorf("update job %q: %w", id, ErrJobNotFound)
		}
		if structs.Terminal(prev.Status) || prev.Status == status && prev.StatusDescription == desc {
			return nil
		}
		j := *prev
		j.Status, j.StatusDescription, j.ModifyIndex, j.ModifyTime = status, desc, index, now
		if err := w.insert(TableJobs, &j); err != nil {
			return err
		}
		typ := map[string]string{
			structs.JobStatusComplete: structs.EventJobCompleted,
			structs.JobStatusFailed:   structs.EventJobFailed,
			structs.JobStatusStopped:  structs.EventJobStopped,
		}[status]
		if typ == "" {
			return nil
		}
		return w.event(now, typ, namespace, id, desc, nil)
	})
}

// StopJob marks a job stopped, or with purge deletes it and everything kept
// about it.
func (s *Store) StopJob(index uint64, now int64, namespace, id string, purge bool) error {
	if !purge {
		return s.UpdateJobStatus(index, now, namespace, id, structs.JobStatusStopped, "stopped by a user")
	}
	return s.write(index, func(w *writer) error {
		prev, err := jobByID(w.txn, nil, namespace, id)
		if err != nil {
			return err
		}
		if prev == nil {
			return fmt.Errorf("purge job %q: %w", id, ErrJobNotFound)
		}
		if err := w.purge(prev); err != nil {
			return err
		}
		return w.event(now, structs.EventJobStopped, namespace, id, "stopped and purged by a user", nil)
	})
}

// purge deletes job and every row kept about it: its versions, placement
// history, samples, models, desired and observed state and usage. It is
// the one place a job's rows are deleted (StopJob's purge and the job
// garbage collector, CollectJobs).
func (w *writer) purge(job *structs.Job) error {
	namespace, id := job.Namespace, job.ID
	if err := w.delete(TableJobs, job); err != nil {
		return err
	}
	for _, t := range []string{TableVersions, TablePlacements} {
		w.touched[t] = true
		if _, err := w.txn.DeleteAll(t, "id_prefix", jobPrefix(namespace, id)...); err != nil {
			return fmt.Errorf("purge %s of job %q: %w", t, id, err)
		}
	}
	for _, t := range []string{TableSamples, TableModels, TableDesired, TableObserved, TableUsage} {
		w.touched[t] = true
		if _, err := w.txn.DeleteAll(t, "id", namespace, id); err != nil {
			return fmt.Errorf("purge %s of job %q: %w", t, id, err)
		}
	}
	return nil
}

// ApplyDecision stores, at index, the placements an algorithm decided for
// jobs (each job's desired placement, replacing the last) and the models
// they were decided with, and records the decision's index, algorithm and
// time. Only what changed need be given: the log grows with changes, not
// with the cluster. A paused placement of a pending job records a
// JobWaiting event with its reason when the reason is new. Placements and
// models of jobs the store does not hold as active are dropped.
func (s *Store) ApplyDecision(index uint64, now int64, algorithm string, placements []*structs.Placement, models []*structs.JobModel) error {
	return s.write(index, func(w *writer) error {
		if err := w.insert(TableDecision, &structs.Plan{Index: index, Algorithm: algorithm, CreateTime: now}); err != nil {
			return err
		}
		for _, pl := range placements {
			job, err := activeJob(w.txn, pl.Namespace, pl.JobID)
			if err != nil {
				return err
			}
			if job == nil {
				continue
			}
			prev, err := desired(w.txn, nil, job.Namespace, job.ID)
			if err != nil {
				return err
			}
			if prev != nil && prev.Placement.SameRun(pl) && prev.Placement.Reason == pl.Reason {
				continue
			}
			row := &structs.JobPlacement{Namespace: job.Namespace, JobID: job.ID, PlanIndex: index, Time: now, Algorithm: algorithm, Placement: pl.Copy()}
			if err := w.insert(TableDesired, row); err != nil {
				return err
			}
			if prev == nil || !prev.Placement.SameTasks(pl) {
				if err := w.actionEvents(now, algorithm, pl); err != nil {
					return err
				}
			}
			if pl.Paused() && job.Status == structs.JobStatusPending {
				if err := w.event(now, structs.EventJobWaiting, job.Namespace, job.ID, pl.Reason, map[string]string{"Algorithm": algorithm}); err != nil {
					return err
				}
			}
		}
		for _, m := range models {
			if job, err := activeJob(w.txn, m.Namespace, m.JobID); err != nil {
				return err
			} else if job == nil {
				continue
			}
			if err := w.insert(TableModels, m); err != nil {
				return err
			}
		}
		return nil
	})
}

// actionEvent is the event type of each task action kind.
var actionEvent = map[string]string{
	structs.ActionResized:           structs.EventTaskResized,
	structs.ActionOOMResized:        structs.EventTaskResized,
	structs.ActionHotPSReplaced:     structs.EventHotPSReplaced,
	structs.ActionStragglerReplaced: structs.EventStragglerReplaced,
}

// actionEvents records an event for each task action of a placement that
// changes a job's desired placement, with its reason as the message; an
// action of a kind Caravan does not know (from a plugin) is a
// TaskResized event that names its kind.
func (w *writer) actionEvents(now int64, algorithm string, pl *structs.Placement) error {
	for _, a := range pl.Actions {
		typ, ok := actionEvent[a.Kind]
		if !ok {
			typ = structs.EventTaskResized
		}
		details := map[string]string{"Algorithm": algorithm, "Kind": a.Kind, "Role": a.Role, "Rank": strconv.Itoa(a.Rank)}
		if a.NodeID != "" {
			details["NodeID"] = a.NodeID
		}
		for k, v := range a.Details {
			if _, taken := details[k]; !taken {
				details[k] = v
			}
		}
		if err := w.event(now, typ, pl.Namespace, pl.JobID, a.Reason, details); err != nil {
			return err
		}
	}
	return nil
}

// ApplyPlan applies a whole-cluster plan, as leaders of earlier versions
// committed them: every placement becomes its job's desired placement.
func (s *Store) ApplyPlan(index uint64, plan *structs.Plan, models []*structs.JobModel) error {
	return s.ApplyDecision(index, plan.CreateTime, plan.Algorithm, plan.Placements, models)
}

// activeJob returns a job that has not ended, nil if there is none.
func activeJob(txn *memdb.Txn, namespace, id string) (*structs.Job, error) {
	job, err := jobByID(txn, nil, namespace, id)
	if err != nil || job == nil || structs.Terminal(job.Status) {
		return nil, err
	}
	return job, nil
}

// UpsertObserved records what the driver reports runs of jobs. A job whose
// running placement changed, and no change of which is in flight, gets an
// entry in its placement history and a JobPlaced or JobRescaled event; a
// pending job that runs tasks becomes running, and a running job is
// rescaling while a change is in flight.
// Reports of jobs the store does not hold as active are dropped.
func (s *Store) UpsertObserved(index uint64, now int64, observed []*structs.Observed) error {
	return s.write(index, func(w *writer) error {
		for _, o := range observed {
			job, err := activeJob(w.txn, o.Namespace, o.JobID)
			if err != nil {
				return err
			}
			if job == nil {
				continue
			}
			row := o.Copy()
			row.ModifyIndex, row.UpdateTime = index, now
			if err := w.insert(TableObserved, row); err != nil {
				return err
			}
			// What runs while a change is in flight is on its way: the
			// history records where it arrives.
			if !row.Change.InFlight() {
				last, err := latestPlacement(w.txn, nil, job.Namespace, job.ID)
				if err != nil {
					return err
				}
				if last == nil && row.Placement != nil || last != nil && !last.Placement.SameTasks(row.Placement) {
					if err := w.ran(now, job, row, last); err != nil {
						return err
					}
				}
			}
			if err := w.setRunStatus(now, job, row); err != nil {
				return err
			}
		}
		return nil
	})
}

// ran appends what now runs of a job to its placement history, with the
// decision that asked for it, and records the event; prev is the
// history's latest entry, nil if there is none.
func (w *writer) ran(now int64, job *structs.Job, o *structs.Observed, prev *structs.JobPlacement) error {
	pl := o.Placement
	if pl == nil {
		pl = &structs.Placement{Namespace: job.Namespace, JobID: job.ID}
	}
	rec := &structs.JobPlacement{Namespace: job.Namespace, JobID: job.ID, PlanIndex: w.index, Time: now, Placement: pl.Copy()}
	d, err := desired(w.txn, nil, job.Namespace, job.ID)
	if err != nil {
		return err
	} else if d != nil {
		rec.Algorithm = d.Algorithm
		if pl.Reason == "" && d.Placement.SameTasks(pl) {
			rec.Placement.Reason = d.Placement.Reason
		}
	}
	if c := o.Change; c != nil && c.Target.SameTasks(pl) {
		rec.PlanIndex = c.PlanIndex
	}
	if err := w.insert(TablePlacements, rec); err != nil {
		return err
	}
	ret, err := w.retention()
	if err != nil {
		return err
	}
	if err := w.trim(TablePlacements, ret.MaxJobPlacements, jobPrefix(job.Namespace, job.ID)...); err != nil {
		return err
	}
	details := map[string]string{"PS": fmt.Sprint(pl.NumPS), "Workers": fmt.Sprint(pl.NumWorkers), "Algorithm": rec.Algorithm}
	msg := fmt.Sprintf("%s run on %s", structs.Shape{PS: pl.NumPS, Workers: pl.NumWorkers}, structs.Plural(len(pl.Nodes), "node"))
	if r := rec.Placement.Reason; r != "" {
		msg += ": " + r
	}
	typ := structs.EventJobRescaled
	// Fewer tasks than decided, with no change arriving there: tasks
	// ended or their nodes went away, and the driver restarts the job;
	// unless the tasks missing finished their work, and the job is
	// ending.
	var done structs.Shape
	if pl.Finished != nil {
		done = *pl.Finished
	}
	short := d != nil && (o.Change == nil || !o.Change.Target.SameTasks(pl)) &&
		(pl.NumPS < d.Placement.NumPS || pl.NumWorkers < d.Placement.NumWorkers)
	lost := short && (pl.NumPS+done.PS < d.Placement.NumPS || pl.NumWorkers+done.Workers < d.Placement.NumWorkers)
	switch {
	case pl.Paused():
		typ, msg = structs.EventJobWaiting, "no task runs"
	case short && !lost:
		typ = structs.EventTasksFinished
		msg = fmt.Sprintf("%s run on %s; the others of the decision's %s finished their work (%s): the job is ending",
			structs.Shape{PS: pl.NumPS, Workers: pl.NumWorkers}, structs.Plural(len(pl.Nodes), "node"), structs.Shape{PS: d.Placement.NumPS, Workers: d.Placement.NumWorkers}, done)
	case lost:
		typ = structs.EventTasksLost
		msg = fmt.Sprintf("%s run on %s, short of the decision's %s: tasks ended or their nodes went away",
			structs.Shape{PS: pl.NumPS, Workers: pl.NumWorkers}, structs.Plural(len(pl.Nodes), "node"), structs.Shape{PS: d.Placement.NumPS, Workers: d.Placement.NumWorkers})
	case prev == nil || prev.Placement.Paused() && job.Status == structs.JobStatusPending:
		typ = structs.EventJobPlaced
	}
	return w.event(now, typ, job.Namespace, job.ID, msg, details)
}

// setRunStatus moves an active job between pending, running and
// rescaling by what runs of it.
func (w *writer) setRunStatus(now int64, job *structs.Job, o *structs.Observed) error {
	status := job.Status
	switch {
	case o.Change.InFlight() && job.Status != structs.JobStatusPending:
		status = structs.JobStatusRescaling
	case o.Placement != nil && !o.Placement.Paused():
		status = structs.JobStatusRunning
	case job.Status == structs.JobStatusRescaling:
		status = structs.JobStatusRunning // paused: it keeps its place in the queue as running
	}
	if status == job.Status {
		return nil
	}
	j := *job
	j.Status, j.StatusDescription, j.ModifyIndex, j.ModifyTime = status, "", w.index, now
	return w.insert(TableJobs, &j)
}

// MetricsCursor names the cursor of the leader's metrics source, which
// AppendSamples records so that a new leader resumes where the last one
// stopped instead of reading samples twice.
const MetricsCursor = "metrics"

// Appended is what AppendSamples did with a batch: how many samples it
// stored, and how many repeated a stored one and were not stored again.
// The rest were dropped (samples of jobs not active, a task's sample older
// than the one held, a rank beyond the job's bounds).
type Appended struct {
	Kept, Repeated int
}

// sampleID is a chief sample's identity within its job: a task reports a
// step once at a given time, at one configuration: its task counts, GPU
// type and per-GPU batch. The configuration keeps apart the measurements a
// profiler reports for several configurations of one step at one instant
// (the sim driver's out-of-band profiling, and its profiles of each GPU
// type at several batches); a retried report repeats it too. The GPU type
// and batch joined the identity with GPU-type profiling, which only
// leaders of this version ask for: a server of an earlier version, in a
// rolling upgrade, keeps one of such a profile's samples where this one
// keeps them all.
type sampleID struct {
	Step, Time        int64
	NumPS, NumWorkers int
	GPUType           string
	LocalBatchSize    int64
}

func idOf(smp *structs.Sample) sampleID {
	return sampleID{Step: smp.Step, Time: smp.Time, NumPS: smp.NumPS, NumWorkers: smp.NumWorkers, GPUType: smp.GPUType, LocalBatchSize: smp.LocalBatchSize}
}

// AppendSamples adds samples to their jobs' bounded histories and records
// the metrics source's cursor after them (a cursor of 0 is not recorded).
// Samples of jobs the store does not hold as active are dropped.
//
// With once, a sample whose identity (job, task, step, time and the
// configuration it ran at: sampleID) the store holds already, or that an earlier sample of the batch has, counts as
// Repeated and is not stored again, so that a report retried after an
// ambiguous answer, or read twice from a collector, is stored once. A
// history that was thinned no longer holds its older samples: a repeat of
// one of those is stored again, but retries repeat the latest samples,
// which thinning keeps. Without once (the SampleBatchType entries of
// servers before 0.2.0), repeats are stored as other samples are.
func (s *Store) AppendSamples(index uint64, samples []structs.Sample, cursor uint64, once bool) (Appended, error) {
	var res Appended
	err := s.write(index, func(w *writer) error {
		ret, err := w.retention()
		if err != nil {
			return err
		}
		if cursor != 0 {
			if err := w.insert(TableCursors, &indexEntry{Key: MetricsCursor, Value: cursor}); err != nil {
				return err
			}
		}
		byJob := map[structs.JobKey]*structs.JobSamples{}
		jobs := map[structs.JobKey]*structs.Job{}
		// seen finds each job's repeats (heldSamples).
		seen := map[structs.JobKey]*heldSamples{}
		var order []structs.JobKey
		for _, smp := range samples {
			ns := cmp.Or(smp.Namespace, structs.DefaultNamespace)
			key := structs.JobKey{Namespace: ns, ID: smp.JobID}
			js, ok := byJob[key]
			if !ok {
				job, err := jobByID(w.txn, nil, ns, smp.JobID)
				if err != nil {
					return err
				}
				if job != nil && !structs.Terminal(job.Status) {
					prev, err := jobSamples(w.txn, nil, ns, smp.JobID)
					if err != nil {
						return err
					}
					js = &structs.JobSamples{Namespace: ns, JobID: smp.JobID, Run: job.CreateIndex}
					// With once (0.2.0 on), a row of an earlier run is
					// not appended to: RegisterJob deleted it when the
					// run started, unless an earlier version wrote it
					// (Run 0), or the run started before every server
					// was at 0.2.0.
					if prev != nil && (!once || prev.Run == 0 || prev.Run == job.CreateIndex) {
						// The new row appends to the stored row's backing
						// array: readers of the stored row never look past
						// its length, and writes are serialised, so they
						// never see what is appended. Copying the history
						// at every batch cost more than the samples.
						js.Samples, js.Received, js.Newest = prev.Samples, prev.Received, newestOf(prev)
						js.Tasks = slices.Clone(prev.Tasks)
					}
					jobs[key] = job
					order = append(order, key)
				}
				byJob[key] = js
			}
			if js == nil {
				continue
			}
			if !smp.Chief() {
				var took taskSample
				js.Tasks, took = latestTask(js.Tasks, smp, jobs[key], once)
				switch took {
				case taskKept:
					res.Kept++
				case taskRepeated:
					res.Repeated++
				}
				continue
			}
			if once {
				h := seen[key]
				if h == nil {
					h = newHeldSamples(js.Samples, js.Newest)
					seen[key] = h
				}
				if !h.add(idOf(&smp)) {
					res.Repeated++
					continue
				}
			}
			js.Samples = append(js.Samples, smp)
			js.Newest = max(js.Newest, smp.Time)
			js.Received++
			res.Kept++
			if len(js.Samples) > ret.MaxJobSamples {
				js.Samples = thin(js.Samples)
			}
		}
		for _, key := range order {
			if err := w.insert(TableSamples, byJob[key]); err != nil {
				return err
			}
		}
		return nil
	})
	return res, err
}

// heldSamples finds the repeats among a batch's chief samples of one
// job: a sample whose identity (sampleID) the job's history held before
// the batch, or an earlier sample of the batch has. A repeat has the time
// of the sample it repeats, so a sample later than every one held (the
// row's Newest) is new without a look at the history: the held
// identities are hashed only for a sample that is not (a retry, a profile
// of several configurations at one instant). Hashing the whole history at
// every batch, which most of the time holds only later samples, was most
// of a simulation's time, and finding its latest time at every batch a
// fifteenth of harmony's (drivers/sim/README.md, "Speed of the
// simulator").
type heldSamples struct {
	// held is the history before the batch; newest no earlier than the
	// latest time in it; ids its identities, nil until a sample needs
	// them.
	held   []structs.Sample
	newest int64
	ids    map[sampleID]bool
	// batch are the identities the batch added.
	batch map[sampleID]bool
}

// newestOf is a sample row's Newest; a row written before it was kept
// (0) is looked through for it.
func newestOf(js *structs.JobSamples) int64 {
	newest := js.Newest
	if newest == 0 {
		for i := range js.Samples {
			newest = max(newest, js.Samples[i].Time)
		}
	}
	return newest
}

// newHeldSamples takes a job's history and its row's Newest.
func newHeldSamples(held []structs.Sample, newest int64) *heldSamples {
	return &heldSamples{held: held, newest: newest}
}

// add reports whether id is new, and records it.
func (h *heldSamples) add(id sampleID) bool {
	if h.batch[id] {
		return false
	}
	if id.Time <= h.newest {
		if h.ids == nil {
			h.ids = make(map[sampleID]bool, len(h.held))
			for i := range h.held {
				h.ids[idOf(&h.held[i])] = true
			}
		}
		if h.ids[id] {
			return false
		}
	}
	if h.batch == nil {
		h.batch = map[sampleID]bool{}
	}
	h.batch[id] = true
	return true
}

// taskSample is what latestTask did with a sample.
type taskSample int

const (
	taskDropped taskSample = iota
	taskKept
	taskRepeated
)

// latestTask puts the sample smp of a job's non-chief task in tasks, the
// latest sample of each, sorted by role and rank, and says what it did: a
// sample older than the one held for its task, or of a rank beyond job's
// bounds for the role (which keeps tasks bounded), is dropped; with once,
// one with the held sample's identity (sampleID) is a repeat, and changes
// nothing.
func latestTask(tasks []structs.Sample, smp structs.Sample, job *structs.Job, once bool) ([]structs.Sample, taskSample) {
	if job.Elastic == nil {
		return tasks, taskDropped
	}
	limit := job.Elastic.Workers.Max
	if smp.Role == structs.RolePS {
		limit = 0
		if b := job.Elastic.ParameterServers; b != nil {
			limit = b.Max
		}
	}
	if smp.Rank >= limit {
		return tasks, taskDropped
	}
	role := func(s structs.Sample) string { return cmp.Or(s.Role, structs.RoleWorker) }
	i, found := slices.BinarySearchFunc(tasks, smp, func(a, b structs.Sample) int {
		return cmp.Or(cmp.Compare(role(a), role(b)), cmp.Compare(a.Rank, b.Rank))
	})
	switch {
	case !found:
		return slices.Insert(tasks, i, smp), taskKept
	case once && idOf(&smp) == idOf(&tasks[i]):
		return tasks, taskRepeated
	case smp.Time < tasks[i].Time:
		return tasks, taskDropped
	}
	tasks[i] = smp
	return tasks, taskKept
}

// thin halves the older half of a full history by keeping every other
// sample.
func thin(smps []structs.Sample) []structs.Sample {
	half := len(smps) / 2
	out := make([]structs.Sample, 0, len(smps)-half/2)
	for i := 0; i < half; i += 2 {
		out = append(out, smps[i])
	}
	return append(out, smps[half:]...)
}

// ReplaceNodes makes nodes the cluster's node set.
func (s *Store) ReplaceNodes(index uint64, nodes []*structs.Node) error {
	return s.write(index, func(w *writer) error {
		w.touched[TableNodes] = true
		if _, err := w.txn.DeleteAll(TableNodes, "id"); err != nil {
			return fmt.Errorf("replace nodes: %w", err)
		}
		for _, n := range nodes {
			if err := w.insert(TableNodes, n); err != nil {
				return err
			}
		}
		return nil
	})
}

// SetSchedulerConfig replaces the scheduler configuration and records an
// AlgorithmChanged event when the algorithm changes.
func (s *Store) SetSchedulerConfig(index uint64, now int64, cfg *structs.SchedulerConfig) error {
	return s.write(index, func(w *writer) error {
		prev, err := schedulerConfig(w.txn, nil)
		if err != nil {
			return err
		}
		c := &structs.SchedulerConfig{Algorithm: cfg.Algorithm, Options: maps.Clone(cfg.Options), ModifyIndex: index}
		if err := w.insert(TableConfig, c); err != nil {
			return err
		}
		if prev != nil && prev.Algorithm == c.Algorithm {
			return nil
		}
		return w.event(now, structs.EventAlgorithmChanged, "", "", "scheduler algorithm is now "+c.Algorithm, map[string]string{"Algorithm": c.Algorithm})
	})
}

// UpsertMember records how to reach a server.
func (s *Store) UpsertMember(index uint64, m *structs.Member) error {
	return s.write(index, func(w *writer) error {
		c := *m
		return w.insert(TableMembers, &c)
	})
}

// DeleteMember forgets a server.
func (s *Store) DeleteMember(index uint64, id string) error {
	return s.write(index, func(w *writer) error {
		w.touched[TableMembers] = true
		_, err := w.txn.DeleteAll(TableMembers, "id", id)
		return err
	})
}

// AppendEvent records a scheduler-wide or job event that no state change
// implies, such as an algorithm fallback.
func (s *Store) AppendEvent(index uint64, ev *structs.Event) error {
	return s.write(index, func(w *writer) error {
		return w.event(ev.Time, ev.Type, ev.Namespace, ev.JobID, ev.Message, maps.Clone(ev.Details))
	})
}
