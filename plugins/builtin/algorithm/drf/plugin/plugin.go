// Package plugin is the built-in drf algorithm (dominant resource fairness) under the
// plugin contract, as its plugin binary serves it.
package plugin

import (
	"github.com/caravan-sched/caravan/planner/drf"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/version"
)

// New returns the algorithm.
func New() algorithm.Algorithm { return algorithm.FromPlanner(drf.New(), version.Version) }
