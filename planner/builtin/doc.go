// Package builtin is the registry of the algorithms compiled into Caravan.
// It is separate from planner so that the algorithms, which import planner,
// can be listed without an import cycle.
package builtin
