// Package roundrobin is the fixed initial placement of SpeCon's evaluation
// (../shared/papers/004_4e1d1f6c0cd4448a.txt, §VI-A, "workload are evenly
// distributed based on the number of containers ... container 1, 2, 3, 4
// ... is hosted by Worker-1,-2,-3,-4 respectively. Then, container 5, 6,
// 7, 8, rotate to another around of workers"), the placement under both the
// paper's default scheduler (DS) and SpeCon. Each job runs at its fixed
// request (its elastic maximum) and is never rescaled, preempted nor moved;
// waiting jobs start in arrival order, each task on the next node in turn
// (the request's node order) that has room for it.
//
// # The turn
//
// The planner is stateless and the request holds only active jobs, so the
// turn is read from the cluster, not counted: the first job to start goes
// to the node after the last node (in node order) of the newest running
// job, by arrival (submit time, then creation index, then namespace and
// ID), or to the first node when no job runs. Each task then advances the
// turn past the node it took. This is the paper's rotation, job k on node
// ((k − 1) mod N), as long as the newest job still runs where it started
// when the next one comes. It is not when that job has ended, or a job
// whose start is in flight is held out of the request (the scheduler plans
// around it), or SpeCon moved it; the turn then restarts from the newest
// job that runs.
//
// A job whose tasks do not all fit in turn is placed by the Theorem 1
// placer (planner/placement), as fifo places jobs, and waits only when
// that fails too, so no job waits while there is room for it.
//
// Plan is deterministic for the same request.
package roundrobin
