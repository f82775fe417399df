// Package plugin is the built-in tiresias algorithm (Tiresias's two-queue least attained service, at fixed requests) under the
// plugin contract, as its plugin binary serves it.
package plugin

import (
	"github.com/caravan-sched/caravan/planner/tiresias"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/version"
)

// New returns the algorithm.
func New() algorithm.Algorithm { return algorithm.FromPlanner(tiresias.New(), version.Version) }
