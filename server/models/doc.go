// Package models is the core of the leader's scheduling loop, without
// Raft or I/O: it keeps the active jobs' runs, turns the samples trainers
// report into fitted loss and speed models, builds the planner's request
// (a round's snapshot), runs the active algorithm and checks its
// decision. The algorithms themselves are package planner's; Nomad's
// scheduler/ is what package planner is here. The server's leader loop, the
// one caller (caravan sim runs that loop too), feeds it samples,
// completions and what runs, and enacts the plans it returns.
//
// A Set is not safe for concurrent use, and is deterministic: the
// same calls in the same order give the same plans.
package models
