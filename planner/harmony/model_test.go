package harmony

import (
	"math"
	"testing"

	"github.com/shoenig/test/must"
)

func approx(t *testing.T, want, got float64) {
	t.Helper()
	must.Less(t, 1e-9, math.Abs(want-got), must.Sprintf("want %v, got %v", want, got))
}

func approxU(t *testing.T, want, got Util) {
	t.Helper()
	approx(t, want.CPU, got.CPU)
	approx(t, want.Net, got.Net)
}

// TestModel_WorkedCases checks eqs. 4.1–4.4 on cases computed by hand.
func TestModel_WorkedCases(t *testing.T) {
	cpuHeavy, netHeavy := Job{CPU1: 3, Net: 1}, Job{CPU1: 1, Net: 3}
	jobs := []Job{cpuHeavy, netHeavy}
	cases := []struct {
		name    string
		members []int
		m       int
		time    float64
		util    Util
		bound   bool
	}{
		// Alone on one machine: ΣC = 3, ΣN = 1, T_itr = 4: T = 4, U = [3/4, 1/4].
		{"cpu-heavy alone", []int{0}, 1, 4, Util{0.75, 0.25}, false},
		// Alone on three: C = 1, N = 1, T_itr = 2: T = 2, U = [1/2, 1/2].
		{"cpu-heavy on three", []int{0}, 3, 2, Util{0.5, 0.5}, false},
		// Together on one: ΣC = 4, ΣN = 4, T_itr 4 and 4: T = 4, U = [1, 1].
		{"pair on one", []int{0, 1}, 1, 4, Util{1, 1}, false},
		// Together on two: ΣC = 1.5 + 0.5 = 2, ΣN = 4, T_itr 2.5 and 3.5:
		// network-bound, T = 4, U = [1/2, 1].
		{"pair on two", []int{0, 1}, 2, 4, Util{0.5, 1}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			approx(t, tc.time, GroupTime(jobs, tc.members, tc.m))
			approxU(t, tc.util, GroupUtilisation(jobs, tc.members, tc.m))
			must.Eq(t, tc.bound, JobBound(jobs, tc.members, tc.m))
		})
	}

	// A job whose own iteration exceeds both sums makes the group
	// job-bound (Figure 4.7b): ΣC = 1 + 1 = 2, ΣN = 10 + 0.1 = 10.1, but
	// T_itr of the first is 11: T = 11, U = [2/11, 10.1/11].
	long := []Job{{CPU1: 1, Net: 10}, {CPU1: 1, Net: 0.1}}
	must.True(t, JobBound(long, []int{0, 1}, 1))
	approx(t, 11, GroupTime(long, []int{0, 1}, 1))
	approxU(t, Util{2.0 / 11, 10.1 / 11}, GroupUtilisation(long, []int{0, 1}, 1))

	// Eq. 4.4 weighs groups by machines and divides by the machines they
	// use: {0} on 1 ([3/4, 1/4]) and {1} on 3 (C = 1/3, N = 3, T = 10/3:
	// [1/10, 9/10]) give ([3/4, 1/4] + 3·[1/10, 9/10]) / 4 = [0.2625, 0.7375].
	g := &Grouping{Groups: [][]int{{0}, {1}}, Machines: []int{1, 3}}
	approxU(t, Util{0.2625, 0.7375}, g.Utilisation(jobs))
	// Over 8 machines, the 4 idle ones count as zero: half of it.
	approxU(t, Util{0.13125, 0.36875}, g.UtilisationOver(jobs, 8))
}

// TestUtil_Order: CPU utilisation decides, network only breaks a tie.
func TestUtil_Order(t *testing.T) {
	must.True(t, Util{0.6, 0.1}.Better(Util{0.5, 1}))
	must.False(t, Util{0.5, 1}.Better(Util{0.6, 0.1}))
	must.True(t, Util{0.5, 0.9}.Better(Util{0.5, 0.8}))
	must.False(t, Util{0.5, 0.8}.Better(Util{0.5, 0.8}))
	approx(t, 0.2, Util{0.6, 0}.Gain(Util{0.5, 1}))
	approx(t, 0.5, Util{0.5, 0.6}.Gain(Util{0.5, 0.4}))
	approx(t, -0.5, Util{0.25, 1}.Gain(Util{0.5, 0}))
}
