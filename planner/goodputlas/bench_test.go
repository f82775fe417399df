package goodputlas

import (
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/pollux"
)

// benchmarkRound times one round of goodput-las beside pollux on the same
// request, so that the two compare in one run.
func benchmarkRound(b *testing.B, nodes, jobs int) {
	for _, alg := range []planner.Algorithm{New(), pollux.New()} {
		b.Run(alg.Name(), func(b *testing.B) { pollux.BenchmarkRound(b, alg, nodes, jobs) })
	}
}

// BenchmarkRound160Jobs64GPUs is one round at the Pollux workloads' scale:
// 160 jobs on 16 nodes of 4 GPUs.
func BenchmarkRound160Jobs64GPUs(b *testing.B) { benchmarkRound(b, 16, 160) }

// BenchmarkRound2000Jobs1024GPUs is one round of 2,000 jobs on 256 nodes
// of 4 GPUs.
func BenchmarkRound2000Jobs1024GPUs(b *testing.B) { benchmarkRound(b, 256, 2000) }

// BenchmarkRound10000Jobs2048GPUs is one round at issue 33's target
// scale: 10,000 jobs on 512 nodes of 4 GPUs.
func BenchmarkRound10000Jobs2048GPUs(b *testing.B) { benchmarkRound(b, 512, 10000) }
