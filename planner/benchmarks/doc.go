// Package benchmarks measures the planner at the scale of the Optimus paper
// (4,000 jobs, about 100,000 tasks, 16,000 nodes) and beyond. It holds only
// benchmarks; see planner/README.md for the numbers and how to reproduce them.
package benchmarks
