// Package server is the Caravan agent: agent configuration, the HTTP API, the
// Raft-replicated state (server/fsm, server/state on go-memdb) and the
// leader's scheduling loop, which builds a planner request from the state,
// runs the active algorithm, commits the plan through Raft and hands it to a
// driver.
//
// The leader loop declares the interfaces it consumes (Driver,
// MetricsSource, Algorithm); drivers and plugins satisfy them without
// importing this package.
package server
