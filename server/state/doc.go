// Package state is the Caravan server's state store: go-memdb tables for
// jobs, job versions, plans, placement history, samples kept for fitting,
// fitted models, nodes, events, members and the scheduler configuration.
//
// Only the FSM writes to it, in Raft order, with the Raft index of the entry
// it applies; every write bumps that table's index, which blocking queries
// wait on. Reads take a memdb.WatchSet (nil when the caller will not block)
// and return objects callers must not modify: copy them first. The store is
// safe for concurrent use.
package state
