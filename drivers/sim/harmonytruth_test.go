package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/shoenig/test/must"
)

// TestSimulatePhases_Alone: a job alone on its nodes iterates in its
// busiest node's computation plus its communication, on average Table
// 2.1's time at DoP 16 for each app, with Table 2.1's variation.
func TestSimulatePhases_Alone(t *testing.T) {
	for _, app := range harmonyApps {
		t.Run(app.App, func(t *testing.T) {
			cpu1, net := app.shape(0)
			j := phaseJob{net: net, cv: app.Std / app.Iteration}
			for n := range HarmonyDoP {
				j.nodes = append(j.nodes, n)
				j.cpu = append(j.cpu, cpu1/HarmonyDoP)
			}
			// Many jobs on disjoint nodes: each alone, their mean over
			// iterations and jobs near Table 2.1's.
			var jobs []phaseJob
			for k := range 20 {
				c := j
				c.nodes = nil
				for _, n := range j.nodes {
					c.nodes = append(c.nodes, n+k*HarmonyDoP)
				}
				jobs = append(jobs, c)
			}
			out := simulatePhases(jobs, true, rand.New(rand.NewPCG(1, 2)))
			sum := 0.0
			for _, it := range out.iter {
				sum += it
			}
			must.Between(t, 0.99*app.Iteration, sum/float64(len(jobs)), 1.01*app.Iteration)
			// Coordination changes nothing for a job alone.
			un := simulatePhases(jobs[:1], false, rand.New(rand.NewPCG(1, 2)))
			co := simulatePhases(jobs[:1], true, rand.New(rand.NewPCG(1, 2)))
			must.Eq(t, co.iter, un.iter)
			// Alone, its CPU is busy T_cpu of every iteration.
			must.Between(t, 0.98*app.CPUShare, out.cpu[0], 1.02*app.CPUShare)
			must.Between(t, 0.98*(1-app.CPUShare), out.net[0], 1.02*(1-app.CPUShare))
		})
	}
	// Without variation, exactly the busiest node's computation plus
	// the communication.
	out := simulatePhases([]phaseJob{{nodes: []int{0, 1}, cpu: []float64{2, 3}, net: 1.5}}, false, rand.New(rand.NewPCG(1, 2)))
	must.Eq(t, 4.5, out.iter[0])
	must.Eq(t, 2/4.5, out.cpu[0])
	must.Eq(t, 3/4.5, out.cpu[1])
}

// TestSimulatePhases_Contention: cases worked by hand on one node, no
// variation.
func TestSimulatePhases_Contention(t *testing.T) {
	node := func(cpu, net float64) phaseJob { return phaseJob{nodes: []int{0}, cpu: []float64{cpu}, net: net} }
	for _, c := range []struct {
		name        string
		jobs        []phaseJob
		coordinated bool
		iter        []float64
		cpu, net    float64
	}{
		// Both compute at half speed until 4, then both communicate at
		// half speed until 6, and again.
		{"alike, shared", []phaseJob{node(2, 1), node(2, 1)}, false, []float64{6, 6}, 4.0 / 6, 2.0 / 6},
		// A computes 0–2, B 2–4 while A communicates 2–3; A waits for
		// the CPU until 4: each iterates every ΣC = 4 s.
		{"alike, coordinated", []phaseJob{node(2, 1), node(2, 1)}, true, []float64{4, 4}, 1, 0.5},
		// A computes 0–2 while B waits; then A communicates while B
		// computes (2–3), B communicates while A computes (3–5): each
		// iterates in its own 3 s, both resources always busy.
		{"complementary, coordinated", []phaseJob{node(2, 1), node(1, 2)}, true, []float64{3, 3}, 1, 1},
		// Both compute at half speed: B's 1 s ends at 2, A's at 3 (alone
		// 2–3); B communicates alone 2–3, then with A at half speed until
		// both end at 5, where both compute again: a 5 s cycle, the CPU
		// busy 0–3 and the network 2–5.
		{"complementary, shared", []phaseJob{node(2, 1), node(1, 2)}, false, []float64{5, 5}, 0.6, 0.6},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := simulatePhases(c.jobs, c.coordinated, rand.New(rand.NewPCG(1, 2)))
			for k := range c.iter {
				must.Between(t, c.iter[k]-1e-9, out.iter[k], c.iter[k]+1e-9)
			}
			must.Between(t, c.cpu-1e-9, out.cpu[0], c.cpu+1e-9)
			must.Between(t, c.net-1e-9, out.net[0], c.net+1e-9)
		})
	}
}

// TestSimulatePhases_Barrier: a job spread over two nodes waits for its
// slower node at every phase. A computes 1 s on both nodes; B shares node
// 1 and computes 2 s there, coordinated. A's computation on node 1 waits
// behind B's when they queue together, so A cannot iterate in its own 2 s.
func TestSimulatePhases_Barrier(t *testing.T) {
	jobs := []phaseJob{
		{nodes: []int{0, 1}, cpu: []float64{1, 1}, net: 1},
		{nodes: []int{1}, cpu: []float64{2}, net: 1},
	}
	out := simulatePhases(jobs, true, rand.New(rand.NewPCG(1, 2)))
	// Node 1's CPU has 3 s of work per round of both jobs; both
	// iterate every 3 s at best.
	must.Between(t, 3-1e-9, out.iter[0], 3+1e-9)
	must.Between(t, 3-1e-9, out.iter[1], 3+1e-9)
	must.Between(t, 1-1e-9, out.cpu[1], 1+1e-9)
	must.Between(t, 1.0/3-1e-9, out.cpu[0], 1.0/3+1e-9)
}

// TestSimulatePhases_WorkBound: on a group's shared nodes, no cycle in
// which every job iterates once can be shorter than the node's CPU work,
// its network work, or the longest job's own iteration (work
// conservation; Harmony's eq. 4.1 predicts the cycle to be exactly that).
// The coordinated phase simulation never beats the bound, by more than
// Table 2.1's variation, on 200 random groups of 2–5 of the workload's
// jobs on 4–16 nodes, and the test logs how far above it the groups run
// (planner/README.md, Numbers → Harmony): `go test -v -run
// TestSimulatePhases_WorkBound ./drivers/sim`.
func TestSimulatePhases_WorkBound(t *testing.T) {
	w := HarmonyWorkload(HarmonyJobs, 0, 1)
	rng := rand.New(rand.NewPCG(7, 8))
	var gaps []float64
	for range 200 {
		k, m := 2+rng.IntN(4), 4+rng.IntN(13)
		var jobs []phaseJob
		var sumC, sumN, own float64
		for range k {
			tr := w.Arrivals[rng.IntN(len(w.Arrivals))].Truth.(*SubtaskTruth)
			j := phaseJob{net: tr.Net, cv: tr.CV}
			for n := range m {
				j.nodes = append(j.nodes, n)
				j.cpu = append(j.cpu, tr.CPU1/float64(m))
			}
			jobs = append(jobs, j)
			sumC += tr.CPU1 / float64(m)
			sumN += tr.Net
			own = max(own, tr.CPU1/float64(m)+tr.Net)
		}
		bound := max(sumC, sumN, own)
		out := simulatePhases(jobs, true, rand.New(rand.NewPCG(rng.Uint64(), 1)))
		worst := 0.0
		for _, it := range out.iter {
			worst = max(worst, it)
		}
		must.GreaterEq(t, 0.97*bound, worst)
		gaps = append(gaps, worst/bound-1)
	}
	mean, most, over5 := 0.0, 0.0, 0
	for _, g := range gaps {
		mean += g / float64(len(gaps))
		most = max(most, g)
		if g > 0.05 {
			over5++
		}
	}
	t.Logf("slowest job's iteration over the work bound, 200 groups: mean %+.1f%%, worst %+.1f%%, %d above 5%%", 100*mean, 100*most, over5)
}
