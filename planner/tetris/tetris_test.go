package tetris

import (
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/fifo"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestPlan_WorkersGoToTheFreestNodes pins down what the alignment score
// does to a job of several workers: each worker goes to the node whose
// free resources have the largest dot product with its demand, which for
// like workers is the node with the most free, so a job of four one-GPU
// workers on four empty nodes of eight GPUs runs one worker per node,
// where fifo puts all four on one. On the simulated cluster the workers
// then exchange gradients across nodes (drivers/sim/README.md, "Fourth
// pass": tetris against fifo on the Philly trace).
func TestPlan_WorkersGoToTheFreestNodes(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 4, 32000, 65536, 8)
	h.AddJob(planner.MockAllReduceJob("a", structs.Bounds{Min: 4, Max: 4}, nil), nil)
	spread, packed := h.Plan(New())["a"], h.Plan(fifo.New())["a"]
	must.Eq(t, 4, spread.NumWorkers)
	must.SliceLen(t, 4, spread.Nodes)
	for _, nt := range spread.Nodes {
		must.Eq(t, 1, nt.Workers)
	}
	must.SliceLen(t, 1, packed.Nodes)
}
