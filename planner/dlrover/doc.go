// Package dlrover is DLRover's resource optimisation (Wang et al., "DLRover:
// An Elastic Deep Training Extension with Auto Job Resource
// Recommendation", §4; papers/002, cited as D:line) as a Caravan algorithm:
// it sizes a parameter-server job's workers and servers, counts and CPU
// and memory per task, from what the job's tasks were measured to use
// (planner.Job.Usage), in three stages (§4.2, D:150-166).
//
// # Stages
//
// Plan infers a job's stage from the request alone, so that it keeps no
// state between rounds and a new leader or a restarted plugin loses
// nothing:
//
//   - sample (D:156): a job that runs nothing and was never measured at
//     its sampling shape runs it: its minimum (one worker and one server
//     unless its bounds say more, A5) at the roles' initial sizes, which for
//     a cpu range is its maximum (structs.ResourceRange.Initial), capped at
//     C_max (A6), and the role's initial memory (A7). It stays there until
//     the usage at that shape (JobUsage.Shape) has a measurement.
//   - optimize (D:158): a job running unsized at its sampling shape, once
//     measured, gets Initial's configuration: ŵ is the measured CPU of a
//     worker, ŝ the servers' total CPU per worker at the sampling shape.
//   - adjust (D:164-166): any other running job, at most once per
//     MinInterval after its placement began (planner.Job.Since): servers
//     above PSUtil get more CPU, a hot one is replaced, and while servers
//     have CPU to spare the job gains workers. OOM kills are handled at
//     once, in every stage.
//
// A job's target that does not fit leaves it where it runs if that still
// fits, else at its minimum at the roles' sizes, else paused. Jobs are
// planned in arrival order (submit time, then namespace and ID).
//
// # Equations
//
//   - eq. 1 (D:123), the throughput model R = Σ B/(t_IO +
//     W_compute/(r·min(w_i,ŵ)) + W_update/(r·min(s_total,ŝ))), and eqs. 2-6
//     (D:127-131), the problem it maximises under a job cap C_total
//     (eq. 3), servers that are no bottleneck (eq. 4), a pod cap C_max
//     (eq. 5) and whole cores (eq. 6), are not solved directly: as the
//     paper does, they are split into eqs. 7-9 (D:139-141) and solved in
//     closed form by
//   - eq. 10 (D:145), N_w = C_total/(ŵ+ŝ), rounded down, and
//   - eq. 11 (D:146), s_total = C_total − N_w·ŵ; then N_ps = s_total/s
//     with s = 16 cores (D:148, D:158), rounded down, and w = ⌈ŵ⌉ (Initial).
//   - ΔN_w = min(s_total/ŝ, √K) − N_w with ŝ = ŝ_total/N_w (D:164)
//     (GrowWorkers).
//   - s = min(ŝ_hot/ŝ_total·ŝ·N_w, C_max) for the server that replaces a
//     hot one (D:166) (HotPSCPU).
//   - the 0.9 utilisation above which servers get more CPU, and OOM: a
//     worker restarts with double memory, servers double their count
//     (D:156).
//   - at least 60 s between two adjustments of a job (§6.1, D:232).
//
// TestInitial_Table1, TestGrowWorkers and TestHotPSCPU check them on the
// paper's Table 1 (D:168-173), its "+2 workers" and its "24 CPU cores"
// examples.
//
// # Choices where the paper is silent or ambiguous
//
//   - A1, K: undefined in the paper. Option k; by default the job's worker
//     maximum squared, so that √K is its elastic bound. The xDeepFM "+2
//     workers" example needs √K ≥ 10.
//   - A2, roundings: N_w and N_ps down (at least 1), w up, s_total/ŝ in
//     ΔN_w up: the only ones that reproduce Table 1 and the "+2" example.
//     s_total in ΔN_w is the servers' configured CPU.
//   - A3: the optimize text's N_w = s_total/ŝ is implied by eq. 10 with
//     eq. 11 (N_w·(ŵ+ŝ) ≤ C_total gives s_total ≥ N_w·ŝ), so only eq. 10
//     is computed.
//   - A4: the strict < of eqs. 3-5 and 8 is read as ≤: Table 1's W&D row
//     uses exactly 200 cores, and sampling runs at w = C_max.
//   - A5-A7: sampling at the job's minimum shape, the roles' initial CPU
//     (a range's maximum) capped at C_max, and initial memory. A minimum
//     of more than one worker samples there; ŝ is then the servers' CPU
//     per worker.
//   - A8, how much CPU a server above 0.9 gets: double, up to C_max, its
//     range and C_total; when none can grow, one more server.
//   - A9, what is hot: above 0.9 and at least hot_ratio (1.5) times the
//     median server's CPU, with two servers or more. One hot server is
//     replaced per adjustment, the hottest; the replacement is not held
//     to C_total, as the paper's own W&D example (216 cores) is not.
//   - A10: a worker's OOM resizes that task only (an entry of its own on
//     its node), not the role.
//   - A11: the paper doubles the servers on any server OOM, the issue on
//     repeated ones: ps_oom_threshold, default 2 kills in the job's
//     current run (the issue); 1 is the paper's rule. At the server
//     maximum, the killed servers' memory doubles instead.
//   - A12, new workers' memory: the most a running worker used, plus
//     mem_margin (0.2, from DLRover's open-source brain, not the paper).
//   - A13: DLRover launches workers beyond C_total as preemptible; Caravan
//     has no preemptible tasks, so growth stops at C_total and the reason
//     says so.
//   - A15, s = 16: option ps_cpu.
//   - A16, cores to MHz: option core_mhz, else the smallest cpu.frequency
//     of the nodes, else 1000.
//   - D:179 also allows optimizing after 100 steps; Caravan counts a
//     job's steps over all its runs, so only the 60 s rule is used.
//   - OOM handling does not wait for the 60 s: the killed task does not
//     run until it is resized. A kill is stale, and ignored, when it came
//     before the current placement ran (TaskUsage.LastOOM < Since) or at
//     another memory than the task's entry now gives.
//   - A size equal to the role's own is written as no size, so that a job
//     is never restarted for a change of notation; a target with the same
//     tasks at the same sizes as what runs keeps the job where it runs.
//   - Only a role whose cpu or memory is a range is sized; a fixed one
//     runs at its size, and the reason notes an OOM it cannot cure.
//   - All-reduce jobs have no servers: eq. 10 with ŝ = 0 sizes their
//     workers, and only the OOM rule adjusts them.
//
// Plan is deterministic: the same request gives the same decision in any
// job order. A DLRover is not safe for concurrent use.
//
// # Baselines
//
// Autoscale is §6.3's two baselines (D:254), which `caravan sim` runs
// beside the algorithm: autoscale (Or et al., 2020: workers only, a step
// at a time while the scaling efficiency exceeds 0.3) and optimus-steps
// (Optimus adding a step of servers or of workers, whichever its fitted
// speed model gains more), both over the roles' sizes as they are (Table
// 2's in the paper's experiments), capped at C_total and stepping every 3
// minutes. Unlike DLRover they keep state between rounds.
package dlrover
