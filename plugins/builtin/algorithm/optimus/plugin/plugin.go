// Package plugin is the built-in optimus algorithm (Optimus (EuroSys'18): marginal-gain allocation from fitted loss and speed models) under the
// plugin contract, as its plugin binary serves it.
package plugin

import (
	"github.com/caravan-sched/caravan/planner/optimus"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/version"
)

// New returns the algorithm.
func New() algorithm.Algorithm { return algorithm.FromPlanner(optimus.New(), version.Version) }
