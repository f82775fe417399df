// Package sia is Sia's scheduling policy (Jayaram Subramanya et al., "Sia:
// Heterogeneity-aware, goodput-optimized ML-cluster scheduling", SOSP'23),
// for clusters that mix GPU types.
//
// Every round it builds the configurations of §3.2 for each GPU type of
// the request's nodes, fills the goodput matrix of §3.3 from each job's
// throughput model on each type, and selects at most one configuration
// per job by the integer program of Eq. (1), solved exactly (solve.go).
// The chosen configurations are then placed on nodes (place.go).
package sia
