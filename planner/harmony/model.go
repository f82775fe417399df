package harmony

import "math"

// Job is one job's profile: CPU1 is the computation of an iteration on
// one machine, Net the communication of an iteration, in seconds.
// Communication does not shrink with machines: with a worker and a server
// on each, every worker pulls the whole model from the servers' shards.
type Job struct {
	CPU1, Net float64
}

// CPU is the job's computation of an iteration on m machines (eq. 4.2).
func (j Job) CPU(m int) float64 { return j.CPU1 / float64(m) }

// Options tune the model and the search; the zero value takes defaults.
type Options struct {
	// CPUWeight is α of eq. 4.3, the weight of CPU utilisation against
	// network's (default 2/3; the dissertation weights CPU higher, by a
	// factor we could not find).
	CPUWeight float64
	// MinGain is the least relative utilisation gain for which Harmony
	// regroups running jobs (default 0.05).
	MinGain float64
	// Passes bounds the fine-tuning passes over the jobs (default 4).
	Passes int
}

func (o Options) withDefaults() Options {
	if o.CPUWeight == 0 {
		o.CPUWeight = 2.0 / 3
	}
	if o.MinGain == 0 {
		o.MinGain = 0.05
	}
	if o.Passes == 0 {
		o.Passes = 4
	}
	return o
}

// sums returns a group's Σ C and Σ N on m machines and its longest job's
// own C + N.
func sums(jobs []Job, members []int, m int) (c, n, own float64) {
	for _, i := range members {
		ci := jobs[i].CPU(m)
		c += ci
		n += jobs[i].Net
		own = math.Max(own, ci+jobs[i].Net)
	}
	return c, n, own
}

// groupTime is the group's iteration time on m machines (eq. 4.1).
func groupTime(jobs []Job, members []int, m int) float64 {
	c, n, own := sums(jobs, members, m)
	return math.Max(math.Max(c, n), own)
}

// jobBound reports whether one job's own iteration sets the group's time.
func jobBound(jobs []Job, members []int, m int) bool {
	c, n, own := sums(jobs, members, m)
	return len(members) > 1 && own > math.Max(c, n)
}

// GroupUtilisation is U_g of eq. 4.3 for the jobs members of jobs on m
// machines.
func GroupUtilisation(jobs []Job, members []int, m int, alpha float64) float64 {
	if len(members) == 0 || m < 1 {
		return 0
	}
	c, n, own := sums(jobs, members, m)
	t := math.Max(math.Max(c, n), own)
	if t <= 0 {
		return 0
	}
	return alpha*c/t + (1-alpha)*n/t
}

// Grouping is groups of jobs, by index, and the machines of each.
type Grouping struct {
	Groups   [][]int
	Machines []int
}

// Utilisation is U of eq. 4.4 over a cluster of total machines: groups
// weighted by their machines, idle machines counting as 0.
func (g *Grouping) Utilisation(jobs []Job, total int, alpha float64) float64 {
	if total < 1 {
		return 0
	}
	var u float64
	for k, members := range g.Groups {
		u += float64(g.Machines[k]) * GroupUtilisation(jobs, members, g.Machines[k], alpha)
	}
	return u / float64(total)
}
