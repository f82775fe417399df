// Package straggler finds slow workers of running jobs and moves them to
// another node, as an option every algorithm can use: the server runs it
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
// The paper gives no persistence; a Tracker requires a worker to have been
// slow in every usage report of the job for Config.Window (60 s, the
// interval DLRover keeps between adjustments, D:232) and in at least
// Config.Reports (3) reports, so that one noisy measurement moves nothing.
// A worker that moves, or a job whose placement changes, starts again.
//
// Replacing a worker is moving it: Apply takes one worker off the slow
// worker's node, at its size, and puts it on the feasible node with the
// most free CPU that has room after the whole decision, recording a
// structs.TaskAction (ActionStragglerReplaced) with the reason. In Caravan
// every change of a job's placement is a checkpointed restart of the whole
// job, so the move costs one checkpoint and restart. A straggler with no
// other node to go to is left where it is, and Apply says so.
//
// Slow parameter servers (DLRover §5.4) are not handled here: the dlrover
// algorithm gives busy and hot servers more CPU.
package straggler
