// Package structs holds the types every part of Caravan shares: the ML job and
// its role templates, resources and device requests with Nomad's semantics, the
// cluster's nodes and devices, plans and placements, metrics samples from
// trainers, job status and events.
//
// The types are plain data: exported fields, no unexported state, no pointers
// to shared mutable objects. They encode to JSON and msgpack as they are (the
// HTTP API uses JSON, the Raft log msgpack), with Go field names as keys the way
// Nomad's API does; Sample is the one exception, because its JSON form is the
// schema trainers report in (see DESIGN.md §3).
//
// Objects that come from users (jobs, samples) have two methods:
// Canonicalize fills defaults in place and is idempotent; Validate reports
// every problem at once as a join of *FieldError, each naming the field by its
// jobspec path ("elastic.workers.min") so the jobspec parser can point at the
// line that is wrong. Validate never modifies the object; call Canonicalize
// first.
package structs
