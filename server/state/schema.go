package state

import (
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
)

// Table names, for IndexOf and blocking queries.
const (
	TableIndex      = "index"
	TableJobs       = "jobs"
	TableVersions   = "job_versions"
	TablePlacements = "placements"
	TableSamples    = "samples"
	TableModels     = "models"
	TableNodes      = "nodes"
	TableEvents     = "events"
	TableMembers    = "members"
	TableConfig     = "scheduler_config"
	TableCursors    = "cursors"
	// TableDesired holds each job's latest decision, TableObserved what
	// its driver reports runs.
	TableDesired  = "desired"
	TableObserved = "observed"
	// TableUsage holds what each job's tasks use, as last committed.
	TableUsage = "usage"
	// TableDecision holds the last decision committed: its index,
	// algorithm and time (a Plan without placements).
	TableDecision = "decision"
	// TableACLPolicies holds ACL policies by name, TableACLTokens ACL
	// tokens by AccessorID (and SecretID, index "secret"),
	// TableACLBootstrap the record that ACLs were bootstrapped.
	TableACLPolicies  = "acl_policies"
	TableACLTokens    = "acl_tokens"
	TableACLBootstrap = "acl_bootstrap"
	// TableQueues holds the queues (issue 32) by name.
	TableQueues = "queues"
	// TableRetention holds the retention bounds a leader committed
	// (structs.Retention), a single row; without one the defaults hold.
	TableRetention = "retention"
)

// Default bounds on what the store keeps, until a leader commits others
// (SetRetention, the agent's server block).
const (
	// MaxPlacements is how many placement history entries are kept per
	// job by default.
	MaxPlacements = structs.DefaultMaxJobPlacements
	// MaxEvents is how many events are kept by default.
	MaxEvents = structs.DefaultMaxEvents
	// MaxSamples is how many samples are kept per job by default.
	MaxSamples = structs.DefaultMaxJobSamples
)

// indexEntry records the Raft index of a table's last write.
type indexEntry struct {
	Key   string
	Value uint64
}

func jobIndex() *memdb.IndexSchema {
	return &memdb.IndexSchema{
		Name:   "id",
		Unique: true,
		Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
			&memdb.StringFieldIndex{Field: "Namespace"},
			&memdb.StringFieldIndex{Field: "JobID"},
		}},
	}
}

// singleton indexes a table of one row.
func singleton() *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: "id", Unique: true, Indexer: &memdb.ConditionalIndex{Conditional: func(any) (bool, error) { return true, nil }}}
}

func schema() *memdb.DBSchema {
	single := func(name string, idx *memdb.IndexSchema) *memdb.TableSchema {
		return &memdb.TableSchema{Name: name, Indexes: map[string]*memdb.IndexSchema{"id": idx}}
	}
	uintID := func(field string) *memdb.IndexSchema {
		return &memdb.IndexSchema{Name: "id", Unique: true, Indexer: &memdb.UintFieldIndex{Field: field}}
	}
	stringID := func(field string) *memdb.IndexSchema {
		return &memdb.IndexSchema{Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: field}}
	}
	// Jobs are keyed (Namespace, ID); the others key on JobID.
	jobs := &memdb.IndexSchema{
		Name:   "id",
		Unique: true,
		Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
			&memdb.StringFieldIndex{Field: "Namespace"},
			&memdb.StringFieldIndex{Field: "ID"},
		}},
	}
	perJob := func(field string) *memdb.IndexSchema {
		return &memdb.IndexSchema{
			Name:   "id",
			Unique: true,
			Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "Namespace"},
				&memdb.StringFieldIndex{Field: "JobID"},
				&memdb.UintFieldIndex{Field: field},
			}},
			AllowMissing: false,
		}
	}
	versions := &memdb.IndexSchema{
		Name:   "id",
		Unique: true,
		Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
			&memdb.StringFieldIndex{Field: "Namespace"},
			&memdb.StringFieldIndex{Field: "ID"},
			&memdb.UintFieldIndex{Field: "Version"},
		}},
	}
	return &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		TableIndex: single(TableIndex, stringID("Key")),
		TableJobs: {Name: TableJobs, Indexes: map[string]*memdb.IndexSchema{
			"id": jobs,
			// active are the jobs not ended, which the leader's loop reads
			// at every change: a cluster that ran 100,000 jobs runs a few.
			"active": {Name: "active", Indexer: &memdb.ConditionalIndex{Conditional: func(obj any) (bool, error) {
				return !structs.Terminal(obj.(*structs.Job).Status), nil
			}}},
		}},
		TableVersions:    single(TableVersions, versions),
		TablePlacements:  single(TablePlacements, perJob("PlanIndex")),
		TableSamples:     single(TableSamples, jobIndex()),
		TableModels:      single(TableModels, jobIndex()),
		TableDesired:     single(TableDesired, jobIndex()),
		TableObserved:    single(TableObserved, jobIndex()),
		TableUsage:       single(TableUsage, jobIndex()),
		TableNodes:       single(TableNodes, stringID("ID")),
		TableEvents:      single(TableEvents, uintID("Seq")),
		TableMembers:     single(TableMembers, stringID("ID")),
		TableCursors:     single(TableCursors, stringID("Key")),
		TableConfig:      single(TableConfig, singleton()),
		TableDecision:    single(TableDecision, singleton()),
		TableACLPolicies: single(TableACLPolicies, stringID("Name")),
		TableACLTokens: {Name: TableACLTokens, Indexes: map[string]*memdb.IndexSchema{
			"id":     stringID("AccessorID"),
			"secret": {Name: "secret", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "SecretID"}},
		}},
		TableACLBootstrap: single(TableACLBootstrap, singleton()),
		TableQueues:       single(TableQueues, stringID("Name")),
		TableRetention:    single(TableRetention, singleton()),
	}}
}
