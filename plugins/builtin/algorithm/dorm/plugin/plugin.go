// Package plugin is the built-in dorm algorithm (Dorm's utilisation-fairness MILP, solved by GLPK's glpsol) under the
// plugin contract, as its plugin binary serves it.
package plugin

import (
	"github.com/caravan-sched/caravan/planner/dorm"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/version"
)

// New returns the algorithm.
func New() algorithm.Algorithm { return algorithm.FromPlanner(dorm.New(), version.Version) }
