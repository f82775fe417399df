// Package straggler finds slow workers and parameter servers of running
// jobs and moves them to another node, as an option every algorithm can use: the server runs it
// after the algorithm's decision (server/scheduler), so built-ins and
// plugins alike get it.
//
// The rule is Optimus §5.2 (papers/003, O:262-268): "if a worker is too
// slow (e.g., half speed from the median), we consider it as a
// straggler … We replace a straggler by launching a new worker." A
// worker's speed is the inverse of its own time per step
// (structs.TaskUsage.TaskStepTimeS), and a worker is slow when its speed
// is below Config.Ratio (0.5) times the median worker's. DLRover names
// the same problem (§5.4, D:222) but cures a slow worker by sending it
// fewer data shards, which Caravan has no counterpart of.
//
// Parameter servers follow DLRover §5.4 (D:222): "If the straggler has
// higher resource usage than other PS, it is quite possible to have an
// unbalanced workload on this PS. Elastic Trainer can mitigate the impact
// by adding more resources to the straggler PS. If not, it is more likely
// that there are problems with the physical machine. Then Elastic Trainer
// has to migrate the PS to a new machine." A server's speed is the
// inverse of its own busy time per step, and a slow server is moved only
// when its CPU is at most 1.1 times the median server's; more resources
// for a loaded one are the algorithm's to give (dlrover's busy and hot
// server rules).
//
// The paper gives no persistence; a Tracker requires a task to have been
// slow in every committed usage report of the job for Config.Window (60
// s, the interval DLRover keeps between adjustments, D:232) and in at
// least Config.Reports (1) of them. The leader commits a job's usage when
// some task's usage moves by 5% once its usage interval (30 s) has
// passed, so a report stands until the measurements move: a task slow at
// the start of the window and not committed since was measured within 5%
// of slow throughout, and one noisy measurement is corrected before the
// window ends. A task that moves, or a job whose placement changes,
// starts again.
//
// Replacing a task is moving it: Apply takes one task of the straggler's
// role off its node, at its size, and puts it on the feasible node with
// the most free CPU that has room after the whole decision, recording a
// structs.TaskAction (ActionStragglerReplaced) with the reason. In Caravan
// every change of a job's placement is a checkpointed restart of the whole
// job, so the move costs one checkpoint and restart. A straggler with no
// other node to go to is left where it is, and Apply says so.
package straggler
