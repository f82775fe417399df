// Package fairshare is the share of a cluster each job is owed: the
// theoretical DRF allocation of the cluster's aggregate capacity (DRF),
// against which Dorm's fairness loss (eq. 2) and the simulator's fairness
// measures compare what jobs hold. It allocates, it does not place; the
// drf algorithm (planner/drf) grows and places jobs in the same spirit.
package fairshare
