// Package plugin is the built-in goodput-las algorithm (Pollux's goodput search with a least-attained-service priority) under the
// plugin contract, as its plugin binary serves it.
package plugin

import (
	"github.com/caravan-sched/caravan/planner/goodputlas"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/version"
)

// New returns the algorithm.
func New() algorithm.Algorithm { return algorithm.FromPlanner(goodputlas.New(), version.Version) }
