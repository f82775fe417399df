package specon

import (
	"cmp"
	"fmt"
	"slices"
)

// rebalance is Algorithm 3. D holds the running jobs that are marked
// migrated and not yet rebalanced, with d = now − t_cj (lines 2–6);
// |w_i| counts the jobs running on node i and bf = ⌊Σ|w_i| / |W|⌋ (line
// 9). When some nodes are idle (T, lines 7–8), each idle node, in node
// order, takes the job of least d that fits there, while |w_i| < bf (lines
// 10–18). Otherwise T is the nodes with |w_i| < bf − 1 (lines 19–22); each,
// least loaded first, takes the job of least d that runs on a node not in T
// and fits there (lines 23–31). Counts are updated after every move, and a
// job is rebalanced at most once.
func (st *state) rebalance() {
	_, jobs := st.tally()
	sum := 0
	for _, n := range jobs {
		sum += n
	}
	if len(jobs) == 0 {
		return
	}
	bf := sum / len(jobs) // line 9
	var d []int           // jobs of D, least d first (latest t_cj), then job order
	for i := range st.jobs {
		if _, ok := st.host(i); ok && st.mark[i].migrated && !st.mark[i].rebalanced {
			d = append(d, i)
		}
	}
	slices.SortStableFunc(d, func(a, b int) int { return cmp.Compare(st.mark[b].since, st.mark[a].since) })

	var t []int
	for n, c := range jobs {
		if c == 0 { // lines 7–8
			t = append(t, n)
		}
	}
	idle := len(t) > 0
	if !idle { // lines 19–22
		for n, c := range jobs {
			if c < bf-1 {
				t = append(t, n)
			}
		}
		slices.SortStableFunc(t, func(a, b int) int { return cmp.Compare(jobs[a], jobs[b]) })
	}
	inT := make([]bool, len(jobs))
	for _, n := range t {
		inT[n] = true
	}
	for _, n := range t {
		limit := bf // line 12
		if !idle {
			limit = bf - 1 // line 27
		}
		if jobs[n] >= limit {
			continue
		}
		for k, i := range d {
			from, ok := st.host(i)
			if !ok || (!idle && inT[from]) || from == n || !st.fits(i, n) {
				continue
			}
			d = slices.Delete(d, k, k+1) // line 14
			st.mark[i].rebalanced = true // lines 16, 29
			st.move(i, n, st.mark[i].reason(fmt.Sprintf("rebalanced from %s (%d jobs) to %s (%d jobs), balance factor %d (Algorithm 3)",
				st.c.Nodes[from].ID, jobs[from], st.c.Nodes[n].ID, jobs[n], bf)))
			jobs[from]--
			jobs[n]++
			break
		}
	}
}
