package dlrover

import (
	"testing"

	"github.com/shoenig/test/must"
)

// TestInitial_Table1 checks eqs. 10 and 11 against the paper's Table 1
// (D:168-173): from the sampling row's ŵ and ŝ, with C_total = 200 and
// s = 16, the optimize row's N_w, w and N_ps.
func TestInitial_Table1(t *testing.T) {
	cases := []struct {
		name               string
		what, shat         float64
		workers, ps        int
		workerCPU, psTotal float64
	}{
		// ⌊200/(2.5+5.7)⌋ = 24; 200 − 24·2.5 = 140; ⌊140/16⌋ = 8; ⌈2.5⌉ = 3.
		{"wide&deep", 2.5, 5.7, 24, 8, 3, 140},
		// ⌊200/22.5⌋ = 8 (⌊s_total/ŝ⌋ = 14 does not bind); 200 − 155.2 =
		// 44.8; ⌊44.8/16⌋ = 2; ⌈19.4⌉ = 20.
		{"xdeepfm", 19.4, 3.1, 8, 2, 20, 44.8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Initial(c.what, c.shat, 200, 16)
			must.Eq(t, c.workers, got.Workers)
			must.Eq(t, c.ps, got.PS)
			must.Eq(t, c.workerCPU, got.WorkerCPU)
			must.Eq(t, 16.0, got.PSCPU)
			must.InDelta(t, c.psTotal, got.PSTotal, 1e-9)
		})
	}
}

func TestInitial_Bounds(t *testing.T) {
	// An exact quotient is not rounded down by floating-point error:
	// ⌊100/(1+9)⌋ = 10, s_total = 90 = N_w·ŝ (eq. 4 with ≤, A4).
	got := Initial(1, 9, 100, 16)
	must.Eq(t, 10, got.Workers)
	must.Eq(t, 5, got.PS) // ⌊90/16⌋
	must.True(t, got.PSTotal >= float64(got.Workers)*9)
	// No servers (all-reduce): N_w = ⌊C_total/ŵ⌋.
	got = Initial(3, 0, 200, 16)
	must.Eq(t, Config{Workers: 66, WorkerCPU: 3}, got)
	// A worker that needs more than the job's cap still runs alone.
	got = Initial(300, 5, 200, 16)
	must.Eq(t, 1, got.Workers)
	must.Eq(t, 1, got.PS)
}

// TestGrowWorkers checks ΔN_w (D:164) on the paper's example: xDeepFM at
// 8 workers and 2 servers of 16 cores using 27.4 cores gains 2 workers.
func TestGrowWorkers(t *testing.T) {
	// ŝ = 27.4/8 = 3.425; s_total/ŝ = 32/3.425 = 9.34, ⌈⌉ = 10.
	must.Eq(t, 2, GrowWorkers(32, 27.4, 8, 100))
	must.Eq(t, 2, GrowWorkers(32, 27.4, 8, 10_000))
	// √K caps: √81 = 9.
	must.Eq(t, 1, GrowWorkers(32, 27.4, 8, 81))
	// Servers already saturated: no growth, never negative.
	must.Eq(t, 0, GrowWorkers(32, 40, 8, 100))
	must.Eq(t, 0, GrowWorkers(32, 0, 8, 100))
	must.Eq(t, 0, GrowWorkers(32, 27.4, 0, 100))
}

// TestHotPSCPU checks the hot server's size (D:166) on Wide & Deep: 24
// workers, one server at 14.9 of the 85.1 cores all use, ŝ = 5.7 at one
// worker: 14.9/85.1·5.7·24 = 23.95, so 24 cores, as the paper's PS-2 and
// PS-3 got.
func TestHotPSCPU(t *testing.T) {
	must.Eq(t, 24.0, HotPSCPU(14.9, 85.1, 5.7, 24, 32))
	// C_max caps.
	must.Eq(t, 32.0, HotPSCPU(40, 85.1, 5.7, 24, 32))
	must.Eq(t, 0.0, HotPSCPU(1, 0, 5.7, 24, 32))
}
