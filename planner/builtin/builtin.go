package builtin

import (
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/cruise"
	"github.com/caravan-sched/caravan/planner/dorm"
	"github.com/caravan-sched/caravan/planner/drf"
	"github.com/caravan-sched/caravan/planner/fifo"
	"github.com/caravan-sched/caravan/planner/harmony"
	"github.com/caravan-sched/caravan/planner/optimus"
	"github.com/caravan-sched/caravan/planner/tetris"
)

// Algorithms maps each built-in algorithm's name to its factory.
var Algorithms = map[string]planner.Factory{
	optimus.Name:         optimus.New,
	optimus.NameRelative: optimus.NewRelative,
	drf.Name:             drf.New,
	tetris.Name:          tetris.New,
	fifo.Name:            fifo.New,
	cruise.Name:          cruise.New,
	harmony.Name:         harmony.New,
	dorm.Name:            dorm.New,
}

// Names returns the built-in algorithms' names, sorted.
func Names() []string {
	names := make([]string, 0, len(Algorithms))
	for n := range Algorithms {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
