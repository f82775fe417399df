package harmony

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// IsolatedName is the baseline's name.
const IsolatedName = "isolated"

// Isolated is the baseline Harmony is measured against (the
// dissertation's isolated allocation, the authors' partitioning
// scheduler): the nodes are split into Partitions equal sets, each runs
// one job at a time, first come, first served, with one worker and one
// server per node of its set (within the job's bounds). It leaves jobs
// waiting while partitions are busy, so it is a comparison baseline for
// `caravan sim`, not one of the server's algorithms.
type Isolated struct {
	// Partitions is how many sets the nodes are split into (default 4).
	Partitions int
}

var _ planner.Algorithm = (*Isolated)(nil)

// NewIsolated returns Isolated with 4 partitions.
func NewIsolated() planner.Algorithm { return &Isolated{Partitions: 4} }

// Name returns "isolated".
func (*Isolated) Name() string { return IsolatedName }

// Plan gives each partition the oldest job running there, or else the
// oldest waiting job.
func (a *Isolated) Plan(req *planner.Request) (*planner.Decision, error) {
	jobs := slices.Clone(req.Jobs)
	planner.SortJobs(jobs)
	slices.SortStableFunc(jobs, func(x, y *planner.Job) int { return cmp.Compare(x.Job.SubmitTime, y.Job.SubmitTime) })
	c := planner.NewCluster(req.Nodes)
	n := min(max(a.Partitions, 1), len(c.Nodes))
	parts := make([][]int, n)
	owner := map[string]int{} // node ID → partition
	for i := range c.Nodes {
		k := i * n / len(c.Nodes)
		parts[k] = append(parts[k], i)
		owner[c.Nodes[i].ID] = k
	}
	busy := make([]bool, n)
	out := map[*planner.Job]*structs.Placement{}
	// Running jobs keep their partition.
	for _, j := range jobs {
		if j.Current == nil || j.Current.Paused() || len(j.Current.Nodes) == 0 {
			continue
		}
		k, ok := owner[j.Current.Nodes[0].NodeID]
		if !ok || busy[k] {
			continue
		}
		if kept := c.KeepCurrent(j.Current, c.JobTasks(j), j.Current.NumPS, j.Current.NumWorkers); kept != nil {
			kept.Reason = fmt.Sprintf("isolated: running alone on partition %d", k)
			out[j], busy[k] = kept, true
		}
	}
	for _, j := range jobs {
		if out[j] != nil {
			continue
		}
		k := slices.Index(busy, false)
		if k < 0 {
			out[j] = planner.Paused(j, "isolated: waiting for a free partition")
			continue
		}
		p := place(c, j, parts[k], 1)
		if !p.Paused() {
			busy[k] = true
			p.Reason = fmt.Sprintf("isolated: alone on partition %d", k)
		}
		out[j] = p
	}
	var dec planner.Decision
	for _, j := range jobs {
		dec.Placements = append(dec.Placements, out[j])
	}
	planner.SortPlacements(dec.Placements)
	return &dec, nil
}
