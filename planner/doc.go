// Package planner decides, for a view of the cluster and its active jobs, how
// many workers and parameter servers each job gets and on which nodes. It is
// pure computation: no I/O, no clocks, deterministic for the same input.
//
// This package holds what every algorithm shares: the Request and Decision
// types, the Algorithm interface, Cluster (free capacity with Nomad's
// device semantics), CheckDecision (the rules every decision must keep),
// ExplainPaused (why a paused job's minimum does not fit) and a test
// Harness. Subpackages hold the models (planner/model), feasibility
// (planner/feasible), placement (planner/placement), the share each job
// is owed (planner/fairshare), one algorithm each
// (planner/optimus, planner/drf, planner/tetris, planner/fifo,
// planner/roundrobin, planner/harmony, planner/cruise, planner/dlrover,
// planner/straggler (a pass over any algorithm), planner/pollux, with
// Pollux's goodput model in planner/goodput, planner/dorm, which
// solves a MILP with GLPK, and planner/specon, which moves jobs over a base
// algorithm) and the registry of built-ins (planner/builtin). See README.md
// for the pipeline.
//
// Imports point downstream only: planner never imports server or drivers.
package planner
