// Package sim is Caravan's embedded simulated cluster: a discrete-event
// simulator with a virtual clock, driven the way a real cluster is: it
// enacts plans, reports its nodes and its jobs' states, and reports the
// samples its trainers send. `caravan sim` compares policies with it in
// virtual time; Driver runs it in real time (or faster) as the backend of
// `caravan agent -dev`.
//
// Jobs train against a ground truth the scheduler never sees: measured step
// times and training curves from the Pollux artifact (data/pollux, see
// data/NOTICE), or parametric parameter-server jobs after the Optimus paper.
// Simulated trainers report noisy samples, as real ones do, and the
// scheduler learns only from those. Runs are deterministic for a seed.
//
// A Sim is not safe for concurrent use; run one Sim per goroutine. A Driver
// is.
package sim
