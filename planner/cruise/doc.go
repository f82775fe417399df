// Package cruise is Cruise's Optimizer (Lee's dissertation, ch. 3): of
// the machines a parameter-server job is given, how many run workers and
// how many servers, and when to reconfigure a running job. The cost model
// and its estimator below (Cost, Estimate, Machine) live in
// planner/subtask, which drf reads too; this package names them.
//
// # Cost model (§3.2)
//
// The epoch time is the slowest worker's (eq. 3.1), C = max_i C^i, and a
// worker's is its computation and its communication (eq. 3.2),
// C^i = C^i_comp + C^i_comm, with
//
//	C^i_comp = C^i_w.proc·d_i                                      (eq. 3.3)
//	C^i_comm = ⌈d_i/B⌉·max(max_j m_j·w/b_ij, Σ_j m_j/b_ij)          (eq. 3.4)
//
// The text prints Σ_i in eq. 3.4's worker term; the bytes a worker i
// sends are its pulls from every server j, so we read it as Σ_j m_j/b_ij,
// as the worker-bound case above the equation (and Figure 3.2) writes it.
// Workers and servers run on disjoint machines, ‖w‖ + ‖s‖ = N (Figure
// 3.2's first constraint).
//
// On N homogeneous machines d and m partition evenly and the optimum is
// eq. 3.5: w* = argmin_w (D/w)·T(w) with T(w) = C_w.proc +
// (M/b)·max(1, w/(N−w))/B. Cost holds the two constants this needs,
// A = C_w.proc·D and K = (M/b)·D/B, with Time = A/w + K·max(1/s, 1/w);
// SplitWithin evaluates eq. 3.5 at every admissible w, O(N), as the
// text's analytical solver does. The ceiling ⌈d_i/B⌉ is dropped: Caravan
// sees neither D nor B, and the error is below one mini-batch per epoch.
//
// On machines that differ (Machine: speed 1/C^i_w.proc and bandwidth,
// relative to the reference machine Cost describes), TimeOn partitions d
// in proportion to speed and m in proportion to bandwidth, the heuristic
// the text uses for its heterogeneous grid search (§3.4.2), and keeps eq.
// 3.4's structure: worker i's server term is w·m_j/b_ij with m_j/b_ij =
// M/Σβ_servers, scaled by its ⌈d_i/B⌉ ∝ σ_i/Σσ, so it keeps the factor
// w·σ_i/Σσ that a per-link reading would drop. The text defines b_ij as
// "the bandwidth between worker i and server j" without saying how it
// follows from two machines' links; we take the server's link in the
// server-bound term and the worker's in the worker-bound term, the
// bottleneck each case names. SplitMachines solves Figure 3.2's role
// assignment exactly by enumerating how many machines of each type
// work, and falls back to a local search for many distinct machine
// types. SolveMIP is the text's own route (§3.2.3, §3.4.5: a MIP, which
// the text solves with Gurobi): Figure 3.2 with d and m free as well
// (EpochTime: m ∝ the servers' links, d equalising the workers' epochs),
// made linear by fixing the servers' per-mini-batch time to one of a
// grid of levels the program chooses among, and solved with GLPK's
// glpsol.
//
// # Estimator
//
// Cruise measures C_w.proc from workers' computation time (§3.2.2) and the
// communication from its metrics, smoothed by a moving average (§3.3.1).
// In Caravan the scheduler keeps that moving average of the samples'
// cpu_s and net_s (planner.Subtasks); Estimate inverts the model at the
// configuration they were measured at: A = cpu·w, K = net·min(w, s). Only
// K/A decides a split and a gain, so a trainer that reports per-mini-batch
// times rather than per-step ones gets the same decisions.
//
// # Optimizer policy (§3.3.1)
//
//   - Reconfigure only when the predicted gain 1 − T_new/T_now is at
//     least min_gain (default 5%, the text's threshold).
//   - Use extra resources opportunistically: with opportunistic (default
//     on), machines free after every job's base size go, first come first
//     served, to measured jobs up to their bounds, so N grows; a job that
//     arrives later reclaims them, and a job whose N fell below what it
//     runs on is rebalanced whatever the gain.
//   - Metrics are smoothed by a moving average (the scheduler's, above).
//
// The text's Optimizer waits for "a set of mini-batches" before it
// optimises; here a job is optimised as soon as the scheduler has a
// subtask average for it, and the min_gain threshold absorbs the noise
// of early samples. Elastic Runtime (§3.3.2: moving blocks, switching
// roles in place) is the driver's rescale; Caravan restarts from a
// checkpoint instead.
//
// # Choices where the text is silent
//
//   - A job's base size is its initial configuration W + S (job meta
//     InitialMeta, e.g. "27,5"; §3.4.3 starts jobs from a configuration a
//     user picked), else its workers' maximum; the most it may use is its
//     bounds' maxima together. Cruise is a single-job optimizer in the
//     text; across jobs we run first come, first served, never preempting
//     a base size.
//   - Tasks count as machines. Plan puts a job's servers and workers on
//     disjoint nodes when some have room, and shares nodes, saying so in
//     the reason, when none do (rather than leave the job waiting).
package cruise
