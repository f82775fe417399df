// Package dorm is Dorm's utilisation-fairness optimiser (Sun et al.,
// "Towards Distributed Machine Learning in Shared Clusters: A
// Dynamically-Partitioned Approach", SMARTCOMP'17, §IV), solved as a
// mixed-integer linear program by GLPK's glpsol.
//
// Each round the algorithm builds problem P2 (eqs. 10–18) over the request's
// jobs (the paper's applications A^t) and nodes (its DormSlaves B) and hands
// it to glpsol as a CPLEX LP file:
//
//   - x_ij and p_ij: the workers and parameter servers of job i on node j,
//     integers (eq. 9). A Dorm container is one Caravan task; a PS job has
//     two kinds of container (its worker and server tasks), each with its
//     own demand vector d.
//   - eq. 10 (objective): Σ_k Σ_i Σ_j x_ij·d_ik / Σ_h c_hk over the
//     resource types M the cluster has (CPU, memory, and each device type
//     with at least one instance).
//   - eq. 6: per node and resource type, the tasks' demand stays within the
//     node's capacity (device instances counted by type).
//   - eqs. 7–8: n_min·z_i ≤ Σ_j x_ij ≤ n_max·z_i with a binary z_i, and the
//     same for servers. z_i is an addition to P2 (see below).
//   - eqs. 11–12: l_i ≥ s_i − ŝ_i and l_i ≥ ŝ_i − s_i. s_i is eq. 2's
//     dominant share, the largest share of one resource type the job's
//     tasks take together; it is linear for a job whose roles have the
//     same dominant type (every all-reduce job), and otherwise linearised
//     exactly with one binary per candidate type (s ≥ a_k, s ≤ a_k +
//     1 − y_k, Σ y_k = 1). ŝ_i is fairshare.DRF's theoretical DRF share of the
//     cluster's aggregate ("derived from DRF based on the algorithms
//     proposed in [18]"), the same measure `caravan sim` reports
//     (simulate.JobFairness).
//   - eqs. 13–14: M·r_i ≥ ±(x^{t-1}_ij − x_ij) for each job running now
//     (A^t ∩ A^{t-1}), r_i binary (eq. 18), M the job's largest bound.
//   - eq. 15: Σ_i l_i ≤ ⌈θ1·2m⌉ + e, m = |M|, e ≥ 0 an excess the
//     objective charges far more than any utilisation (see below).
//   - eq. 16: Σ_i r_i ≤ ⌈θ2·|A^t ∩ A^{t-1}|⌉.
//
// Placement is the MILP's per-node assignment. A job whose assignment is
// its current one keeps it (r_i = 0); others move through the server's
// ordinary checkpointed rescale.
//
// Choices where the text is ambiguous or silent:
//
//   - Eq. 15 is printed as ⌈θ1 × 2m⌉ and is implemented as printed: the
//     bound on the summed fairness loss is an integer (with three resource
//     types, 1 for θ1 = 0.1 and 2 for θ1 = 0.2, out of a largest possible
//     loss of 2m). §V's "Dorm-3 limits the fairness loss within 0.6"
//     (= 0.1·2·3) hints that the bound may be θ1·2m without the ceiling;
//     the ceiling is kept as printed. The sum runs over A_r^t, which the
//     text does not define; it is read as A^t.
//   - The paper requires every application to get at least n_min (eq. 8)
//     and, when P2 is infeasible, keeps the existing allocation. Caravan's
//     queue holds more jobs than fit, so a binary z_i lets the MILP leave a
//     job waiting (0 tasks): eq. 8 holds for every job it runs. A job left
//     waiting still counts in the fairness loss (s_i = 0), so the MILP
//     admits it whenever its minimum fits unless the loss budget forbids it;
//     such a job's reason starts with WaitingReason.
//   - Eq. 15 is elastic. When a job arrives every share ŝ shrinks, and
//     the running jobs eq. 16 does not let the MILP adjust keep shares
//     above their new ŝ; eq. 15 as printed is then often infeasible, and
//     the paper keeps the existing allocations (leaving the new job
//     waiting with room free). Here the MILP may exceed the bound by e at
//     a cost of 1000 per unit of loss, so it exceeds it only when eqs. 16
//     and 6 (or device and placement rules) leave no way to meet it, and
//     then by as little as they allow; Solve.Excess reports e, and a
//     solve with e > 0 is logged. Eq. 16 stays hard.
//   - When P2 has no answer all the same (infeasible: jobs on nodes that
//     left the cluster must move, more of them than eq. 16 allows; no
//     integer solution within the time limit; or an answer that fails
//     planner.CheckDecision), Dorm keeps the existing allocation, as
//     §IV-B says ("If there is no feasible solutions, Dorm would keep
//     existing resource allocations until more running applications
//     finish and release their resources"): running jobs keep their
//     tasks (KeptReason). Waiting jobs start at their minimum where the
//     rest of the cluster holds them, or wait: keeping alone would start
//     nothing with nothing running, round after round, where P2 hits its
//     time limit every round (as at 200 applications on 100 servers).
//     Only when that allocation no longer fits the cluster (a node left
//     or shrank) is the decision planner/drf's for the same request
//     (FallbackReason). The reasons and the logger say which and why.
//     With a time limit of a second or more glpsol stops itself and its
//     best integer solution so far is used (StatusFeasible).
//   - Eq. 10 sums utilisation over resource types with the same weight, as
//     printed; memory and CPU dominate a cluster with few GPUs only through
//     each job's demand.
//   - Device instances are counted by type per node (a job's device
//     constraints narrow the nodes, not the instances). The answer is checked
//     against the cluster's exact device semantics (planner.CheckDecision);
//     a solution that fails falls back to DRF.
//
// The paper's settings (§V-A): Dorm-1 θ1 = 0.2, θ2 = 0.1; Dorm-2 θ1 = 0.1,
// θ2 = 0.2; Dorm-3 θ1 = 0.1, θ2 = 0.1 (its table of thresholds is lost in
// the text; these follow from "Dorm-1 and Dorm-3 set θ1 to 0.2 and 0.1 with
// the same θ2" and "Dorm-2 and Dorm-3 set θ2 to 0.2 and 0.1 with the same
// θ1"). The option preset selects one.
//
// Plan runs glpsol, an external process, in a temporary directory: unlike
// the other algorithms it does I/O and its time is bounded by the
// time_limit option, not by the size of the request. For the same request
// it builds the same model (jobs sorted by namespace and ID), so its
// decision is deterministic unless the time limit cuts the search short.
package dorm
