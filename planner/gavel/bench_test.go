package gavel

import (
	"testing"

	"github.com/caravan-sched/caravan/planner"
)

// BenchmarkGavel50Jobs64GPUs is one round of 50 jobs on the 64 GPUs of
// Sia's heterogeneous cluster (6×4 T4, 3×8 RTX 2080 Ti, 2×8 A100), from
// a new Gavel each time (every job at its starting credit).
func BenchmarkGavel50Jobs64GPUs(b *testing.B) {
	req := WorkloadRequest(50)
	dec, err := New().Plan(req)
	if err != nil {
		b.Fatal(err)
	}
	if err := planner.CheckDecision(req, dec); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := New().Plan(req); err != nil {
			b.Fatal(err)
		}
	}
}
