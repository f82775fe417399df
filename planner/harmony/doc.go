// Package harmony is Harmony's job grouping (Lee's dissertation, ch. 4):
// jobs whose iterations alternate computation and communication are
// co-located in groups, each group on its own machines with one worker and
// one server of every job per machine, so that one job's computation
// overlaps another's communication.
//
// The dissertation's text was not available to us; the model follows the
// authors' Harmony runtime (a machine runs one computation and one
// communication subtask at a time, a job's subtasks in sequence) and what
// the issue states of the equations. With C_j the computation and N_j the
// communication of an iteration of job j:
//
//	T_g   = max(Σ C_j, Σ N_j, max_j (C_j + N_j))       group iteration (4.1)
//	C_j   = C1_j / m_g                                  computation on m_g machines (4.2)
//	U_g   = α·ΣC_j/T_g + (1−α)·ΣN_j/T_g                 group utilisation (4.3)
//	U     = Σ_g m_g·U_g / M                             cluster utilisation (4.4)
//
// with α > ½ weighting CPU above network. A group whose time is set by one
// job's own C + N is job-bound: co-location buys nothing there.
//
// Group (Algorithms 1 and 2) considers a prefix of the jobs in arrival
// order, doubling it while utilisation improves, tries several numbers of
// groups, puts each job in the group whose imbalance it best offsets,
// gives groups machines where their CPU and network balance, and
// fine-tunes by moving and swapping jobs between groups. Oracle finds the
// best grouping by exhaustive search, for small instances. Harmony, the
// planner.Algorithm, places the groups on nodes and regroups running jobs
// only when that gains at least 5%; Isolated is the baseline it is
// measured against.
package harmony
