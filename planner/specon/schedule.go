package specon

import "fmt"

// Score is Algorithm 2 line 3: S_w = |PC_w|·w_pc + |WC_w|·w_wc + |CC_w|·w_cc.
func (o Options) Score(counts [3]int) float64 {
	return float64(counts[Progressing])*o.WPC + float64(counts[Watching])*o.WWC + float64(counts[Converged])*o.WCC
}

// active is line 15's |PC| + |WC|: the running jobs in PC or WC over
// the cluster, as the listing writes it, or on node host alone with
// Options.Line15PerNode. A job on several nodes counts once per node, as
// in the scores.
func (st *state) active(cat [][3]int, host int) int {
	if st.opts.Line15PerNode {
		return cat[host][Progressing] + cat[host][Watching]
	}
	n := 0
	for _, c := range cat {
		n += c[Progressing] + c[Watching]
	}
	return n
}

// schedule is Algorithm 2 for every job whose monitor requests a
// reallocation (Algorithm 1 lines 13–16), in job order, each seeing the
// moves before it. The candidate set T holds the least-scored nodes among
// the job's host and the nodes its tasks fit on now (lines 4–7; a node
// without room for it cannot take it in Caravan). Every job decided on is
// marked migrated, whether it moves or not (lines 9, 15, 20).
func (st *state) schedule() {
	for i := range st.jobs {
		if st.mark[i].migrated || !st.mon[i].Request {
			continue
		}
		host, ok := st.host(i)
		if !ok {
			continue
		}
		cat, _ := st.tally()
		if st.active(cat, host) <= 1 { // line 15
			continue
		}
		minScore, hostIn := 0.0, false
		var cands []int
		for n := range st.c.Nodes {
			if n != host && !st.fits(i, n) {
				continue
			}
			s := st.opts.Score(cat[n])
			switch {
			case len(cands) == 0 || s < minScore:
				minScore, cands = s, []int{n}
			case s == minScore:
				cands = append(cands, n)
			}
		}
		for _, n := range cands {
			hostIn = hostIn || n == host
		}
		st.mark[i] = mark{migrated: true, since: st.req.Now}
		from := st.c.Nodes[host].ID
		if hostIn { // lines 8–10
			st.out[i].Reason = st.mark[i].reason(fmt.Sprintf("stays on %s, a least-scored node (score %g; Algorithm 2)", from, minScore))
			continue
		}
		to := cands[0]                // line 13: |T| = 1
		for _, n := range cands[1:] { // lines 17–21: least R(w, t), then node order
			if st.load(n) < st.load(to) {
				to = n
			}
		}
		st.move(i, to, st.mark[i].reason(fmt.Sprintf("migrated from %s to %s, a least-scored node (score %g, load %.2f; Algorithm 2)",
			from, st.c.Nodes[to].ID, minScore, st.load(to))))
	}
}
