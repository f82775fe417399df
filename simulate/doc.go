// Package simulate runs a workload on the simulated cluster of drivers/sim
// through the server's own leader loop, one policy per run, on a virtual
// clock, and summarises the runs: job completion times, makespan, GPU
// utilisation, rescales, fairness. It is what `caravan sim` runs: an
// in-memory Caravan server in Manual mode (server.Config.Manual), whose
// steps the runner takes at each arrival, round and event of the
// simulator, so that simulated results are results of the product.
//
// # Fairness
//
// Every run is measured against DRF, with the definitions of Dorm's §IV.A
// (SMARTCOMP'17), from what the simulator records: each job's arrival and
// finish, and every change of the CPU, memory and GPUs its tasks hold
// (sim.AllocChange). Resources are the cluster's aggregate CPU (MHz),
// memory (MB) and GPUs; one of capacity 0 (the GPUs of -cluster 100x0)
// does not count.
//
//   - A job is active from its arrival to its finish, waiting included: a
//     job the policy leaves in the queue holds share 0 where DRF may give
//     it some. (Dorm's A^t is the applications it runs; Dorm runs every
//     application it admits, so its queue is outside its model. Here the
//     queue is where a policy's unfairness shows.)
//   - Its share s_i^t is its dominant share (eq. 2): the largest share of
//     one resource that all its tasks hold together, restarts and
//     profiling included.
//   - Its DRF share ŝ_i^t is the dominant share fairshare.DRF gives it among
//     the jobs active at t: progressive filling one task at a time, from
//     their elastic bounds and weights, minimums first by priority then
//     namespace and ID, as planner/drf allocates (planner/drf's own
//     ranking sums its tasks' dominant shares, which is the same for
//     all-reduce jobs). Every policy is measured against DRF on the
//     elastic jobs, also fifo and tetris, which run the fixed request. It
//     is recomputed when a job arrives or finishes:
//     O((arrivals + finishes) × active jobs × log active jobs) per run.
//   - Its fairness loss l_i^t = |s_i^t − ŝ_i^t| (eq. 2): holding more than
//     the DRF share counts as well as holding less; the shortfall
//     max(0, ŝ_i^t − s_i^t) is the one-sided part.
//
// Per job (fairness.csv, JobFairness), each is averaged over the job's
// life, arrival to finish. Per policy (summary.json, the table; Fairness):
// Jain's index (Σx)²/(n·Σx²) over x_i = share_i ÷ DRF share_i of the jobs
// that had a DRF share; the cluster's fairness loss Σ_i l_i^t (eq. 2)
// averaged over the makespan and its maximum over time (what eq. 15 bounds
// and Dorm's Figure 7 plots); and the worst job's loss. Times are taken to
// the microsecond, so that the virtual clock's nanosecond rounding does not
// split one instant. DRF itself scores a Jain's index of 1 and a loss of 0
// whenever planner/drf's placement holds what it allocated
// (TestFairness_DRFItself).
//
// # Tenants
//
// A run may hold queues (Options.Queues, issue 32), stored in its server
// before any job. TenantQueues builds them for a workload of tenants
// (sim.Workload.Tenants; the philly-tenants workload): no quotas, static
// partitioning, or one cohort that borrows and reclaims. Tenants measures
// each queue's jobs from the run's allocation timeline against any
// queues' nominal quotas: mean and p99 JCT, the GPU time held, and
// guarantee violations, the GPU-seconds by which a tenant held less than
// its nominal while one of its jobs waited or ran below its minimum, and
// the longest such interval (TenantOutcome defines them exactly).
package simulate
