// Package goodputlas is Caravan's goodput-driven policy for adaptive
// jobs, goodput-las: Pollux's search (planner/pollux: goodput from each
// job's fitted throughput model and gradient noise, the batch that
// maximises it at every placement, restart penalties, one distributed job
// a node) with a least-attained-service priority, as Tiresias's 2D-LAS
// gives one, in two places:
//
//   - Objective: each job's term of the power mean of speed-ups (p = −1)
//     is weighted by s₀/(s₀ + a), a the GPU time it has held
//     (planner.Job.AttainedService) and s₀ the service scale (four
//     GPU-hours). A job that has held little counts more, so the search
//     gives it more of the cluster; a long job's weight falls as it runs.
//     Under p = −1 with linear speed-ups, the optimum gives a job GPUs in
//     proportion to the square root of its weight.
//   - Order: jobs take node capacity in the search's repair in order of
//     attained service, least first, then arrival (the Pollux artifact's
//     own order; Caravan's pollux keeps arrival order). When the cluster
//     is short, the jobs that have held least keep their GPUs.
//
// Why: mean JCT on the Pollux workloads is dominated by many short jobs
// among few long ones, whose lengths the scheduler cannot know in
// advance; attained service is the known proxy (jobs that have run long
// tend to run longer), which Tiresias uses alone and Pollux not at all.
//
// Plan is deterministic for the same request and keeps no state between
// rounds.
package goodputlas
