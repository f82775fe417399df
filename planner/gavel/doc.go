// Package gavel is Gavel's heterogeneity-aware max-sum-throughput policy
// (Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for
// Deep Learning Workloads", OSDI'20) as Sia's evaluation runs it as a
// baseline (Subramanya et al., "Sia", SOSP'23, §4.2–§4.3; artifact
// github.com/siasosp23/artifacts, sia-simulator/gavel.py,
// policies/max_sum_throughput.py and policies/policy.py), written anew
// for Caravan.
//
// Jobs are TunedJobs (§4.3): each runs at its fixed request
// (planner.Job.FixedRequest, the workload's num_replicas, which the
// simulator makes the jobspec's elastic worker bounds) and its global
// batch, never rescaled, and never on two GPU types at once. A GPU type
// is the model of a node's GPUs (structs.Node.GPUType); nodes without
// GPUs are a type of their own.
//
// Each round (Plan):
//
//   - Throughput (gavel.py predict_throughput): a job's optimizer steps a
//     second at its request on each type, its workers packed on as few of
//     the type's nodes as hold them, from its throughput model on that
//     type (planner.Job.PerfByType), else its model of all types
//     together (planner.Job.Perf), else 1 on every type: a job without a
//     model counts the same wherever it runs. A type whose nodes cannot
//     hold the request even empty is not among the job's choices.
//   - Program (max_sum_throughput.py): the time fraction x(j,t) of every
//     job on every type that maximises Σ throughput·x, within each type's
//     GPUs (Σ_j GPUs(j)·x(j,t) ≤ GPUs(t)) and each job's time (Σ_t x ≤ 1),
//     solved exactly by the simplex method (gonum), rounded to 5
//     decimals as the artifact rounds. Two cases need no simplex: every
//     job fits on its one best type at once, and one GPU type, where the
//     program is a fractional knapsack (lp.go).
//   - Priorities (gavel.py update_priorities): x(j,t) over the share of
//     type t's time job j has received, 0 where x is 0.
//   - Rounding (gavel.py schedule_jobs_on_workers): pairs in descending
//     priority (then x); in that order a job not yet chosen is chosen for
//     the pair's type if its GPUs fit the type's GPUs left. On each type
//     the chosen jobs that run there keep their placement, and the
//     others, largest first, are placed on its nodes.
//   - Time received (gavel.py add_jobs and optimize): every job starts
//     with half a round on every type, which the type's total takes too;
//     a job is credited, on the type it ran on, the time between two
//     requests, as is that type's total.
//
// Rounds are the server's: Sia's evaluation runs Gavel every 360 s (§4.2;
// run_experiment.sh --interval=360), the scheduler block's interval. The
// option round (DefaultRound, 360 s) only sets the starting credit.
//
// Deviations, each for a stated reason:
//
//   - Gavel keeps state between rounds (the time each job has received
//     on each type), as the artifact does: its priorities are defined by
//     it. A new leader or a restarted plugin starts every job afresh.
//     What ran is read from the jobs' current placements, and the credit
//     is the time that passed, where the artifact credits its own decision
//     a full round.
//   - The artifact solves the program with ECOS, an interior-point
//     method, whose answer on a tie (several allocations of the same
//     total throughput, as between identical jobs) lies inside the set of
//     best allocations and so shares time among the tied jobs; the
//     simplex method returns a corner of that set, which gives one of
//     them all the time. Ties are broken the same way every round (by
//     arrival), so tied jobs under contention run first come, first
//     served here, where the artifact time-shares them.
//   - The artifact keeps running jobs where they run one size at a time,
//     largest first, after the larger jobs took their GPUs, so a smaller
//     running job can be moved (restarted) to make room for a larger new
//     one; here every chosen job running on its type is kept before any
//     is placed: the chosen jobs' GPUs fit the type by count, and a
//     restart a job does not need is time lost. Jobs still move between
//     types and are preempted as the priorities say.
//   - The artifact gives a job a throughput of 0.1 on a type too small
//     for it; here that pair does not exist (it could never be chosen).
//   - Caravan's tasks take CPU, memory and devices and have constraints:
//     a type's nodes are a cluster of their own (planner.Cluster) and a
//     chosen job is placed exactly (planner/placement, the fewest of the
//     most available nodes, where the artifact fills servers in order).
//     A job whose GPUs fit the count but whose tasks do not fit the
//     nodes is placed afterwards in queue order on a type with room for
//     it, so that no job waits while its request fits on one type.
//   - A job that asks for no GPU is outside Gavel's model: it keeps its
//     placement or runs at its request on any nodes (of any type, or
//     none), in the room the GPU jobs leave, in arrival order.
package gavel
