// Package planner decides, for a view of the cluster and its active jobs, how
// many workers and parameter servers each job gets and on which nodes. It is
// pure computation: no I/O, no clocks, deterministic for the same input.
// Subpackages hold the performance models (planner/model) and one algorithm
// each (Optimus, Harmony, the baselines).
//
// Imports point downstream only: planner never imports server or drivers.
package planner
