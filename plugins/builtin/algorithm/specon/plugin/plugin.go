// Package plugin is the built-in specon algorithm (SpeCon's speculative
// migration over a base allocation) under the plugin contract, as its
// plugin binary serves it. Its bases are the other built-in algorithms.
package plugin

import (
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/planner/specon"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/version"
)

// New returns the algorithm.
func New() algorithm.Algorithm {
	return algorithm.FromPlanner(specon.New(builtin.Base), version.Version)
}
