// Package server is the Caravan server: a Raft peer (hashicorp/raft on
// raft-boltdb) holding the replicated state (server/fsm, server/state on
// go-memdb), the HTTP API, and, while it leads, the scheduling loop, which
// builds a planner request from the state, runs the active algorithm,
// commits the plan through Raft and hands it to a Driver. README.md draws
// the pipeline.
//
// The interfaces the leader consumes (Driver, MetricsSource, Profiler) are
// declared here; drivers satisfy them without importing this package.
package server
