package specon

import (
	"slices"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/shoenig/test/must"
)

// series returns progress points every 30 s from t0 with the given losses.
func series(t0 int64, losses ...float64) []planner.ProgressPoint {
	out := make([]planner.ProgressPoint, len(losses))
	for k, l := range losses {
		out[k] = planner.ProgressPoint{Time: t0 + int64(k)*int64(30*time.Second), Loss: l}
	}
	return out
}

// TestCategorize walks Algorithm 1 on hand-computed gains (relative, α =
// 0.01, 30 s). In "converges", the gains are 0.1 (seeds G), 0.00111 (< 0.1
// and < α: PC → WC, lines 6–9), 0.000556 (falling: WC → CC, lines 10–12),
// 0.000111 (falling again in CC: line 13, a request).
func TestCategorize(t *testing.T) {
	cases := []struct {
		name     string
		progress []planner.ProgressPoint
		want     Monitor
	}{
		{"no progress", nil, Monitor{}},
		{"two points: one gain, no comparison", series(0, 1, 0.5), Monitor{}},
		{"halving every interval stays progressing", series(0, 1, 0.5, 0.25, 0.125, 0.0625), Monitor{Rounds: 3}},
		{"slows: PC to WC", series(0, 1, 0.9, 0.899), Monitor{Category: Watching, Rounds: 1}},
		{"slows more: WC to CC", series(0, 1, 0.9, 0.899, 0.8985), Monitor{Category: Converged, Rounds: 2}},
		{"converges: CC and a request", series(0, 1, 0.9, 0.899, 0.8985, 0.8984), Monitor{Category: Converged, Request: true, Rounds: 3}},
		// Gains 0.1, 0.00111 (WC), 0.00334 (rising but < α: stays, lines
		// 17–18), 0.00111 (falling: CC).
		{"bounce below α keeps the category", series(0, 1, 0.9, 0.899, 0.896, 0.895), Monitor{Category: Converged, Rounds: 3}},
		// In CC with a request, then a gain of 0.1 > α: back to PC (lines
		// 19–22), the request withdrawn.
		{"sudden gain resets to PC", series(0, 1, 0.9, 0.899, 0.8985, 0.8984, 0.8), Monitor{Category: Progressing, Rounds: 4}},
		// A constant loss has gains 0, 0, 0: below α but not falling
		// (lines 17–18), so it stays in PC.
		{"flat loss never falls", series(0, 1, 1, 1, 1, 1), Monitor{Rounds: 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Categorize(tc.progress, DefaultInterval, DefaultAlpha)
			must.Eq(t, tc.want, got)
		})
	}
}

// TestCategorize_Grid checks that E(t_m) is the newest point at or before
// t_m: samples every 10 s read at a 30 s grid give the "converges" case,
// whatever the order of the points.
func TestCategorize_Grid(t *testing.T) {
	coarse := []float64{1, 0.9, 0.899, 0.8985, 0.8984}
	var fine []planner.ProgressPoint
	for k, l := range coarse {
		for s := range 3 {
			if k == len(coarse)-1 && s > 0 {
				break
			}
			// points between grid times, which E(t_m) must not read
			v := l
			if s > 0 {
				v = l - float64(s)*1e-9
			}
			fine = append(fine, planner.ProgressPoint{Time: int64(k)*int64(30*time.Second) + int64(s)*int64(10*time.Second), Loss: v})
		}
	}
	want := Monitor{Category: Converged, Request: true, Rounds: 3}
	must.Eq(t, want, Categorize(fine, DefaultInterval, DefaultAlpha))
	rev := slices.Clone(fine)
	slices.Reverse(rev)
	must.Eq(t, want, Categorize(rev, DefaultInterval, DefaultAlpha))
	must.Eq(t, fine[0], rev[len(rev)-1], must.Sprint("Categorize must not modify its input"))
}

// TestCategorize_Bounded: a point stamped decades before the others (a
// sample with Time 1) makes Categorize replay maxGridRounds rounds at most,
// not one per interval since 1970 (issue 26).
func TestCategorize_Bounded(t *testing.T) {
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC).UnixNano()
	pts := []planner.ProgressPoint{{Time: 1, Loss: 2}, {Time: now - int64(time.Minute), Loss: 1}, {Time: now, Loss: 0.9}}
	m := Categorize(pts, DefaultInterval, DefaultAlpha)
	must.Eq(t, maxGridRounds-1, m.Rounds)
}
