package builtin

import (
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/cruise"
	"github.com/caravan-sched/caravan/planner/dlrover"
	"github.com/caravan-sched/caravan/planner/dorm"
	"github.com/caravan-sched/caravan/planner/drf"
	"github.com/caravan-sched/caravan/planner/fifo"
	"github.com/caravan-sched/caravan/planner/gavel"
	"github.com/caravan-sched/caravan/planner/goodputlas"
	"github.com/caravan-sched/caravan/planner/harmony"
	"github.com/caravan-sched/caravan/planner/optimus"
	"github.com/caravan-sched/caravan/planner/pollux"
	"github.com/caravan-sched/caravan/planner/roundrobin"
	"github.com/caravan-sched/caravan/planner/sia"
	"github.com/caravan-sched/caravan/planner/specon"
	"github.com/caravan-sched/caravan/planner/tetris"
	"github.com/caravan-sched/caravan/planner/tiresias"
)

// Algorithms maps each built-in algorithm's name to its factory.
var Algorithms = map[string]planner.Factory{
	optimus.Name:         optimus.New,
	optimus.NameRelative: optimus.NewRelative,
	drf.Name:             drf.New,
	tetris.Name:          tetris.New,
	fifo.Name:            fifo.New,
	roundrobin.Name:      roundrobin.New,
	cruise.Name:          cruise.New,
	harmony.Name:         harmony.New,
	dorm.Name:            dorm.New,
	dlrover.Name:         dlrover.New,
	tiresias.Name:        tiresias.New,
	pollux.Name:          pollux.New,
	goodputlas.Name:      goodputlas.New,
	gavel.Name:           gavel.New,
	sia.Name:             sia.New,
	sia.NameLAS:          sia.NewLAS,
}

// SpeCon layers on a base algorithm of the registry, so it is added in
// init: an initializer of Algorithms that looked Algorithms up would be an
// initialization cycle.
func init() {
	Algorithms[specon.Name] = func() planner.Algorithm { return specon.New(Base) }
}

// Base looks up a built-in algorithm SpeCon can layer on: any but specon
// itself (specon.Bases).
func Base(name string) (planner.Factory, bool) {
	f, ok := Algorithms[name]
	return f, ok && name != specon.Name
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
