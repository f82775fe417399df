// Package server is the Caravan agent: agent configuration, the HTTP API, the
// Raft-replicated state (server/fsm, server/state on go-memdb) and the
// leader's scheduling loop, which builds a planner request from the state,
// runs the active algorithm, commits the plan through Raft and hands it to a
// driver.
//
// What exists so far: server/scheduler, the leader loop's core without Raft
// (samples to fitted models to a checked plan), and server/simulate, which
// runs it on drivers/sim for `caravan sim`. The agent, Raft and the HTTP API
// come next; the leader loop will declare the interfaces it consumes
// (Driver, MetricsSource, Algorithm), which drivers and plugins satisfy
// without importing this package.
package server
