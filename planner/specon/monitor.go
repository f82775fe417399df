package specon

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/caravan-sched/caravan/planner"
)

// Category is a job's progress category (§V-A).
type Category int

const (
	// Progressing (PC): the evaluation function still improves quickly.
	Progressing Category = iota
	// Watching (WC): the gain fell below α and is falling.
	Watching
	// Converged (CC): the gain kept falling below α; the job is a
	// candidate for speculative migration.
	Converged
)

// String returns the paper's short name of the category.
func (c Category) String() string {
	switch c {
	case Progressing:
		return "PC"
	case Watching:
		return "WC"
	case Converged:
		return "CC"
	}
	return "unknown"
}

// Monitor is Algorithm 1's outcome for one job at the planning time.
type Monitor struct {
	Category Category
	// Request is true when the job is in CC and, since it last entered
	// CC, a round took line 13 of Algorithm 1 (its gain fell again), so
	// that its worker asks the manager to reallocate it (lines 15–16; the
	// planner applies their |PC|+|WC| > 1 test with the jobs of the
	// decision, over the cluster or the job's node: Options.Line15PerNode).
	Request bool
	// Rounds is how many categorization rounds the history allowed.
	Rounds int
}

// maxGridRounds bounds the rounds Categorize replays: 2^16, 22 days of
// 30-second intervals.
const maxGridRounds = 1 << 16

// Categorize replays Algorithm 1 over a job's progress history, which is
// how a stateless planner recovers the container monitor's state. The
// evaluation function E(t) is the loss of the newest point at or before t
// ("when querying in the middle of an iteration, the previous value will be
// returned", §V-A); t_m runs from the first point in steps of interval up
// to the newest point. Each round computes the gain (line 5) as the
// relative change |E(t_m) − E(t_{m−1})| / |E(t_{m−1})| (the absolute change
// when E(t_{m−1}) is 0) and applies lines 6–22. The first gain has no
// previous gain to compare with and only seeds G(t_{m−1}). A job with fewer
// than three points on the grid stays in PC (line 2). Points need not be
// sorted; progress is not modified. The grid starts maxGridRounds
// intervals before the newest point at the earliest.
func Categorize(progress []planner.ProgressPoint, interval time.Duration, alpha float64) Monitor {
	var m Monitor
	if len(progress) == 0 || interval <= 0 {
		return m
	}
	pts := slices.Clone(progress)
	slices.SortStableFunc(pts, func(a, b planner.ProgressPoint) int { return cmp.Compare(a.Time, b.Time) })
	step := int64(interval)
	t0, last := pts[0].Time, pts[len(pts)-1].Time
	// Bounded by construction: the grid covers the last maxGridRounds
	// intervals at most (a point stamped in 1970 would otherwise make
	// tens of millions of rounds). A job monitored that long has settled
	// in its category many times over.
	if (last-t0)/step > maxGridRounds {
		t0 = last - maxGridRounds*step
	}
	k := 0 // pts[:k+1] are at or before the current t_m
	value := func(t int64) float64 {
		for k+1 < len(pts) && pts[k+1].Time <= t {
			k++
		}
		return pts[k].Loss
	}
	prevE := value(t0)
	prevG, haveG := 0.0, false
	for t := t0 + step; t <= last; t += step {
		e := value(t)
		g := math.Abs(e - prevE) // line 5
		if prevE != 0 {
			g /= math.Abs(prevE)
		}
		prevE = e
		if haveG {
			m.Rounds++
			switch {
			case g < prevG && g < alpha: // line 6
				switch m.Category {
				case Progressing: // lines 7–9
					m.Category = Watching
				case Watching: // lines 10–12 (the prose: WC to CC)
					m.Category = Converged
				case Converged: // lines 13–16
					m.Request = true
				}
			case g >= prevG && g < alpha: // lines 17–18: stays
			case g > alpha: // lines 19–22
				m.Category, m.Request = Progressing, false
			}
		}
		prevG, haveG = g, true
	}
	return m
}
