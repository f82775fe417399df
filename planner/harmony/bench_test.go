package harmony

import (
	"math/rand/v2"
	"testing"
)

func randomJobs(rng *rand.Rand, n int) []Job {
	jobs := make([]Job, n)
	for i := range jobs {
		// Computation on one machine of 1-20 s, communication 0.1-5 s:
		// from network-bound to CPU-bound at a few machines.
		jobs[i] = Job{CPU1: 1 + 19*rng.Float64(), Net: 0.1 + 4.9*rng.Float64()}
	}
	return jobs
}

// BenchmarkGroup groups 8,000 jobs on 10,000 machines (§4.4.7, L1134:
// "within 5 seconds").
func BenchmarkGroup(b *testing.B) {
	jobs := randomJobs(rand.New(rand.NewPCG(9, 10)), 8000)
	b.ReportAllocs()
	var g *Grouping
	for b.Loop() {
		g = Group(jobs, 10000)
	}
	b.ReportMetric(float64(g.Jobs()), "jobs_grouped")
	b.ReportMetric(float64(len(g.Groups)), "groups")
}
