package tiresias

import (
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// gpuJob is an all-reduce job of w workers of one GPU each, submitted at
// second at.
func gpuJob(id string, w int, at int64) *structs.Job {
	return &structs.Job{
		ID: id, SubmitTime: at * 1e9,
		Training: &structs.Training{
			Architecture: structs.ArchitectureAllReduce, Mode: structs.ModeSync,
			GlobalBatchSize: 64 * w, StepsPerEpoch: 100,
		},
		Elastic: &structs.Elastic{Workers: structs.Bounds{Min: w, Max: w}},
		Worker: &structs.Role{Driver: "exec", Resources: &structs.Resources{
			CPU: 1000, MemoryMB: 1024, Devices: []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}},
		}},
	}
}

// TestPlan_Queues checks 2D-LAS on a worked case: 2 nodes of 4 GPUs, and
// jobs in arrival order a (4 GPUs, demoted: 20 GPU-hours attained), b (4
// GPUs, 1 GPU-hour), c (2 GPUs, none), d (4 GPUs, none). The first queue
// in arrival order is b, c, d; b and c take 6 GPUs, d's 4 do not fit the
// 2 left and it waits (no head-of-line blocking: nothing after it fits
// either), and a, in the second queue, is preempted although it ran.
func TestPlan_Queues(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 2, 64000, 262144, 4)
	a := h.AddJob(gpuJob("a", 4, 0), nil)
	a.AttainedService = 20 * 3600
	a.Current = &structs.Placement{Namespace: "default", JobID: "a", NumWorkers: 4, Nodes: []*structs.NodeTasks{{NodeID: "n-0", Workers: 4}}}
	b := h.AddJob(gpuJob("b", 4, 10), nil)
	b.AttainedService = 3600
	b.Current = &structs.Placement{Namespace: "default", JobID: "b", NumWorkers: 4, Nodes: []*structs.NodeTasks{{NodeID: "n-1", Workers: 4}}}
	h.AddJob(gpuJob("c", 2, 20), nil)
	h.AddJob(gpuJob("d", 4, 30), nil)

	got := h.Plan(New())
	must.True(t, got["a"].Paused(), must.Sprint(got["a"].Reason))
	must.StrContains(t, got["a"].Reason, "queue 1")
	must.Eq(t, b.Current.Nodes, got["b"].Nodes, must.Sprint("b keeps where it runs"))
	must.Eq(t, 2, got["c"].NumWorkers)
	must.Eq(t, "n-0", got["c"].Nodes[0].NodeID)
	must.True(t, got["d"].Paused(), must.Sprint(got["d"].Reason))

	// Below the threshold, a is in the first queue and first by arrival:
	// it keeps running, and c skips ahead of d.
	a.AttainedService = 3600
	got = h.Plan(New())
	must.Eq(t, a.Current.Nodes, got["a"].Nodes)
	must.Eq(t, b.Current.Nodes, got["b"].Nodes)
	must.True(t, got["c"].Paused())
	must.True(t, got["d"].Paused())
}

func TestQueue_Threshold(t *testing.T) {
	alg := New().(*Tiresias)
	must.Eq(t, 0, alg.Queue(16*3600-1))
	must.Eq(t, 1, alg.Queue(16*3600))
	must.NoError(t, alg.SetConfig(map[string]string{"queue_threshold": "1h"}))
	must.Eq(t, 1, alg.Queue(3600))
	must.ErrorContains(t, alg.SetConfig(map[string]string{"queue_threshold": "-1h"}), "positive duration")
	must.Eq(t, 1, alg.Queue(3600), must.Sprint("a bad option changes nothing"))
	must.ErrorContains(t, alg.SetConfig(map[string]string{"depth": "2"}), `unknown option "depth"`)
}
