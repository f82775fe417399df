package fifo

import (
	"fmt"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
)

// Name is the algorithm's registry name.
const Name = "fifo"

// FIFO implements planner.Algorithm.
type FIFO struct{}

var (
	_ planner.Algorithm = (*FIFO)(nil)
	_ planner.Describer = (*FIFO)(nil)
)

// New returns FIFO.
func New() planner.Algorithm { return &FIFO{} }

// Name returns "fifo".
func (*FIFO) Name() string { return Name }

// Capabilities: FIFO runs jobs at their fixed request and reads no
// estimator (planner.Describer).
func (*FIFO) Capabilities() planner.Capabilities { return planner.Capabilities{FixedSize: true} }

// Plan keeps running jobs where they are, then places waiting jobs in
// arrival order (submit time, then namespace and ID).
func (*FIFO) Plan(req *planner.Request) (*planner.Decision, error) {
	jobs := slices.Clone(req.Jobs)
	planner.SortArrival(jobs)

	c := planner.NewCluster(req.Nodes)
	out, tasks := planner.KeepFixed(c, jobs, Name)
	placer := placement.New(c)
	for i, j := range jobs {
		if out[i] != nil {
			continue
		}
		ps, w := j.FixedRequest()
		nodes, ok := placer.Place(tasks[i].PS, ps, tasks[i].Worker, w)
		if !ok {
			out[i] = planner.Paused(j, fmt.Sprintf("fifo: waiting for room for its request of %s", structs.Shape{PS: ps, Workers: w}))
			continue
		}
		out[i] = &structs.Placement{
			Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: ps, NumWorkers: w, Nodes: nodes,
			Reason: fmt.Sprintf("fifo: started at its request of %s", structs.Shape{PS: ps, Workers: w}),
		}
	}
	planner.SortPlacements(out)
	return &planner.Decision{Placements: out}, nil
}
