// Package specon is SpeCon's speculative container scheduling (Mao et al.,
// ../shared/papers/004_4e1d1f6c0cd4448a.txt, §V) as a Caravan algorithm.
// SpeCon decides where jobs run, not how large they are: a base algorithm
// (option base, fifo by default) sizes and first places every job, and
// SpeCon then moves running jobs whose training progress has converged
// away from workers whose other jobs still progress (Algorithm 2), and
// rebalances converged jobs onto idle or lightly loaded workers
// (Algorithm 3). A move is an ordinary change of placement: the scheduler
// and the driver checkpoint the job and restart it on its new node.
//
// # Algorithm 1: progress categories (Categorize)
//
// The planner is stateless, so Categorize replays the container monitor
// over the job's reported progress (planner.Job.Progress: the loss its
// trainers report, with times) on a grid of the categorization interval
// (default 30 s) from its first point. E(t_m) is the newest reported loss at
// or before t_m; the gain G(t_m) is |E(t_m) − E(t_{m−1})| (line 5). Lines
// 6–12 move a job PC → WC → CC when its gain is below α and below the
// previous gain; lines 17–18 keep its category when the gain is below α but
// not falling; lines 19–22 reset it to PC when the gain exceeds α. A job in
// CC whose gain falls again (line 13) requests reallocation (line 16) when
// more than one job is in PC or WC (line 15).
//
// Choice: line 15 writes |PC| + |WC| > 1 without the w_i subscript every
// other set of Algorithm 1 carries, so by default it counts the jobs in PC
// or WC over the whole cluster; option line15 = node counts those on the
// requesting job's worker (|PC_wi| + |WC_wi|), the reading SpeCon had
// before (planner/README.md measures both).
//
// Choice: α is "a percentage value" (§V-A) and loss scales differ between
// jobs, so G is relative, |ΔE| / |E(t_{m−1})|; α = 0.01 is 1% per interval.
//
// Choice: lines 10–12 of the listing move the job PC → WC again, a
// misprint; the prose says WC → CC, which Categorize does.
//
// Choice: the first gain has no G(t_{m−1}) to compare with and only seeds
// it. A gain exactly α with G(t_m) < G(t_{m−1}) matches no branch and keeps
// the category.
//
// # Algorithm 2: speculative scheduling (state.schedule)
//
// For each requesting job, in (namespace, ID) order: S_w = |PC_w|·w_pc +
// |WC_w|·w_wc + |CC_w|·w_cc per node (line 3; w_pc = 2, w_wc = 1.5, w_cc =
// 1 from §VI-A2), counting the jobs of the decision so far, the moving job
// on its host. T is the least-scored nodes (lines 4–7); the job stays when
// its host is in T (lines 8–10), moves to the one node of T (lines 13–16),
// or to the node of T with the least R(w, t) (lines 17–21). R(w, t) is the
// node's dominant used share of CPU, memory and devices under the decision;
// node order breaks ties.
//
// Choice: a node is a candidate only if the job's tasks fit on it now (or
// it is the job's host): Caravan never over-commits a node, whereas the
// paper's containers time-share a worker's CPU.
//
// # Algorithm 3: rebalancing (state.rebalance)
//
// Runs every round after Algorithm 2 (option rebalance = false turns it
// off). D holds the running, migrated, not yet rebalanced jobs with d = now
// − t_cj; bf = ⌊Σ|w_i| / |W|⌋. With idle nodes, each takes the job of least
// d while it has fewer than bf jobs (lines 10–18); otherwise each node with
// fewer than bf − 1 jobs takes the job of least d from a node that has not
// (lines 19–31).
//
// Choices: line 27 tests |w_i|, the source; we read it as |w_j|, the
// target, as the prose says ("assigns … to w_i which has room"). Counts are
// updated after each move. Each node of T takes at most one job per round.
//
// # Jobs and nodes
//
// The paper's container is one job on one worker. A Caravan job may span
// nodes; it counts on each node it has tasks on (scores, |w_i|) but SpeCon
// moves only jobs whose tasks are all on one node and which run there now,
// as the base kept them.
//
// # Migrated at most once
//
// Algorithm 1 line 3 monitors only jobs with c.migrated = False, and §V-A
// says a container is reallocated at most once. Once Algorithm 2 decides on
// a job (move or stay), its placement's reason starts with "specon:
// converged at <t_cj, Unix ns>", and SpeCon carries that mark over every
// round while the job runs (the server hands the running placement, with
// its reason, back as planner.Job.Current). A marked job is never monitored
// or scheduled again; Algorithm 3 may move it once more and then adds
// ", rebalanced" to the mark, after which it never moves again. So a job is
// moved at most once by Algorithm 2 and at most once by Algorithm 3. A job
// the base pauses loses its mark.
//
// Plan is deterministic for the same request. The base runs with its
// default options.
package specon
