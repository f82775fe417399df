package roundrobin

import (
	"fmt"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// container adds a one-worker job of cpu MHz submitted at second k,
// running on node (none when "").
func container(h *planner.Harness, id string, k int64, cpu int, node string) *planner.Job {
	j := &structs.Job{
		ID: id,
		Training: &structs.Training{
			Architecture: structs.ArchitectureAllReduce, Mode: structs.ModeSync,
			GlobalBatchSize: 64, StepsPerEpoch: 100,
			Convergence: &structs.Convergence{MaxEpochs: 10},
		},
		Elastic: &structs.Elastic{Workers: structs.Bounds{Min: 1, Max: 1}},
		Worker:  &structs.Role{Driver: "exec", Resources: &structs.Resources{CPU: cpu, MemoryMB: 128}},
	}
	pj := h.AddJob(j, nil)
	pj.Job.SubmitTime = k * 1e9
	pj.Job.CreateIndex = uint64(100 + k)
	if node != "" {
		pj.Current = &structs.Placement{Namespace: j.Namespace, JobID: id, NumWorkers: 1,
			Nodes: []*structs.NodeTasks{{NodeID: node, Workers: 1}}, Reason: "started"}
	}
	return pj
}

// nodesOf returns each job's nodes, "" for a paused job and "a+b" for
// a job on two nodes.
func nodesOf(ps map[string]*structs.Placement) map[string]string {
	out := map[string]string{}
	for id, p := range ps {
		s := ""
		for k, nt := range p.Nodes {
			if k > 0 {
				s += "+"
			}
			s += nt.NodeID
		}
		out[id] = s
	}
	return out
}

func TestPlan(t *testing.T) {
	t.Run("six containers on four nodes rotate in arrival order", func(t *testing.T) {
		// The paper's rotation: container k on worker ((k − 1) mod 4),
		// whatever the IDs say; c5 and c6 arrive together and go in
		// creation order.
		h := planner.NewHarness(t)
		h.AddNodes("n", 4, 8000, 64*1024, 0)
		for k, id := range []string{"f", "e", "d", "c", "b", "a"} {
			container(h, id, int64(min(k, 4)), 1000, "")
		}
		h.Jobs[5].Job.CreateIndex = 200
		must.Eq(t, map[string]string{"f": "n-0", "e": "n-1", "d": "n-2", "c": "n-3", "b": "n-0", "a": "n-1"}, nodesOf(h.Plan(New())))
	})
	t.Run("the turn follows the newest running job", func(t *testing.T) {
		// The newest running job, r3, runs on n-1 (an older one, r1,
		// ended on n-2): the next two go to n-2 and n-3, even though n-0
		// is emptier.
		h := planner.NewHarness(t)
		h.AddNodes("n", 4, 8000, 64*1024, 0)
		container(h, "r2", 2, 1000, "n-2")
		container(h, "r3", 3, 1000, "n-1")
		container(h, "new4", 4, 1000, "")
		container(h, "new5", 5, 1000, "")
		ps := h.Plan(New())
		must.Eq(t, map[string]string{"r2": "n-2", "r3": "n-1", "new4": "n-2", "new5": "n-3"}, nodesOf(ps))
		must.Eq(t, "roundrobin: running at its request of 0 ps and 1 worker", ps["r3"].Reason)
		must.Eq(t, "roundrobin: started at its request of 0 ps and 1 worker, in turn", ps["new4"].Reason)
	})
	t.Run("a full node is skipped, and the turn wraps", func(t *testing.T) {
		// n-3 holds no more; new4 takes the next node with room, n-0,
		// and new5 the one after.
		h := planner.NewHarness(t)
		h.AddNodes("n", 4, 8000, 64*1024, 0)
		container(h, "big", 1, 8000, "n-3")
		container(h, "r2", 2, 1000, "n-2")
		container(h, "new4", 4, 1000, "")
		container(h, "new5", 5, 1000, "")
		must.Eq(t, map[string]string{"big": "n-3", "r2": "n-2", "new4": "n-0", "new5": "n-1"}, nodesOf(h.Plan(New())))
	})
	t.Run("tasks of one job take nodes in turn", func(t *testing.T) {
		h := planner.NewHarness(t)
		h.AddNodes("n", 3, 8000, 64*1024, 0)
		container(h, "r1", 1, 1000, "n-1")
		j := h.AddJob(planner.MockJob("ps", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 1, Max: 3}), nil)
		j.Job.SubmitTime = 2e9
		// ps on n-2, then the workers on n-0, n-1, n-2.
		ps := h.Plan(New())
		must.Eq(t, []*structs.NodeTasks{{NodeID: "n-0", Workers: 1}, {NodeID: "n-1", Workers: 1}, {NodeID: "n-2", PS: 1, Workers: 1}}, ps["ps"].Nodes)
	})
	t.Run("waits while no node has room", func(t *testing.T) {
		h := planner.NewHarness(t)
		h.AddNodes("n", 2, 2000, 64*1024, 0)
		container(h, "r1", 1, 1000, "n-0")
		container(h, "r2", 2, 1000, "n-1")
		container(h, "big", 3, 2000, "")
		ps := h.Plan(New())
		must.True(t, ps["big"].Paused())
		must.Eq(t, "roundrobin: waiting for room for its request of 0 ps and 1 worker", ps["big"].Reason)
	})
}

// TestPlan_Deterministic: the decision does not depend on the order of
// the request's jobs.
func TestPlan_Deterministic(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 3, 4000, 64*1024, 0)
	for k := range 8 {
		container(h, fmt.Sprintf("c%d", k), int64(k%3), 1000, "")
	}
	first := h.Plan(New())
	for range 5 {
		h.Jobs = append(h.Jobs[1:], h.Jobs[0])
		must.Eq(t, first, h.Plan(New()))
	}
}
