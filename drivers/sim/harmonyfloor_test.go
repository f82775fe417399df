package sim

import (
	"cmp"
	"slices"
	"strings"
	"testing"
)

// TestHarmonyWorkload_LongestJob: the makespan of the dissertation's
// workload can be no shorter than its longest job alone at the largest
// DoP the jobs allow (32), whatever the policy. Logged per seed for
// planner/README.md (Numbers → Harmony): `go test -v -run
// TestHarmonyWorkload_LongestJob ./drivers/sim`.
func TestHarmonyWorkload_LongestJob(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		w := HarmonyWorkload(HarmonyJobs, 0, seed)
		type alone struct {
			id             string
			at32, atIsoDoP float64
			isoDoP         int
		}
		var all []alone
		for _, a := range w.Arrivals {
			tr := a.Truth.(*SubtaskTruth)
			iso := max(1, min(32, int(tr.CPU1/tr.Net)))
			all = append(all, alone{tr.ID, tr.Iterations * (tr.CPU1/32 + tr.Net), tr.Iterations * (tr.CPU1/float64(iso) + tr.Net), iso})
		}
		slices.SortFunc(all, func(a, b alone) int { return cmp.Compare(b.at32, a.at32) })
		for _, a := range all[:3] {
			t.Logf("seed %d: %s alone %.0f s at DoP 32, %.0f s at DoP %d (⌊CPU1/Net⌋)", seed, a.id, a.at32, a.atIsoDoP, a.isoDoP)
		}
		// Alone, a job's iteration is its computation on each node plus
		// its communication, which DoP does not shorten: the longest job
		// is an NMF job on Netflix128x (Table 4.1: 5 GB of model).
		if !strings.HasPrefix(all[0].id, "nmf-d2-") || all[0].at32 <= all[1].at32 || all[1].at32 <= 0 {
			t.Fatalf("seed %d: the longest jobs alone are %s (%.0f s) and %s (%.0f s), want an NMF job on Netflix128x first", seed, all[0].id, all[0].at32, all[1].id, all[1].at32)
		}
	}
}
