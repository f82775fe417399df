// Package fsm is the Caravan server's Raft finite state machine. Every Raft
// log entry is one message-type byte followed by the msgpack encoding of its
// request; Apply decodes it and dispatches through a table to the state
// store. Apply is deterministic: requests carry the times the leader stamped,
// and no handler reads the clock, draws random numbers or does I/O beyond the
// state store. Snapshots stream every row of the store as (kind, row) pairs.
//
// What can be written can be applied: Encode decodes every request back
// with Apply's decoder and refuses one that does not survive (ErrTooComplex)
// before it is committed. An entry of a known type that still cannot be
// applied (written by an earlier version) is skipped on every server alike,
// with an EntrySkipped event. A type with IgnoreUnknownTypeFlag set that a
// server does not know is skipped with a warning, so that a newer leader can
// write it during a rolling upgrade; any other unknown type panics.
package fsm
