// Package plugin is the built-in fifo algorithm (first come, first served at fixed requests) under the
// plugin contract, as its plugin binary serves it.
package plugin

import (
	"github.com/caravan-sched/caravan/planner/fifo"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/version"
)

// New returns the algorithm.
func New() algorithm.Algorithm { return algorithm.FromPlanner(fifo.New(), version.Version) }
