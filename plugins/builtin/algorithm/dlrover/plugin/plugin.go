// Package plugin is the built-in dlrover algorithm (DLRover's resource
// optimisation from measured usage) under the plugin contract, as its
// plugin binary serves it.
package plugin

import (
	"github.com/caravan-sched/caravan/planner/dlrover"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/version"
)

// New returns the algorithm.
func New() algorithm.Algorithm { return algorithm.FromPlanner(dlrover.New(), version.Version) }
