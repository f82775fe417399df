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
// "within 5 seconds"). "random" is randomJobs: Algorithm 1 stops at the
// first prefix that does not raise U, after about 1,350 jobs.
// "dissertation-like" has iteration times and comp/comm shares like
// Figure 4.9's. "worst" is
// 8,000 nearly equal network-bound jobs, for which every prefix raises U
// (more machines' CPU is used as jobs are added), so Algorithm 1 runs
// Algorithm 2 and the allocation for every one of the 8,000 prefixes.
func BenchmarkGroup(b *testing.B) {
	worst := make([]Job, 8000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range worst {
		worst[i] = Job{CPU1: 1 + 0.1*rng.Float64(), Net: 1 + 0.1*rng.Float64()}
	}
	// Like the dissertation's workload (Figure 4.9, measured at DoP 16):
	// iterations of 30-95 s at 16 machines, 20-80% of them computation.
	like := make([]Job, 8000)
	for i := range like {
		itr, share := 30+65*rng.Float64(), 0.2+0.6*rng.Float64()
		like[i] = Job{CPU1: 16 * share * itr, Net: (1 - share) * itr}
	}
	for _, bc := range []struct {
		name string
		jobs []Job
	}{
		{"random", randomJobs(rand.New(rand.NewPCG(9, 10)), 8000)},
		{"dissertation-like", like},
		{"worst", worst},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var g *Grouping
			for b.Loop() {
				g = Group(bc.jobs, 10000)
			}
			b.ReportMetric(float64(g.Jobs()), "jobs_grouped")
			b.ReportMetric(float64(len(g.Groups)), "groups")
		})
	}
}
