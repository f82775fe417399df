// Package sim is Caravan's embedded simulated cluster: a discrete-event
// simulator with a virtual clock that implements the same driver contract
// as drivers/nomad (enact a plan, report nodes, report job state, report
// trainers' samples). `caravan agent -dev` runs on it and `caravan sim`
// compares policies with it.
//
// Jobs train against a ground truth the scheduler never sees: measured step
// times and training curves from the Pollux artifact (data/pollux, see
// data/NOTICE), or parametric parameter-server jobs after the Optimus paper.
// Simulated trainers report noisy samples, as real ones do, and the
// scheduler learns only from those. Runs are deterministic for a seed.
//
// A Sim is not safe for concurrent use; run one Sim per goroutine.
package sim
