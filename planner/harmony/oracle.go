package harmony

// Oracle is the exhaustive search of §4.4.7 (L1120): the grouping of every
// job of jobs on total machines with the highest cluster utilisation U
// (eq. 4.4, ordered by Util.Better), trying every partition of the jobs
// into groups and every division of all total machines among them (each
// group at least one machine, as AllocateMachines gives them all). It is
// exponential: for instances up to about 8 jobs and 12 machines, to
// measure how far Group is from the best. Groups never outnumber
// machines; nil when there are no jobs or no machines. Ties keep the
// first found, so it is deterministic.
func Oracle(jobs []Job, total int) *Grouping {
	if len(jobs) == 0 || total < 1 {
		return nil
	}
	var best *Grouping
	var bestU Util
	assign := make([]int, len(jobs))
	var partitions func(i, groups int)
	partitions = func(i, groups int) {
		if groups > total {
			return
		}
		if i == len(jobs) {
			members := make([][]int, groups)
			for j, k := range assign {
				members[k] = append(members[k], j)
			}
			machines := make([]int, groups)
			var divide func(k, left int)
			divide = func(k, left int) {
				if k == groups-1 {
					machines[k] = left
					g := &Grouping{Groups: members, Machines: machines}
					if u := g.Utilisation(jobs); best == nil || u.Better(bestU) {
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
