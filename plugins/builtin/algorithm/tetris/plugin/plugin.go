// Package plugin is the built-in tetris algorithm (Tetris packing of fixed requests) under the
// plugin contract, as its plugin binary serves it.
package plugin

import (
	"github.com/caravan-sched/caravan/planner/tetris"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/version"
)

// New returns the algorithm.
func New() algorithm.Algorithm { return algorithm.FromPlanner(tetris.New(), version.Version) }
