package harmony

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shoenig/test/must"
)

// TestGroup_StopsAtFirstNonImprovement: Algorithm 1 on 2 machines adds jobs
// one at a time and keeps the last prefix that raised U.
func TestGroup_StopsAtFirstNonImprovement(t *testing.T) {
	a, b := Job{CPU1: 4, Net: 1}, Job{CPU1: 1, Net: 4}
	jobs := []Job{a, b, a, b}
	// n_j = 2, {a, b}: Σ|T_cpu − T_net| is |2−1| + |0.5−4| = 4.5 at one
	// group (1 machine... of 2 each: T_cpu = CPU1·1/2) and |4−1| + |1−4| = 6
	// at two, so one group on both machines: ΣC = 2 + 0.5, ΣN = 5, T = 5,
	// U = [0.5, 1].
	// n_j = 3, + a: one group (5.5 against 9): ΣC = 4.5, ΣN = 6, T = 6,
	// U = [0.75, 1]: better.
	// n_j = 4, + b: one group (9 against 12): ΣC = 5, ΣN = 10, T = 10,
	// U = [0.5, 1]: not better, stop; the fourth job waits. Within the
	// group Algorithm 2 sorts by T_itr on 2 machines: b (4.5) before a (3).
	g := Group(jobs, 2)
	must.Eq(t, [][]int{{1, 0, 2}}, g.Groups)
	must.Eq(t, []int{2}, g.Machines)
	approxU(t, Util{0.75, 1}, g.Utilisation(jobs))

	// A single job is grouped alone on every machine.
	one := Group([]Job{a}, 3)
	must.Eq(t, [][]int{{0}}, one.Groups)
	must.Eq(t, []int{3}, one.Machines)
	must.SliceEmpty(t, Group(nil, 3).Groups)
	must.SliceEmpty(t, Group(jobs, 0).Groups)
}

// TestNumberOfGroups: n_G* = argmin Σ|CPU1·n/M − Net| (Algorithm 1 L6).
func TestNumberOfGroups(t *testing.T) {
	all := func(n int) []int {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	cases := []struct {
		name  string
		jobs  []Job
		total int
		want  int
	}{
		// f(1) = 2·|1.5−1| + 2·|0.25−3| = 6.5, f(2) = 2·2 + 2·2.5 = 9: one.
		{"mixed, 4 machines", []Job{{6, 1}, {6, 1}, {1, 3}, {1, 3}}, 4, 1},
		// f(n) = 4·|n/2 − 1|: zero at n = 2.
		{"balanced at two groups", []Job{{4, 1}, {4, 1}, {4, 1}, {4, 1}}, 8, 2},
		// f(n) = 4·|n/8 − 1| falls to n = 8, but there are 4 jobs.
		{"no more groups than jobs", []Job{{1, 1}, {1, 1}, {1, 1}, {1, 1}}, 8, 4},
		// f(n) = 2·|n − 1| with 3 machines: one group.
		{"CPU-bound", []Job{{3, 1}, {3, 1}}, 3, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, NumberOfGroups(tc.jobs, all(len(tc.jobs)), tc.total))
		})
	}
}

// TestAssignJobs_WorkedCase follows Algorithm 2 by hand.
func TestAssignJobs_WorkedCase(t *testing.T) {
	// On 4 machines in 2 groups, m = 2: T_itr = 3 + 1 = 4 for the CPU-heavy
	// jobs (T_diff = +2), 0.5 + 3 = 3.5 for the network-heavy ones
	// (T_diff = −2.5). Sorted: 0, 1, 2, 3; ⌊4/2⌋ = 2 jobs a group. Group 0
	// takes job 0 (S_diff = 0: any), then the first with T_diff ≤ 0, job 2;
	// group 1 likewise takes 1 and 3. Both S_diff = −0.5: no swap helps.
	jobs := []Job{{6, 1}, {6, 1}, {1, 3}, {1, 3}}
	must.Eq(t, [][]int{{0, 2}, {1, 3}}, AssignJobs(jobs, []int{0, 1, 2, 3}, 2, 4))

	// Five jobs in two groups: ⌊5/2⌋ = 2 each, then the remaining job
	// joins the group it balances best (L12–14). m = 1: T_itr 6, 5, 4, 1, 2
	// and T_diff +4, +3, −4, −1, −2, so the order is 0, 1, 2, 4, 3. Job 0
	// leads group 0 and takes the first network-heavy job, 2: S_diff 0.
	// Job 1 leads group 1 and takes the next, 4: S_diff +1. Job 3 (−1)
	// joins group 1: |−1 + 1| = 0 against |−1 + 0| = 1. Both groups then
	// have S_diff 0: nothing to swap.
	five := []Job{{5, 1}, {4, 1}, {0, 4}, {0, 1}, {0, 2}}
	must.Eq(t, [][]int{{0, 2}, {1, 4, 3}}, AssignJobs(five, []int{0, 1, 2, 3, 4}, 2, 2))
}

// TestFineTune: the most imbalanced group swaps with its most
// complementary one the pair that balances both best.
func TestFineTune(t *testing.T) {
	// m = 1: S_diff = +6 and −6. Swapping 0 and 2 gives 0 and 0.
	jobs := []Job{{3, 0}, {3, 0}, {0, 3}, {0, 3}}
	groups := [][]int{{0, 1}, {2, 3}}
	fineTune(jobs, groups, 1)
	must.Eq(t, [][]int{{2, 1}, {0, 3}}, groups)
}

// TestAllocateMachines: one machine each, then one at a time to the group
// with the largest Σ T_cpu − Σ T_net (L973).
func TestAllocateMachines(t *testing.T) {
	jobs := []Job{{CPU1: 8, Net: 2}, {CPU1: 2, Net: 2}}
	groups := [][]int{{0}, {1}}
	// S_diff at m = 1: 6 and 0; group 0 takes machines while 8/m − 2 > 0:
	// at m = 2 it is 2, at 3 it is 0.67, at 4 it is 0 — a tie with group
	// 1's 0, which the earlier group wins.
	must.Eq(t, []int{1, 1}, AllocateMachines(jobs, groups, 2))
	must.Eq(t, []int{2, 1}, AllocateMachines(jobs, groups, 3))
	must.Eq(t, []int{4, 1}, AllocateMachines(jobs, groups, 5))
	must.Eq(t, []int{5, 1}, AllocateMachines(jobs, groups, 6))
	// At 5 machines group 0 is at 8/5 − 2 = −0.4 < 0: group 1 takes one.
	must.Eq(t, []int{5, 2}, AllocateMachines(jobs, groups, 7))
	must.SliceEmpty(t, AllocateMachines(jobs, nil, 3))
}

// TestGroup_Properties: on random instances every admitted job is in one
// group, each group has at least one machine and they use them all, jobs
// are admitted in arrival order, the result is deterministic, and U is a
// fraction.
func TestGroup_Properties(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	bound, groups := 0, 0
	for range 300 {
		total := 1 + rng.IntN(40)
		jobs := randomJobs(rng, 1+rng.IntN(60))
		g := Group(jobs, total)
		must.Eq(t, g, Group(jobs, total), must.Sprint("deterministic"))
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
			groups++
			if JobBound(jobs, members, g.Machines[k]) {
				bound++
			}
		}
		must.Eq(t, total, used, must.Sprint("every machine is given"))
		for i := range len(seen) {
			must.True(t, seen[i], must.Sprintf("admitted in order: job %d of %d", i, len(seen)))
		}
		u := g.Utilisation(jobs)
		must.Between(t, 0, u.CPU, 1)
		must.Between(t, 0, u.Net, 1)
	}
	t.Logf("%d of %d groups job-bound on their machines", bound, groups)
}

// TestAssignJobs_Properties: Algorithm 2 puts every job in exactly one of
// n_G non-empty groups; fine-tuning never raises Σ|S_diff| and never
// makes more groups job-bound (at Algorithm 2's equal DoP).
func TestAssignJobs_Properties(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 300 {
		jobs := randomJobs(rng, 1+rng.IntN(40))
		total := 1 + rng.IntN(40)
		idx := make([]int, len(jobs))
		for i := range idx {
			idx[i] = i
		}
		nG := 1 + rng.IntN(min(len(jobs), total))
		m := float64(total) / float64(nG)
		measure := func(groups [][]int) (imbalance float64, bound int) {
			for _, g := range groups {
				var s float64
				for _, i := range g {
					s += jobs[i].Diff(m)
				}
				imbalance += math.Abs(s)
				if len(g) > 1 {
					st := stats{}
					for _, i := range g {
						st.cpu += jobs[i].CPU(m)
						st.net += jobs[i].Net
						st.itr = math.Max(st.itr, jobs[i].Itr(m))
					}
					if st.itr > math.Max(st.cpu, st.net)*(1+tie) {
						bound++
					}
				}
			}
			return imbalance, bound
		}
		before := assignJobs(jobs, idx, nG, total)
		imbBefore, boundBefore := measure(before)
		fineTune(jobs, before, m)
		imbAfter, boundAfter := measure(before)
		must.LessEq(t, imbBefore+1e-9, imbAfter)
		must.LessEq(t, boundBefore, boundAfter)
		groups := AssignJobs(jobs, idx, nG, total)
		must.Eq(t, before, groups)
		must.SliceLen(t, nG, groups)
		var all []int
		for _, g := range groups {
			must.SliceNotEmpty(t, g)
			all = append(all, g...)
		}
		slices.Sort(all)
		must.Eq(t, idx, all)
	}
}

// TestGroup_AgainstOracle measures how far Group's utilisation is from the
// exhaustive search's on small instances (§4.4.7: within about 2%). The
// oracle groups the jobs Group admitted, in every partition and division
// of the machines.
func TestGroup_AgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var sum, worst, sumNet float64
	n := 0
	for range 60 {
		total := 2 + rng.IntN(7)
		jobs := randomJobs(rng, 2+rng.IntN(5))
		g := Group(jobs, total)
		var admitted []Job
		for _, members := range g.Groups {
			for _, i := range members {
				admitted = append(admitted, jobs[i])
			}
		}
		o := Oracle(admitted, total)
		ug, uo := g.Utilisation(jobs), o.Utilisation(admitted)
		must.False(t, ug.Better(uo), must.Sprint("the oracle is the best"))
		gap := 1 - ug.CPU/uo.CPU
		sum += gap
		sumNet += 1 - ug.Net/uo.Net
		worst = math.Max(worst, gap)
		n++
	}
	t.Logf("CPU utilisation gap to the oracle over %d instances (2-6 jobs, 2-8 machines): mean %.2f%%, worst %.2f%% (network: mean %.2f%%)",
		n, 100*sum/float64(n), 100*worst, 100*sumNet/float64(n))
	must.Less(t, 0.05, sum/float64(n))
}

// TestAllocateMachines_AsGreedy: the bulk step gives what one machine at
// a time would, on random instances.
func TestAllocateMachines_AsGreedy(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for range 300 {
		jobs := randomJobs(rng, 1+rng.IntN(30))
		nG := 1 + rng.IntN(len(jobs))
		groups := make([][]int, nG)
		for i := range jobs {
			groups[i%nG] = append(groups[i%nG], i)
		}
		total := nG + rng.IntN(200)
		// One at a time, as L973 says.
		want := make([]int, nG)
		for k := range want {
			want[k] = 1
		}
		for range total - nG {
			best, bestD := 0, math.Inf(-1)
			for k, g := range groups {
				var c, n float64
				for _, i := range g {
					c += jobs[i].CPU1
					n += jobs[i].Net
				}
				if d := c/float64(want[k]) - n; d > bestD {
					best, bestD = k, d
				}
			}
			want[best]++
		}
		must.Eq(t, want, AllocateMachines(jobs, groups, total))
	}
}
