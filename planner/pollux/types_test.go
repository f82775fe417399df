package pollux

import (
	"fmt"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// typedNodes returns n nodes of 4 GPUs of model name.
func typedNodes(prefix, name string, n int) []*structs.Node {
	nodes := gpuNodes(n)
	for i, node := range nodes {
		node.ID, node.Name = fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("%s-%d", prefix, i)
		node.Devices[0].Name = name
	}
	return nodes
}

// TestKeepOneType: a job the search spread over two types keeps the type
// holding most of its GPUs; on a tie, the faster for it.
func TestKeepOneType(t *testing.T) {
	nodes := append(typedNodes("t4", "Tesla T4", 1), typedNodes("a100", "A100", 1)...)
	now := int64(time.Hour)
	cases := []struct {
		name             string
		onT4, onA100     int32
		a100Faster, want string
	}{
		{"majority", 3, 1, "yes", "Tesla T4"},
		{"tie, a100 faster", 2, 2, "yes", "A100"},
		{"tie, t4 faster", 2, 2, "no", "Tesla T4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := adaptiveJob("a", cifar, 8, 4, 2, now, time.Hour)
			slow, fast := cifar.perf, cifar.perf
			fast.AlphaC /= 3
			v.PerfByType = map[string]*goodput.Fit{"Tesla T4": {Params: fast}, "A100": {Params: slow}}
			if tc.a100Faster == "yes" {
				v.PerfByType["Tesla T4"], v.PerfByType["A100"] = v.PerfByType["A100"], v.PerfByType["Tesla T4"]
			}
			pr := newProblem(&planner.Request{Nodes: nodes, Now: now, Jobs: []*planner.Job{v}}, Options{}.withDefaults())
			must.True(t, pr.mixedTypes())
			ind := pr.newIndividual()
			ind.n[0] = 0
			pr.insert(ind, 0, 0, tc.onT4)
			pr.insert(ind, 0, 1, tc.onA100)
			pr.keepOneType(ind)
			must.Eq(t, int32(1), ind.n[0])
			must.Eq(t, tc.want, nodes[ind.node[0]].GPUType())
		})
	}
}

// TestPollux_MixedCluster: on a cluster of two GPU types, no job's
// workers span both, and the decision keeps every rule.
func TestPollux_MixedCluster(t *testing.T) {
	req := WorkloadRequest(4, 12)
	for i, n := range req.Nodes {
		if i%2 == 1 {
			n.Devices[0].Name = "A100"
		}
	}
	must.True(t, newProblem(req, Options{}.withDefaults()).mixedTypes())
	dec, err := New().Plan(req)
	must.NoError(t, err)
	must.NoError(t, planner.CheckDecision(req, dec))
	typeOf := map[string]string{}
	for _, n := range req.Nodes {
		typeOf[n.ID] = n.GPUType()
	}
	running := 0
	for _, p := range dec.Placements {
		seen := map[string]bool{}
		for _, nt := range p.Nodes {
			if nt.Workers > 0 {
				seen[typeOf[nt.NodeID]] = true
			}
		}
		must.LessEq(t, 1, len(seen), must.Sprintf("job %s spans %v", p.JobID, seen))
		if !p.Paused() {
			running++
		}
	}
	must.Positive(t, running)
}
