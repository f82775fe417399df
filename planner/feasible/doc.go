// Package feasible decides whether a node, or a device group on it, satisfies
// a task's constraints, with Nomad's semantics (Nomad's scheduler/feasible is
// the model). It works on structs types only, so that both the planner and
// the drivers can use it.
//
// A Checker caches what is costly to rebuild (compiled regular expressions,
// parsed versions); it is not safe for concurrent use.
package feasible
