// Package server is the Caravan server: a Raft peer (hashicorp/raft on
// raft-boltdb) holding the replicated state (server/fsm, server/state on
// go-memdb), the HTTP API, and, while it leads, the scheduling loop: a
// reconciler that plans from what runs, commits the placements and models
// that changed through Raft, hands the plan to a Driver without waiting
// for its changes, and commits what the driver reports runs. README.md
// draws the pipeline.
//
// The interfaces the leader consumes (Driver, MetricsSource, Profiler) are
// declared here; drivers satisfy them without importing this package, and
// are wired in explicitly through Config.
package server
