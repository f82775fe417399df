// Package harmony is Harmony's job grouping as chapter 4 of Lee's
// dissertation writes it (../shared/papers/001_416fdd87c48c9dd5.txt, lines
// L707–L1176; L-numbers below are lines of that file), the two baselines
// it is evaluated against (§4.4.1), and the exhaustive oracle (§4.4.7).
//
// Jobs whose iterations alternate computation (COMP subtasks) and
// communication (COMM subtasks) are co-located in job groups, each group
// on machines of its own with one worker and one server of every job per
// machine (L1040), so that one job's computation overlaps another's
// communication (§4.3.1). Harmony's runtime interleaves the subtasks on
// each machine; this package only decides groups and machines.
//
// # Model (§4.3.2 "Performance Modeling", L827–L859)
//
// A job's profile (Job) is CPU1, its computation of an iteration on one
// machine, and Net, its communication. Caravan measures a job's subtasks
// at w workers (planner.Subtasks: cpu_s per worker, net_s per iteration);
// profile takes CPU1 = cpu_s·w and Net = net_s, the 3-tuple of L813 with
// eq. 4.2 undone. On a group g of m_g machines:
//
//	T_cpu_j   = CPU1_j / m_g                                    eq. 4.2 (L840)
//	T_j_itr_j = T_cpu_j + T_net_j
//	T_g_itr_g = max(Σ T_cpu_j, Σ T_net_j, max_j T_j_itr_j)      eq. 4.1 (L835)
//	U(g)      = [Σ T_cpu_j / T_g_itr_g,  Σ T_net_j / T_g_itr_g]  eq. 4.3 (L847)
//	U         = Σ_g m_g·U(g) / Σ_g m_g                          eq. 4.4 (L854)
//
// U(g) is a two-part vector with no weight between the parts (the α of
// §4.3.3, L996, is the disk-block ratio of data reloading). A group is
// job-bound (Figure 4.7b, L821) when one job's T_j_itr exceeds both sums.
//
// Choice: comparing U. The text compares utilisations as scalars ("U(G) >
// U_max", Algorithm 1) and says CPU utilisation is "treated more
// importantly than the network utilization" (L859) without a weight. We
// order U lexicographically: CPU first, network only to break a tie
// (Util.Better); relative gains (Util.Gain) likewise.
//
// Choice: eq. 4.4's denominator is Σ m_g. Within Algorithm 1 every machine
// is given to a group, so Σ m_g = M. Dynamic regrouping compares decisions
// that use different numbers of machines (a group whose jobs finished
// leaves idle machines); there we count idle machines as zero
// (Grouping.UtilisationOver over all machines), or leaving machines idle
// would never cost anything.
//
// # Algorithm 1: schedule (L871–L907), Group
//
// For n_j = 2 … |J_to_sched| (L4), J_to_group = J_to_sched[0:n_j−1] (L5);
// n_G* = argmin_{n_G} Σ_j |T_cpu_j(n_G) − T_net_j| with every group on
// M/n_G machines, so T_cpu_j = CPU1_j·n_G/M ("m_g ∝ 1/n_G and thus
// T_cpu ∝ n_G", L907) (L6, NumberOfGroups); AssignJobs (L7); AllocateMachines
// (L8); stop at the first n_j whose U(G) is not better (L10–13).
//
// Choices: (a) [0:n_j−1] is read inclusive, n_j jobs, so that the last
// iteration considers every job; the prose's "starting from a single job"
// (L871) would give n_j−1 jobs and never all of them. A single job is
// grouped alone. (b) L14 returns G, which after the break is the grouping
// that did not improve; the prose (L907) runs "the optimized set of job
// groups", so Group returns the best one. (c) J_to_sched (L2) is the union
// of profiled, paused and running jobs with no order given; Caravan takes
// them in arrival order (submit time, then namespace and ID), first come,
// first served. (d) n_G* ranges over [1, min(|J_to_group|, M)] with
// M/n_G real-valued, the smallest n_G on ties; the sum is convex in n_G,
// so a binary search on its slope finds it.
//
// Jobs after the admitted prefix wait (paused, reason WaitingReason), as
// the dissertation queues them; they do not run outside the groups.
//
// # Algorithm 2: assignJobs (L909–L969), AssignJobs
//
// L2: sort by T_j_itr descending. L4–11: fill group i while it has fewer
// than ⌊|J|/n_G⌋ jobs, popping the first job with T_diff_j × S_diff_g ≤ 0
// (L7), else the first, largest, job (L8–9). L12–22: the remaining jobs,
// by |T_diff| descending, each to g* = argmin |T_diff_j + S_diff_g| (L14);
// when the job is longer than every job of g* (L16) and g* ∪ {j} would be
// job-bound (L17), g* is excluded and the next best taken (L18–19).
//
// Choices: (a) L6 writes "while |g| ≤ ⌊|J|/n_G⌋", which would put one job
// more in every group and leave a negative remainder; the prose says each
// group is "filled up with ⌊|J|/n_G⌋ jobs" and the remaining
// |J| − n_G·⌊|J|/n_G⌋ jobs are placed after (L967–969), so a group takes
// exactly ⌊|J|/n_G⌋. (b) Machines are allocated after Algorithm 2, so
// T_cpu, T_diff and T_j_itr are taken at the equal DoP M/n_G of
// Algorithm 1. (c) At equal DoP each group's first job is the largest left
// (S_diff = 0 admits any job), so a remaining job is never longer than all
// jobs of a group and L15–22 does not fire; it is implemented as written.
// When every group is excluded the job joins the first g* (the text does
// not say). (d) With n_G = |J| every group is one job whatever the order,
// and AssignJobs returns that directly.
//
// Fine-tuning (L971, fineTune): g_u = argmax |S_diff_g|, its most
// complementary group argmax_{g≠g_u} |S_diff_gu − S_diff_g|, and the pair of
// jobs whose swap minimises the two groups' imbalance, repeated "until
// there are no possible swap cases". Choices: the imbalance of the two is
// |S_diff_gu| + |S_diff_g|, a swap must lower it, and a swap that would
// make either group job-bound is not taken (Algorithm 2's aim, L909); when
// the best pair of g_u and its complement does not help, fine-tuning ends
// (the next round would pick the same two groups). Each swap lowers
// Σ|S_diff|, so it ends; 4·|J| swaps cap it as a guard.
//
// Machine allocation (L973, AllocateMachines): one machine per group, then
// one at a time to the group that "needs additional machines the most",
// the most computation-intensive: the largest S_diff_g = Σ CPU1/m_g − Σ Net
// on its machines so far (eq. 4.2: a machine shortens its computation).
// Choice: every machine is given (the text states no stop). For speed the
// allocation gives in one step all machines whose keys lie above a
// threshold found by binary search, then the rest one at a time; the
// result is the one-at-a-time greedy's, machine for machine
// (TestAllocateMachines_AsGreedy).
//
// # Profiling (§4.3.2 "Profiling", L809–L825)
//
// A job with no valid profile is profiled. At initialisation, with no
// groups, jobs run "naively grouping and allocating the smallest number
// of machines for each job" (L813): each alone at its minimum, one worker
// and one server per node, as many as fit. Later a new job is profiled "in
// a job group with the smallest number of machines or a job group that is
// already profiling an another new job" (L825): we try groups already
// profiling first, then by fewest machines, running it on the group's
// nodes. Choices: the text has no free machines after initialisation
// (every machine belongs to a group); in Caravan machines can be free
// (a whole group finished), so a new job is profiled alone on free
// nodes first, as at initialisation. When neither fits, it runs at its
// minimum wherever there is room, else waits. The initial phase "terminates
// when the profiling for all initially started jobs completes" (L813):
// while no group formed by Harmony exists and a job started alone is
// still being profiled, everything stays; then Algorithm 1 runs over all
// of them and its grouping is applied with no comparison to the naive
// one (L776: a profiled job "is assigned to a job group by the job
// scheduler"; at one machine each, the naive groups' CPU utilisation is
// high, so a comparison would keep every job at its minimum).
//
// # Dynamic regrouping (L975–L983)
//
// Plan is stateless: the groups are read from current placements (jobs on
// the same set of nodes form a group), and what a group held when last
// planned from the reason Harmony wrote into its jobs' placements (count
// of jobs and sums of CPU1 and Net). A group with fewer jobs now than
// recorded lost a job; the finished jobs' profile is the recorded sums
// less the current ones.
//
//   - Job completion (case 2): a paused or newly profiled job (the text's
//     "profiled/paused jobs") "similar in terms of
//     iteration time and comp/comm ratio" replaces the finished one; else "a
//     bunch of jobs … whose the sum of iteration times and the ratio of
//     respective sum of computation and communication times are similar";
//     "similar" is within Similarity (default 5%, L979). Choice: similar is
//     a relative difference within Similarity of both T_j_itr on the
//     group's machines and T_cpu/T_net; the set is chosen greedily, longest
//     first, while its summed iteration time stays within bounds.
//   - Otherwise Algorithm 1 runs over the waiting jobs and the jobs of a set
//     of groups, on their machines and the free ones: first the group of
//     the finished job plus the group with the fewest jobs, then one group
//     more (the fewest jobs next) at a time. A decision involving more
//     jobs is preferred only when it gains MinGain (default 5%) over the
//     one with fewer, and none is applied when it gains less than MinGain
//     of U over keeping the groups (L979). Choices: free machines are
//     treated like a finished group's (they are where a group whose jobs
//     all finished was); groups profiling a new job are left alone; when
//     there is no group with a lost job but free machines and waiting jobs,
//     the first decision is Algorithm 1 on the free machines alone.
//   - New job (case 1): "after profiling, the scheduler handles the job
//     only when there is no other profiled/paused jobs … adding it to a
//     proper group that maximizes U or let it wait if it does not improve
//     U" (L979). A newly profiled job carries on where it was profiled
//     until it is handled (L813: "the jobs carry on with their execution,
//     until they are later paused or migrated"); when no other profiled
//     job waits, each newly profiled job leaves its group and joins the
//     group where U is highest, or waits.
//
// Jobs moved by a decision run one worker and one server on every node of
// their group, within their bounds (a job whose maximum is below m_g uses
// only part of the group; the model assumes all of it). A grouped job
// whose group's nodes lack room for its tasks waits, with WaitingReason.
//
// # Baselines (§4.4.1, L1013–L1036)
//
// Isolated (L1017): "disjoint sets of resources for each distinct job",
// maximising "the CPU utilization rates … while reducing the network
// overheads that occur with lower DoP". A job's CPU utilisation alone,
// T_cpu/(T_cpu + T_net), only falls with its DoP; we take the largest DoP at
// which it stays CPU-bound, ⌊CPU1/Net⌋ (IsolatedDoP), within its bounds;
// jobs wait first come, first served. Colocated (L1019–1034, Gandiva):
// jobs share machines with no grouping and no coordination, at most
// NaiveJobsPerNode (two) a machine, as §4.1 found three run out of memory
// (Figure 4.3); each at its isolated DoP. The dissertation reports the
// best and worst of a brute-force search, which is not possible at 80
// jobs; the option order stands in for them: best puts a job where it
// balances its machines' computation and communication the most
// (Algorithm 2's imbalance |T_diff + S_diff|), worst the least, spread
// (the default) on the machines with the most free CPU.
//
// # Oracle (§4.4.7, L1118–L1137)
//
// Oracle tries every partition of the jobs and every division of all the
// machines, for small instances. Over 60 random instances of 2–6 jobs on
// 2–8 machines, Group's CPU utilisation is 3.4% below the oracle's on
// average and 25% at worst (TestGroup_AgainstOracle); the dissertation
// reports "up to around 2%". Most of the gap is in the partition: the
// best division of the machines among Group's own groups closes only 0.36
// points of it; where it is large, n_G* (equal DoP per group) chose one
// group where the oracle makes two. Grouping 8,000 jobs on 10,000 machines
// (BenchmarkGroup) takes about 0.09 s on random jobs and 3.5–4.1 s when
// every prefix raises U (the dissertation: within 5 s); see
// planner/README.md.
//
// Not implemented: dynamic data reloading (§4.3.3) is the runtime's
// memory management, not a placement decision, and the memory limit on
// jobs per group that §4.4.4 (L1082) mentions.
package harmony
