// Package tetris is the Tetris baseline (Grandl et al., SIGCOMM'14) as the
// Optimus paper evaluated it: jobs run at their fixed request (their elastic
// maximum), shortest predicted remaining time first, and each task goes to
// the node whose free resources align best with its demand (the largest dot
// product of the normalised demand and free vectors). The score packs
// large tasks where much is free, but it does not keep a job's tasks
// together: like tasks go each to the node with the most free, so the
// workers of a job spread one per empty node where fifo puts them on one
// (TestPlan_WorkersGoToTheFreestNodes). Remaining times come from the same
// fitted models Optimus uses. Running jobs are neither rescaled nor
// preempted.
package tetris
