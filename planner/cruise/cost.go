package cruise

import (
	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/subtask"
)

// Cost is Cruise's cost model of a job, which lives in planner/subtask
// so that other algorithms read it without importing this one.
type Cost = subtask.Cost

// Machine is one machine of a heterogeneous allocation (subtask.Machine).
type Machine = subtask.Machine

// Estimate fits a job's cost model to its measured subtasks
// (subtask.Estimate).
func Estimate(sub *planner.Subtasks) (Cost, bool) { return subtask.Estimate(sub) }
