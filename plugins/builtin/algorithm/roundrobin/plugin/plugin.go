// Package plugin is the built-in roundrobin algorithm (fixed requests,
// placed in turn, SpeCon's fixed initial placement) under the plugin
// contract, as its plugin binary serves it.
package plugin

import (
	"github.com/caravan-sched/caravan/planner/roundrobin"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/version"
)

// New returns the algorithm.
func New() algorithm.Algorithm { return algorithm.FromPlanner(roundrobin.New(), version.Version) }
