package straggler_test

import (
	"math/rand/v2"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/drf"
	"github.com/caravan-sched/caravan/planner/straggler"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestApply_Properties: on random requests and drf's decisions, moving a
// random worker or server of each placed job keeps every rule of
// CheckDecision (capacity at the entries' sizes, constraints,
// distinct_hosts), keeps the job's counts, and takes one task of the
// straggler's role off its node when it moves it.
func TestApply_Properties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	moved := 0
	for trial := range 200 {
		req := planner.RandomRequest(rng)
		dec, err := drf.New().Plan(req)
		must.NoError(t, err)
		found := map[structs.JobKey][]straggler.Straggler{}
		before := map[structs.JobKey]*structs.Placement{}
		for _, p := range dec.Placements {
			role := []string{structs.RoleWorker, structs.RolePS}[rng.IntN(2)]
			var entries []*structs.NodeTasks
			for _, nt := range p.Nodes {
				if count(nt, role) > 0 {
					entries = append(entries, nt)
				}
			}
			if len(entries) == 0 || rng.IntN(2) == 0 {
				continue
			}
			nt := entries[rng.IntN(len(entries))]
			found[p.Key()] = []straggler.Straggler{{Role: role, Rank: 0, NodeID: nt.NodeID, StepTimeS: 3, MedianStepTimeS: 1, Since: req.Now, Last: req.Now, Reports: 3}}
			before[p.Key()] = p
		}
		out := straggler.Apply(req, dec, found, straggler.Config{})
		must.NoError(t, planner.CheckDecision(req, dec), must.Sprintf("trial %d", trial))
		for _, o := range out {
			var after *structs.Placement
			for _, p := range dec.Placements {
				if p.Key() == o.Job {
					after = p
				}
			}
			was := before[o.Job]
			must.Eq(t, was.NumWorkers, after.NumWorkers)
			must.Eq(t, was.NumPS, after.NumPS)
			if o.To == "" {
				must.Eq(t, was, after)
				continue
			}
			moved++
			on := func(p *structs.Placement, node string) (n int) {
				for _, nt := range p.Nodes {
					if nt.NodeID == node {
						n += count(nt, o.Straggler.Role)
					}
				}
				return n
			}
			must.Eq(t, on(was, o.Straggler.NodeID)-1, on(after, o.Straggler.NodeID))
			must.Eq(t, on(was, o.To)+1, on(after, o.To))
			must.Len(t, 1, after.Actions)
		}
	}
	must.Positive(t, moved)
	t.Logf("%d stragglers moved", moved)
}

// count is an entry's tasks of role.
func count(nt *structs.NodeTasks, role string) int {
	if role == structs.RolePS {
		return nt.PS
	}
	return nt.Workers
}
