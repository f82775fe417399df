// Package simulate runs a workload through Caravan's scheduler on the
// simulated cluster of drivers/sim, one policy per run, and summarises the
// runs: job completion times, makespan, GPU utilisation, rescales. It is
// what `caravan sim` runs; the scheduler inside is the one the server runs.
package simulate
