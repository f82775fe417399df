// Package tiresias is Tiresias's discretized two-dimensional
// least-attained-service scheduler (2D-LAS; Gu et al., "Tiresias: A GPU
// Cluster Manager for Distributed Deep Learning", NSDI'19), as the Pollux
// artifact implements it for its baseline (OSDI'21 artifact, simulator/
// tiresias.py, Apache 2.0). The paper's text is not among shared/papers;
// what this package does is what that implementation does.
//
// A job's attained service is the GPU time it has held (GPUs × time,
// its two dimensions; planner.Job.AttainedService). Jobs sit in two
// priority queues: a job starts in the first and moves to the second once
// its attained service reaches QueueThreshold (16 GPU-hours, the
// artifact's). Jobs run at their fixed request (their elastic maximum,
// as fifo runs them), never rescaled. Every round, jobs are admitted in
// queue order, the first queue before the second and each in arrival
// order, while the cluster's aggregate free capacity holds their
// request; a job whose request does not fit is skipped and later jobs
// may still be admitted (no head-of-line blocking). A running job that is
// admitted keeps its placement; one that is not is preempted (paused,
// resuming later from its checkpoint). Admitted jobs that do not run are
// placed in queue order on the fewest of the most available nodes
// (planner/placement); then any job turned away whose request fits the
// room left is placed too, so that no job waits while there is room for
// it (the aggregate check can turn away a request that fits, when running
// tasks take less than their templates).
//
// Differences from the artifact's implementation: it keeps its queues as
// state and orders the second queue by when jobs were demoted; Plan is a
// function of the request alone, so the second queue is in arrival order
// too. Attained service is reset never (the artifact's starvation
// handling, which resets it, is off there too: solve_starvation = 0).
// The artifact counts GPUs alone; a request here is checked against
// every resource its tasks take.
package tiresias
