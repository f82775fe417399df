package harmony

// Oracle returns the grouping of every job of jobs on total machines with
// the highest cluster utilisation, by trying every partition of the jobs
// into groups and every division of the machines among them (each group
// at least one, some possibly idle). It is exponential: for instances up
// to about 8 jobs and 12 machines, to measure how far Group is from the
// best. Groups never outnumber machines; nil when there are no machines.
func Oracle(jobs []Job, total int, alpha float64) *Grouping {
	var best *Grouping
	bestU := -1.0
	assign := make([]int, len(jobs))
	var partitions func(i, groups int)
	partitions = func(i, groups int) {
		if i == len(jobs) {
			if groups > total {
				return
			}
			members := make([][]int, groups)
			for j, k := range assign {
				members[k] = append(members[k], j)
			}
			machines := make([]int, groups)
			var divide func(k, left int)
			divide = func(k, left int) {
				if k == groups {
					g := &Grouping{Groups: members, Machines: machines}
					if u := g.Utilisation(jobs, total, alpha); u > bestU {
						bestU = u
						best = &Grouping{Groups: clone2(members), Machines: append([]int(nil), machines...)}
					}
					return
				}
				for m := 1; m <= left-(groups-k-1); m++ {
					machines[k] = m
					divide(k+1, left-m)
				}
			}
			divide(0, total)
			return
		}
		// Job i joins one of the groups so far or starts the next one
		// (restricted growth strings: each partition once).
		for k := 0; k <= groups; k++ {
			assign[i] = k
			if k == groups {
				partitions(i+1, groups+1)
			} else {
				partitions(i+1, groups)
			}
		}
	}
	partitions(0, 0)
	return best
}

func clone2(xs [][]int) [][]int {
	out := make([][]int, len(xs))
	for i, x := range xs {
		out[i] = append([]int(nil), x...)
	}
	return out
}
