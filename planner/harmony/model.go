package harmony

import "math"

// Job is one job's profile (§4.3.2 "Profiling", L813): CPU1 is the
// computation (COMP subtasks) of an iteration on one machine, Net the
// communication (COMM subtasks) of an iteration, in seconds. Computation
// shrinks with the group's machines (eq. 4.2, L838–841); communication
// does not ("COMM subtasks … remain rather indifferent", L838).
type Job struct {
	CPU1, Net float64
}

// CPU is T_cpu of the job on m machines: CPU1/m (eq. 4.2, with the
// constant of proportionality CPU1).
func (j Job) CPU(m float64) float64 { return j.CPU1 / m }

// Itr is T_j_itr, the job's own iteration time on m machines: T_cpu + T_net
// (the job-bound term of eq. 4.1).
func (j Job) Itr(m float64) float64 { return j.CPU(m) + j.Net }

// Diff is T_diff = T_cpu − T_net on m machines (Algorithm 2, L7 comment):
// positive when the job is CPU-bound.
func (j Job) Diff(m float64) float64 { return j.CPU(m) - j.Net }

// Util is the two-part utilisation vector of eq. 4.3 (L845–848): the
// shares of the group iteration that CPU and network subtasks keep their
// resource busy. There is no weight between the parts; the text's α
// (§4.3.3, L996) is the disk-block ratio of data reloading, not a weight.
type Util struct {
	CPU, Net float64
}

// tie is how close two CPU utilisations must be to count as equal, so that
// network utilisation decides between them (see Better).
const tie = 1e-9

// Better reports whether u is a higher utilisation than v. The text
// compares utilisations as scalars ("U(G) > U_max", Algorithm 1 L10) and
// says "CPU utilization rates are treated more importantly than the
// network utilization … since CPU resources directly contribute to the job
// progress" (L859), without a weight. We read that as a lexicographic
// order: CPU utilisation first, network utilisation only to break a tie
// (within 1e-9).
func (u Util) Better(v Util) bool {
	if math.Abs(u.CPU-v.CPU) > tie {
		return u.CPU > v.CPU
	}
	return u.Net > v.Net+tie
}

// Gain is u's relative improvement over v, in the same order as Better:
// the relative gain in CPU utilisation, or, when the CPU parts tie, in
// network utilisation. It is what the 5% thresholds of dynamic regrouping
// (L979) compare against; negative when u is worse.
func (u Util) Gain(v Util) float64 {
	rel := func(a, b float64) float64 {
		if b <= 0 {
			if a > b {
				return math.Inf(1)
			}
			return 0
		}
		return (a - b) / b
	}
	if math.Abs(u.CPU-v.CPU) > tie {
		return rel(u.CPU, v.CPU)
	}
	return rel(u.Net, v.Net)
}

// stats are a group's sums on m machines: Σ T_cpu, Σ T_net and the longest
// job iteration max T_j_itr.
type stats struct {
	cpu, net, itr float64
}

func groupStats(jobs []Job, members []int, m int) stats {
	var s stats
	mf := float64(m)
	for _, i := range members {
		s.cpu += jobs[i].CPU(mf)
		s.net += jobs[i].Net
		s.itr = math.Max(s.itr, jobs[i].Itr(mf))
	}
	return s
}

// time is T_g_itr of eq. 4.1 (L835): the larger of the resource-bound terms
// Σ T_cpu and Σ T_net and the job-bound term max T_j_itr.
func (s stats) time() float64 { return math.Max(math.Max(s.cpu, s.net), s.itr) }

// util is U(g) of eq. 4.3.
func (s stats) util() Util {
	t := s.time()
	if t <= 0 {
		return Util{}
	}
	return Util{CPU: s.cpu / t, Net: s.net / t}
}

// GroupTime is the group iteration time T_g_itr (eq. 4.1) of the jobs
// members of jobs on m machines, in seconds.
func GroupTime(jobs []Job, members []int, m int) float64 {
	return groupStats(jobs, members, m).time()
}

// GroupUtilisation is U(g) (eq. 4.3) of the jobs members of jobs on m
// machines; zero for an empty group or no machines.
func GroupUtilisation(jobs []Job, members []int, m int) Util {
	if len(members) == 0 || m < 1 {
		return Util{}
	}
	return groupStats(jobs, members, m).util()
}

// JobBound reports whether the group is job-bound (Figure 4.7b, L821):
// one job's own iteration is longer than both Σ T_cpu and Σ T_net, so
// that it alone sets T_g_itr (L969: "T_g_itr = T_j_itr"). A group of one
// job is never job-bound: there is nothing to co-locate.
func JobBound(jobs []Job, members []int, m int) bool {
	if len(members) < 2 {
		return false
	}
	s := groupStats(jobs, members, m)
	return s.itr > math.Max(s.cpu, s.net)*(1+tie)
}

// Grouping is groups of jobs, by index into a job list, and the machines
// m_g of each (the group DoP of eq. 4.2).
type Grouping struct {
	Groups   [][]int
	Machines []int
}

// Jobs is how many jobs the grouping holds.
func (g *Grouping) Jobs() int {
	n := 0
	for _, members := range g.Groups {
		n += len(members)
	}
	return n
}

// Used is Σ m_g, the machines the groups use.
func (g *Grouping) Used() int {
	n := 0
	for _, m := range g.Machines {
		n += m
	}
	return n
}

// Utilisation is the cluster utilisation U of eq. 4.4 (L852–854): each
// group's U(g) weighted by its machines m_g, over Σ m_g, the machines the
// groups use. Zero when there are no groups.
func (g *Grouping) Utilisation(jobs []Job) Util {
	return g.UtilisationOver(jobs, g.Used())
}

// UtilisationOver is eq. 4.4's weighted sum over total machines instead of
// Σ m_g: machines no group uses count as idle. Harmony compares decisions
// that use different numbers of machines this way (see the package doc);
// with total = Σ m_g it is Utilisation.
func (g *Grouping) UtilisationOver(jobs []Job, total int) Util {
	if total < 1 {
		return Util{}
	}
	var u Util
	for k, members := range g.Groups {
		gu := GroupUtilisation(jobs, members, g.Machines[k])
		u.CPU += float64(g.Machines[k]) * gu.CPU
		u.Net += float64(g.Machines[k]) * gu.Net
	}
	return Util{CPU: u.CPU / float64(total), Net: u.Net / float64(total)}
}
