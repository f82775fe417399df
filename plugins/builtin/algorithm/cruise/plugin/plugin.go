// Package plugin is the built-in cruise algorithm (first come, first
// served, each job split between servers and workers by its cost model)
// under the plugin contract, as its plugin binary serves it.
package plugin

import (
	"github.com/caravan-sched/caravan/planner/cruise"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/version"
)

// New returns the algorithm.
func New() algorithm.Algorithm { return algorithm.FromPlanner(cruise.New(), version.Version) }
