// Package fifo is the first-come-first-served baseline: each job runs at its
// fixed request (its elastic maximum) in arrival order, never rescaled nor
// preempted. A job that does not fit waits, and later jobs that fit may
// start before it (no head-of-line blocking), so no job waits while there is
// room for it.
package fifo
