package state

import (
	"errors"
	"fmt"
	"slices"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
)

// Snapshot record kinds. Their values are part of the snapshot format:
// never renumber them, only append.
const (
	recordIndex uint8 = iota + 1
	recordJob
	recordJobVersion
	recordPlan
	recordPlacement
	recordSamples
	recordModel
	recordNode
	recordEvent
	recordMember
	recordSchedulerConfig
	recordCursor
	recordDesired
	recordObserved
	recordDecision
	recordACLPolicy
	recordACLToken
	recordACLBootstrap
	recordUsage
	recordQueue
	recordRetention
)

// records maps each kind to its table and a constructor of the value its
// rows decode into.
var records = []struct {
	kind  uint8
	table string
	new   func() any
}{
	{recordIndex, TableIndex, func() any { return new(indexEntry) }},
	{recordJob, TableJobs, func() any { return new(structs.Job) }},
	{recordJobVersion, TableVersions, func() any { return new(structs.Job) }},
	{recordPlacement, TablePlacements, func() any { return new(structs.JobPlacement) }},
	{recordSamples, TableSamples, func() any { return new(structs.JobSamples) }},
	{recordModel, TableModels, func() any { return new(structs.JobModel) }},
	{recordNode, TableNodes, func() any { return new(structs.Node) }},
	{recordEvent, TableEvents, func() any { return new(structs.Event) }},
	{recordMember, TableMembers, func() any { return new(structs.Member) }},
	{recordSchedulerConfig, TableConfig, func() any { return new(structs.SchedulerConfig) }},
	{recordCursor, TableCursors, func() any { return new(indexEntry) }},
	{recordDesired, TableDesired, func() any { return new(structs.JobPlacement) }},
	{recordObserved, TableObserved, func() any { return new(structs.Observed) }},
	{recordDecision, TableDecision, func() any { return new(structs.Plan) }},
	{recordACLPolicy, TableACLPolicies, func() any { return new(structs.ACLPolicy) }},
	{recordACLToken, TableACLTokens, func() any { return new(structs.ACLToken) }},
	{recordACLBootstrap, TableACLBootstrap, func() any { return new(structs.ACLBootstrap) }},
	{recordUsage, TableUsage, func() any { return new(structs.JobUsage) }},
	{recordQueue, TableQueues, func() any { return new(structs.Queue) }},
	{recordRetention, TableRetention, func() any { return new(structs.Retention) }},
}

// Dump calls emit with every row of the store as txn sees it, each with its
// record kind, table by table in a fixed order.
func Dump(txn *memdb.Txn, emit func(kind uint8, row any) error) error {
	for _, r := range records {
		it, err := txn.Get(r.table, "id")
		if err != nil {
			return fmt.Errorf("dump %s: %w", r.table, err)
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			if err := emit(r.kind, raw); err != nil {
				return fmt.Errorf("dump %s: %w", r.table, err)
			}
		}
	}
	return nil
}

// Restore fills a new store from dumped rows. Load the rows, then Commit.
type Restore struct {
	store *Store
	txn   *memdb.Txn
}

// NewRestore starts filling a new, empty store.
func NewRestore() (*Restore, error) {
	s, err := New()
	if err != nil {
		return nil, err
	}
	return &Restore{store: s, txn: s.db.Txn(true)}, nil
}

// Load decodes one row of kind with decode and inserts it; a row of a
// kind this version does not know is read, discarded and answered with
// ErrUnknownRecord. Whole-cluster
// plans, which snapshots of earlier versions hold, become the desired
// placements of their jobs; a plan with an empty placement is an error.
func (r *Restore) Load(kind uint8, decode func(v any) error) error {
	if kind == recordPlan {
		var p structs.Plan
		if err := decode(&p); err != nil {
			return fmt.Errorf("decode plan row: %w", err)
		}
		if i := slices.Index(p.Placements, nil); i >= 0 {
			return fmt.Errorf("restore plan row %d: placement %d is empty", p.Index, i)
		}
		if err := r.txn.Insert(TableDecision, &structs.Plan{Index: p.Index, Algorithm: p.Algorithm, CreateTime: p.CreateTime}); err != nil {
			return fmt.Errorf("restore plan row: %w", err)
		}
		for _, pl := range p.Placements {
			row := &structs.JobPlacement{Namespace: pl.Namespace, JobID: pl.JobID, PlanIndex: p.Index, Time: p.CreateTime, Algorithm: p.Algorithm, Placement: pl}
			if err := r.txn.Insert(TableDesired, row); err != nil {
				return fmt.Errorf("restore plan row: %w", err)
			}
		}
		return nil
	}
	for _, rec := range records {
		if rec.kind != kind {
			continue
		}
		v := rec.new()
		if err := decode(v); err != nil {
			return fmt.Errorf("decode %s row: %w", rec.table, err)
		}
		if err := r.txn.Insert(rec.table, v); err != nil {
			return fmt.Errorf("restore %s row: %w", rec.table, err)
		}
		return nil
	}
	// A newer version's record: read past it, so that the rows after it
	// restore.
	var skip any
	if err := decode(&skip); err != nil {
		return fmt.Errorf("skip row of unknown kind %d: %w", kind, err)
	}
	return fmt.Errorf("%w %d", ErrUnknownRecord, kind)
}

// ErrUnknownRecord is returned by Restore.Load for a record of a kind this
// version does not know (one a newer version wrote); the row was read and
// discarded, and the restore may go on.
var ErrUnknownRecord = errors.New("unknown snapshot record kind")

// Commit returns the filled store.
func (r *Restore) Commit() *Store {
	r.txn.Commit()
	return r.store
}

// Abort discards the restore.
func (r *Restore) Abort() { r.txn.Abort() }

// TableOf returns the table of a record kind, "" for an unknown kind.
func TableOf(kind uint8) string {
	for _, r := range records {
		if r.kind == kind {
			return r.table
		}
	}
	return ""
}
