// Package plugin is the built-in optimus-relative algorithm (Optimus with its gain measured as a fraction of each job's remaining time) under the
// plugin contract, as its plugin binary serves it.
package plugin

import (
	"github.com/caravan-sched/caravan/planner/optimus"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/version"
)

// New returns the algorithm.
func New() algorithm.Algorithm { return algorithm.FromPlanner(optimus.NewRelative(), version.Version) }
