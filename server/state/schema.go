package state

import (
	"github.com/hashicorp/go-memdb"
)

// Table names.
const (
	tableIndex      = "index"
	tableJobs       = "jobs"
	tableVersions   = "job_versions"
	tablePlans      = "plans"
	tablePlacements = "placements"
	tableSamples    = "samples"
	tableModels     = "models"
	tableNodes      = "nodes"
	tableEvents     = "events"
	tableMembers    = "members"
	tableConfig     = "scheduler_config"
)

// Bounds on what the store keeps.
const (
	// MaxPlans is how many plans are kept.
	MaxPlans = 32
	// MaxPlacements is how many placement history entries are kept per job.
	MaxPlacements = 64
	// MaxEvents is how many events are kept.
	MaxEvents = 4096
	// MaxSamples is how many samples are kept per job.
	MaxSamples = 1024
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
		tableIndex:      single(tableIndex, stringID("Key")),
		tableJobs:       single(tableJobs, jobs),
		tableVersions:   single(tableVersions, versions),
		tablePlans:      single(tablePlans, uintID("Index")),
		tablePlacements: single(tablePlacements, perJob("PlanIndex")),
		tableSamples:    single(tableSamples, jobIndex()),
		tableModels:     single(tableModels, jobIndex()),
		tableNodes:      single(tableNodes, stringID("ID")),
		tableEvents:     single(tableEvents, uintID("Seq")),
		tableMembers:    single(tableMembers, stringID("ID")),
		tableConfig:     single(tableConfig, &memdb.IndexSchema{Name: "id", Unique: true, Indexer: &memdb.ConditionalIndex{Conditional: func(any) (bool, error) { return true, nil }}}),
	}}
}
