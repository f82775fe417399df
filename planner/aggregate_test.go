package planner

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestAggregate_Shortfall(t *testing.T) {
	h := NewHarness(t)
	h.AddNodes("gpu", 2, 4000, 8192, 2)
	agg := NewAggregate(NewCluster(h.Nodes))
	ps := &Task{CPU: 1000, MemoryMB: 1024}
	worker := &Task{CPU: 500, MemoryMB: 1024, DeviceCounts: map[string]int{"gpu": 1}}

	must.Eq(t, "", agg.Shortfall(ps, 1, worker, 4), must.Sprint("fits"))
	must.Eq(t, "they need 5 gpu, 4 free of 4", agg.Shortfall(ps, 1, worker, 5))
	must.Eq(t, "they need 9000 MHz CPU, 8000 free of 8000", agg.Shortfall(ps, 9, nil, 0))

	agg.Take(worker, 3)
	must.Eq(t, "they need 2 gpu, 1 free of 4", agg.Shortfall(ps, 1, worker, 2), must.Sprint("counts what is taken"))
}
