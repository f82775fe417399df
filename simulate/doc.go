// Package simulate runs a workload on the simulated cluster of drivers/sim
// through the server's own leader loop, one policy per run, on a virtual
// clock, and summarises the runs: job completion times, makespan, GPU
// utilisation, rescales. It is what `caravan sim` runs: an in-memory
// Caravan server in Manual mode (server.Config.Manual), whose steps the
// runner takes at each arrival, round and event of the simulator, so that
// simulated results are results of the product.
package simulate
