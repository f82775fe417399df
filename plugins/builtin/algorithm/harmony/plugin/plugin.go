// Package plugin is the built-in harmony algorithm (jobs with
// complementary computation and communication grouped on shared nodes)
// under the plugin contract, as its plugin binary serves it.
package plugin

import (
	"github.com/caravan-sched/caravan/planner/harmony"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/version"
)

// New returns the algorithm.
func New() algorithm.Algorithm { return algorithm.FromPlanner(harmony.New(), version.Version) }
