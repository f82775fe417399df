// Package placement turns task counts into per-node placements with the
// scheme of Optimus Theorem 1: nodes sorted by availability, and each job on
// the fewest of the most available nodes that can hold its parameter servers
// and workers spread evenly, which minimises the data each parameter server
// exchanges across the network. Callers place jobs smallest first.
package placement
