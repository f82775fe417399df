package roundrobin

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
)

// Name is the algorithm's registry name.
const Name = "roundrobin"

// RoundRobin implements planner.Algorithm.
type RoundRobin struct{}

var (
	_ planner.Algorithm = (*RoundRobin)(nil)
	_ planner.Describer = (*RoundRobin)(nil)
)

// New returns RoundRobin.
func New() planner.Algorithm { return &RoundRobin{} }

// Name returns "roundrobin".
func (*RoundRobin) Name() string { return Name }

// Capabilities: round robin runs jobs at their fixed request and reads
// no estimator (planner.Describer).
func (*RoundRobin) Capabilities() planner.Capabilities { return planner.Capabilities{FixedSize: true} }

// byArrival orders jobs by submit time, then creation index, then
// namespace and ID.
func byArrival(a, b *planner.Job) int {
	return cmp.Or(cmp.Compare(a.Job.SubmitTime, b.Job.SubmitTime), cmp.Compare(a.Job.CreateIndex, b.Job.CreateIndex),
		cmp.Compare(a.Job.Namespace, b.Job.Namespace), cmp.Compare(a.Job.ID, b.Job.ID))
}

// Plan keeps running jobs where they are, then starts waiting jobs in
// arrival order, their tasks on the nodes in turn; see the package
// documentation.
func (*RoundRobin) Plan(req *planner.Request) (*planner.Decision, error) {
	jobs := slices.Clone(req.Jobs)
	slices.SortFunc(jobs, byArrival)

	c := planner.NewCluster(req.Nodes)
	out, tasks := planner.KeepFixed(c, jobs, Name)
	turn := 0
	for i := len(jobs) - 1; i >= 0; i-- {
		if out[i] == nil {
			continue
		}
		for _, nt := range out[i].Nodes {
			if n, ok := c.NodeIndex(nt.NodeID); ok {
				turn = max(turn, n+1)
			}
		}
		break
	}
	for i, j := range jobs {
		if out[i] != nil {
			continue
		}
		ps, w := j.FixedRequest()
		nodes, next, ok := inTurn(c, tasks[i], ps, w, turn)
		how := "in turn"
		if ok {
			turn = next
		} else {
			nodes, ok = placement.New(c).Place(tasks[i].PS, ps, tasks[i].Worker, w)
			how = "out of turn, where its tasks fit together"
		}
		if !ok {
			out[i] = planner.Paused(j, fmt.Sprintf("roundrobin: waiting for room for its request of %s", structs.Shape{PS: ps, Workers: w}))
			continue
		}
		out[i] = &structs.Placement{
			Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: ps, NumWorkers: w, Nodes: nodes,
			Reason: fmt.Sprintf("roundrobin: started at its request of %s, %s", structs.Shape{PS: ps, Workers: w}, how),
		}
	}
	planner.SortPlacements(out)
	return &planner.Decision{Placements: out}, nil
}

// inTurn places nPS parameter servers, then nW workers, one task at a time,
// each on the first node from turn on (wrapping around) that has room for
// it beside the job's tasks placed so far. On success it takes the
// capacity and returns the per-node counts sorted by node ID and the turn
// after the last task; otherwise it changes nothing and returns false.
func inTurn(c *planner.Cluster, t planner.JobTasks, nPS, nW, turn int) ([]*structs.NodeTasks, int, bool) {
	n := len(c.Nodes)
	if n == 0 {
		return nil, turn, nPS+nW == 0
	}
	counts := make([]structs.NodeTasks, n)
	place := func(isPS bool) bool {
		for k := range n {
			i := (turn + k) % n
			ps, w := counts[i].PS, counts[i].Workers
			if isPS {
				ps++
			} else {
				w++
			}
			if ps > 1 && t.PS.DistinctHosts || w > 1 && t.Worker.DistinctHosts || !c.FitsPair(i, t.PS, ps, t.Worker, w) {
				continue
			}
			counts[i].PS, counts[i].Workers = ps, w
			turn = (i + 1) % n
			return true
		}
		return false
	}
	for range nPS {
		if !place(true) {
			return nil, 0, false
		}
	}
	for range nW {
		if !place(false) {
			return nil, 0, false
		}
	}
	var out []*structs.NodeTasks
	for i := range counts {
		nt := counts[i]
		if nt.PS+nt.Workers == 0 {
			continue
		}
		if nt.PS > 0 {
			c.Take(i, t.PS, nt.PS)
		}
		c.Take(i, t.Worker, nt.Workers)
		nt.NodeID = c.Nodes[i].ID
		out = append(out, &nt)
	}
	slices.SortFunc(out, func(a, b *structs.NodeTasks) int { return cmp.Compare(a.NodeID, b.NodeID) })
	return out, turn, true
}
