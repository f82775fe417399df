package state

import (
	"context"
	"fmt"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
)

// Txn returns a read transaction over the whole store at this moment. Every
// read function of this package takes one, so that a caller can read
// several tables consistently and block on all of them.
func (s *Store) Txn() *memdb.Txn { return s.db.Txn(false) }

// jobPrefix returns the arguments of a prefix scan over one job's rows in a
// (Namespace, JobID, ...) index. The job ID is terminated as the index
// stores it, so that job "a" does not match job "ab".
func jobPrefix(namespace, id string) []any { return []any{namespace, id + "\x00"} }

func watchFirst(txn *memdb.Txn, ws memdb.WatchSet, table string, args ...any) (any, error) {
	ch, raw, err := txn.FirstWatch(table, "id", args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	ws.Add(ch)
	return raw, nil
}

// Scan orders of watchAll.
const (
	forward = iota
	reverse
	lowerBound
)

func watchAll[T any](txn *memdb.Txn, ws memdb.WatchSet, table, index string, order int, args ...any) ([]T, error) {
	get := [...]func(string, string, ...any) (memdb.ResultIterator, error){txn.Get, txn.GetReverse, txn.LowerBound}[order]
	it, err := get(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	ws.Add(it.WatchCh())
	var out []T
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(T))
	}
	return out, nil
}

func jobByID(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) (*structs.Job, error) {
	raw, err := watchFirst(txn, ws, TableJobs, namespace, id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.Job), nil
}

// JobByID returns a job, nil if the store does not hold it.
func JobByID(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) (*structs.Job, error) {
	return jobByID(txn, ws, namespace, id)
}

// Jobs returns every job, sorted by namespace and ID; namespace "" means
// all namespaces.
func Jobs(txn *memdb.Txn, ws memdb.WatchSet, namespace string) ([]*structs.Job, error) {
	if namespace == "" {
		return watchAll[*structs.Job](txn, ws, TableJobs, "id", forward)
	}
	return watchAll[*structs.Job](txn, ws, TableJobs, "id_prefix", forward, namespace, "")
}

// ActiveJobs returns the jobs not ended (structs.Terminal), of every
// namespace, sorted by namespace and ID.
func ActiveJobs(txn *memdb.Txn, ws memdb.WatchSet) ([]*structs.Job, error) {
	return watchAll[*structs.Job](txn, ws, TableJobs, "active", forward, true)
}

// JobVersions returns a job's versions, newest first.
func JobVersions(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) ([]*structs.Job, error) {
	return watchAll[*structs.Job](txn, ws, TableVersions, "id_prefix", reverse, jobPrefix(namespace, id)...)
}

// Placements returns a job's placement history, newest first.
func Placements(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) ([]*structs.JobPlacement, error) {
	return watchAll[*structs.JobPlacement](txn, ws, TablePlacements, "id_prefix", reverse, jobPrefix(namespace, id)...)
}

func latestPlacement(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) (*structs.JobPlacement, error) {
	all, err := Placements(txn, ws, namespace, id)
	if len(all) == 0 || err != nil {
		return nil, err
	}
	return all[0], nil
}

// LatestPlan returns the plan in force, a view built from state: the
// index, algorithm and time of the last decision, and the desired
// placement of every active job, sorted by job. Nil before the first
// decision.
func LatestPlan(txn *memdb.Txn, ws memdb.WatchSet) (*structs.Plan, error) {
	raw, err := watchFirst(txn, ws, TableDecision)
	if raw == nil || err != nil {
		return nil, err
	}
	plan := *raw.(*structs.Plan)
	plan.Placements = nil
	rows, err := watchAll[*structs.JobPlacement](txn, ws, TableDesired, "id", forward)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if job, err := activeJob(txn, r.Namespace, r.JobID); err != nil {
			return nil, err
		} else if job != nil {
			plan.Placements = append(plan.Placements, r.Placement)
		}
	}
	return &plan, nil
}

func desired(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) (*structs.JobPlacement, error) {
	raw, err := watchFirst(txn, ws, TableDesired, namespace, id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.JobPlacement), nil
}

// Desired returns a job's desired placement, the latest decision for it;
// nil before the first.
func Desired(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) (*structs.JobPlacement, error) {
	return desired(txn, ws, namespace, id)
}

func observedOf(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) (*structs.Observed, error) {
	raw, err := watchFirst(txn, ws, TableObserved, namespace, id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.Observed), nil
}

// ObservedOf returns what runs of a job as last reported; nil before the
// driver reported it.
func ObservedOf(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) (*structs.Observed, error) {
	return observedOf(txn, ws, namespace, id)
}

// AllObserved returns what runs of every job the driver reported.
func AllObserved(txn *memdb.Txn, ws memdb.WatchSet) ([]*structs.Observed, error) {
	return watchAll[*structs.Observed](txn, ws, TableObserved, "id", forward)
}

// UsageOf returns what a job's tasks use as last committed; nil before
// the first commit.
func UsageOf(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) (*structs.JobUsage, error) {
	raw, err := watchFirst(txn, ws, TableUsage, namespace, id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.JobUsage), nil
}

func jobSamples(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) (*structs.JobSamples, error) {
	raw, err := watchFirst(txn, ws, TableSamples, namespace, id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.JobSamples), nil
}

// Samples returns the samples kept for a job, nil if none.
func Samples(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) (*structs.JobSamples, error) {
	return jobSamples(txn, ws, namespace, id)
}

// Model returns a job's fitted models, nil until the leader committed some.
func Model(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) (*structs.JobModel, error) {
	raw, err := watchFirst(txn, ws, TableModels, namespace, id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.JobModel), nil
}

// Models returns every job's fitted models.
func Models(txn *memdb.Txn, ws memdb.WatchSet) ([]*structs.JobModel, error) {
	return watchAll[*structs.JobModel](txn, ws, TableModels, "id", forward)
}

// Nodes returns the cluster's nodes, sorted by ID.
func Nodes(txn *memdb.Txn, ws memdb.WatchSet) ([]*structs.Node, error) {
	return watchAll[*structs.Node](txn, ws, TableNodes, "id", forward)
}

// Events returns the events after seq, oldest first.
func Events(txn *memdb.Txn, ws memdb.WatchSet, after uint64) ([]*structs.Event, error) {
	// A lower-bound scan cannot be watched (its WatchCh is nil): watch the
	// events table's index entry, which every new event updates.
	if _, err := watchFirst(txn, ws, TableIndex, TableEvents); err != nil {
		return nil, err
	}
	return watchAll[*structs.Event](txn, ws, TableEvents, "id", lowerBound, after+1)
}

// Members returns the servers the state knows, sorted by ID.
func Members(txn *memdb.Txn, ws memdb.WatchSet) ([]*structs.Member, error) {
	return watchAll[*structs.Member](txn, ws, TableMembers, "id", forward)
}

func schedulerConfig(txn *memdb.Txn, ws memdb.WatchSet) (*structs.SchedulerConfig, error) {
	raw, err := watchFirst(txn, ws, TableConfig)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.SchedulerConfig), nil
}

// SchedulerConfig returns the scheduler configuration, nil until one is set.
func SchedulerConfig(txn *memdb.Txn, ws memdb.WatchSet) (*structs.SchedulerConfig, error) {
	return schedulerConfig(txn, ws)
}

// Cursor returns the value of a cursor, 0 if it was never set.
func Cursor(txn *memdb.Txn, name string) (uint64, error) {
	raw, err := watchFirst(txn, nil, TableCursors, name)
	if raw == nil || err != nil {
		return 0, err
	}
	return raw.(*indexEntry).Value, nil
}

// IndexOf returns the largest Raft index of the last writes to tables.
func IndexOf(txn *memdb.Txn, tables ...string) uint64 { return index(txn, tables...) }

// indexActiveJobs names, in the index table, the last write that changed
// a job that had not ended or made one (ActiveJobsIndex). It is not a
// table.
const indexActiveJobs = "jobs.active"

// ActiveJobsIndex returns the Raft index of the last write that
// registered, updated, stopped or purged a job that had not ended: the
// garbage collector's purges of ended jobs move the jobs table's index
// but not this one, so that the leader does not read them as a change to
// what it schedules. A state restored from a snapshot of an earlier
// version has none until such a write, and answers with the jobs table's.
func ActiveJobsIndex(txn *memdb.Txn) uint64 {
	if i := index(txn, indexActiveJobs); i > 0 {
		return i
	}
	return index(txn, TableJobs)
}

// QueryFunc reads from txn, adding what it read to ws, and returns the
// result and the index it reflects.
type QueryFunc func(txn *memdb.Txn, ws memdb.WatchSet) (any, uint64, error)

// BlockingQuery runs query until the index it returns exceeds minIndex,
// wait elapses or ctx ends, and returns its last result: the blocking
// queries of Nomad's and Consul's HTTP APIs. minIndex 0 returns at once.
// The store may be replaced by a snapshot restore while waiting; current
// returns the store to query each time.
func BlockingQuery(ctx context.Context, current func() *Store, minIndex uint64, wait time.Duration, query QueryFunc) (any, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		s := current()
		ws := memdb.NewWatchSet()
		ws.Add(s.AbandonCh())
		res, idx, err := query(s.Txn(), ws)
		if err != nil || minIndex == 0 || idx > minIndex {
			return res, idx, err
		}
		if ws.WatchCtx(ctx) != nil {
			return res, idx, nil
		}
	}
}
