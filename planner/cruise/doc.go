// Package cruise is Cruise's configuration of a parameter-server job (Lee's
// dissertation, ch. 3; the Cruise and Dolphin optimizers): of the machines
// a job is given, how many should be workers and how many servers.
//
// Its cost model of an epoch on w workers and s servers is
//
//	T(w, s) = A/w + K·max(1/s, 1/w)
//
// where A is the epoch's computation on one worker and K its
// communication through one server: computation splits over the workers,
// and each worker's pulls go through the servers, which bottleneck when
// fewer than the workers. Cost.Split gives the optimum on N homogeneous
// machines in closed form, SplitMachines searches it when machines differ
// (for callers that know their machines' speeds; Caravan's nodes carry
// none yet), and Estimate fits A and K from a job's measured subtask
// times. The algorithm Cruise runs jobs first come, first served at their
// fixed size, split as the cost model says for homogeneous nodes.
package cruise
