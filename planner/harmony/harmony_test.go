package harmony

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shoenig/test/must"
)

func approx(t *testing.T, want, got float64) {
	t.Helper()
	must.Less(t, 1e-9, math.Abs(want-got), must.Sprintf("want %v, got %v", want, got))
}

// TestModel_WorkedCases checks eq. 4.1-4.4 by hand.
func TestModel_WorkedCases(t *testing.T) {
	cpuHeavy, netHeavy := Job{CPU1: 3, Net: 1}, Job{CPU1: 1, Net: 3}
	jobs := []Job{cpuHeavy, netHeavy}
	// Alone on one machine each: T = C + N = 4.
	approx(t, 4, groupTime(jobs, []int{0}, 1))
	approx(t, (2.0/3*3+1.0/3*1)/4, GroupUtilisation(jobs, []int{0}, 1, 2.0/3))
	// Together on two: C = 1.5 + 0.5, N = 1 + 3: T = max(2, 4, 2.5, 3.5) = 4.
	approx(t, 4, groupTime(jobs, []int{0, 1}, 2))
	approx(t, 2.0/3*2/4+1.0/3*4/4, GroupUtilisation(jobs, []int{0, 1}, 2, 2.0/3))
	isolated := &Grouping{Groups: [][]int{{0}, {1}}, Machines: []int{1, 1}}
	together := &Grouping{Groups: [][]int{{0, 1}}, Machines: []int{2}}
	must.Greater(t, isolated.Utilisation(jobs, 2, 2.0/3), together.Utilisation(jobs, 2, 2.0/3))
	// Each job's iteration: 4 s either way, but together they share the
	// machines, so each gets twice the machines' CPU.
	approx(t, 4, groupTime(jobs, []int{1}, 1))

	// A job whose own computation and communication exceed the group's
	// totals of either makes the group job-bound.
	long := []Job{{CPU1: 1, Net: 10}, {CPU1: 1, Net: 0.1}}
	must.True(t, jobBound(long, []int{0, 1}, 1))
	approx(t, 11, groupTime(long, []int{0, 1}, 1))
}

// TestGroup_Complementary: two CPU-heavy and two network-heavy jobs on
// four machines are paired across kinds, as the oracle pairs them.
func TestGroup_Complementary(t *testing.T) {
	jobs := []Job{{CPU1: 6, Net: 1}, {CPU1: 6, Net: 1}, {CPU1: 1, Net: 3}, {CPU1: 1, Net: 3}}
	g := Group(jobs, 4, Options{})
	must.SliceLen(t, 2, g.Groups)
	for _, members := range g.Groups {
		slices.Sort(members)
		must.SliceLen(t, 2, members)
		must.Less(t, 2, members[0], must.Sprint("one CPU-heavy job per group"))
		must.GreaterEq(t, 2, members[1], must.Sprint("one network-heavy job per group"))
	}
	o := Oracle(jobs, 4, 2.0/3)
	approx(t, o.Utilisation(jobs, 4, 2.0/3), g.Utilisation(jobs, 4, 2.0/3))
}

// TestGroup_AvoidsJobBound: a short CPU-heavy job is not grouped with a
// long network-heavy one whose own iteration would set its pace (it
// would take 10.5 s an iteration instead of 2.1).
func TestGroup_AvoidsJobBound(t *testing.T) {
	jobs := []Job{{CPU1: 1, Net: 10}, {CPU1: 2, Net: 0.1}}
	g := Group(jobs, 2, Options{})
	must.Eq(t, [][]int{{0}, {1}}, g.Groups)
	for k, members := range g.Groups {
		must.False(t, jobBound(jobs, members, g.Machines[k]))
	}
}

// TestAllocate: machines go where a group's CPU and network balance, in
// proportion, and every machine is used.
func TestAllocate(t *testing.T) {
	jobs := []Job{{CPU1: 8, Net: 2}, {CPU1: 2, Net: 2}}
	must.Eq(t, []int{4, 1}, Allocate(jobs, [][]int{{0}, {1}}, 5), must.Sprint("balance points 4 and 1"))
	must.Eq(t, []int{8, 2}, Allocate(jobs, [][]int{{0}, {1}}, 10), must.Sprint("twice as many: in proportion"))
	must.Eq(t, []int{2, 1}, Allocate(jobs, [][]int{{0}, {1}}, 3), must.Sprint("short: in proportion, at least one"))
	must.Eq(t, []int{1, 1}, Allocate(jobs, [][]int{{0}, {1}}, 2))
}

func randomJobs(rng *rand.Rand, n int) []Job {
	jobs := make([]Job, n)
	for i := range jobs {
		// Computation on one machine of 1-20 s, communication 0.1-5 s:
		// from network-bound to CPU-bound at a few machines.
		jobs[i] = Job{CPU1: 1 + 19*rng.Float64(), Net: 0.1 + 4.9*rng.Float64()}
	}
	return jobs
}

// TestGroup_Properties: on random instances every admitted job is in one
// group, groups have machines and never more than the cluster, jobs are
// admitted in arrival order, and no group is job-bound when the job could
// run elsewhere.
func TestGroup_Properties(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		total := 1 + rng.IntN(40)
		jobs := randomJobs(rng, 1+rng.IntN(60))
		g := Group(jobs, total, Options{})
		seen := map[int]bool{}
		used := 0
		for k, members := range g.Groups {
			must.SliceNotEmpty(t, members)
			must.Positive(t, g.Machines[k])
			used += g.Machines[k]
			for _, i := range members {
				must.False(t, seen[i], must.Sprintf("job %d twice", i))
				seen[i] = true
			}
		}
		must.Eq(t, total, used, must.Sprint("every machine is used"))
		for i := range len(seen) {
			must.True(t, seen[i], must.Sprintf("admitted in order: job %d of %d", i, len(seen)))
		}
		u := g.Utilisation(jobs, total, 2.0/3)
		must.Between(t, 0, u, 1)
	}
}

// TestGroup_AgainstOracle measures how far Group's utilisation is from the
// best grouping's on small instances.
func TestGroup_AgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var sum, worst float64
	n := 0
	for range 40 {
		total := 2 + rng.IntN(7)
		jobs := randomJobs(rng, 2+rng.IntN(5))
		g := Group(jobs, total, Options{})
		var admitted []Job
		for _, members := range g.Groups {
			for _, i := range members {
				admitted = append(admitted, jobs[i])
			}
		}
		// Oracle over the jobs Group admitted, renumbered.
		o := Oracle(admitted, total, 2.0/3)
		ug := g.Utilisation(jobs, total, 2.0/3)
		uo := o.Utilisation(admitted, total, 2.0/3)
		must.LessEq(t, uo+1e-9, ug, must.Sprint("the oracle is the best"))
		gap := 1 - ug/uo
		sum += gap
		worst = math.Max(worst, gap)
		n++
	}
	t.Logf("utilisation gap to the oracle over %d instances (2-6 jobs, 2-8 machines): mean %.2f%%, worst %.2f%%", n, 100*sum/float64(n), 100*worst)
	must.Less(t, 0.05, sum/float64(n))
}

// BenchmarkGroup groups 8,000 jobs on 10,000 machines (the dissertation:
// within 5 s; the target here: under 1 s).
func BenchmarkGroup(b *testing.B) {
	jobs := randomJobs(rand.New(rand.NewPCG(9, 10)), 8000)
	for b.Loop() {
		Group(jobs, 10000, Options{})
	}
}
