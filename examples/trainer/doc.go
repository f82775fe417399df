// Trainer is Caravan's example training program: data-parallel SGD of
// L2-regularised logistic regression on a synthetic dataset, with
// parameter servers, as Caravan runs it on Nomad. It is small but real:
// the processes exchange parameters and gradients over TCP, the loss
// falls, and checkpoints survive a rescale to another shape.
//
// One binary plays every role. CARAVAN_ROLE=ps serves a slice of the
// parameters; CARAVAN_ROLE=worker computes gradients, and worker 0, the
// chief, also evaluates the loss, reports samples to Caravan's collectors
// (collector/client), checkpoints on the checkpoint signal, every
// CARAVAN_CHECKPOINT_INTERVAL and when stopped, and decides
// when training has converged. With CARAVAN_COORDINATOR_ADDR, workers ask
// the node's subtask coordinator (collector/coord) before each pull,
// computation and push, so that co-located jobs take turns. See README.md
// for the environment it reads, the files it writes and the numbers it
// reaches.
package main
