package simulate

import (
	"cmp"
	"math"
	"slices"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner/fairshare"
	"github.com/caravan-sched/caravan/structs"
	"gonum.org/v1/gonum/stat"
)

// JobFairness is one job's share of the cluster against its DRF share,
// each averaged over the job's life, from its arrival to its finish (the
// run's end if it never finished). Shares are dominant shares: the
// largest share of the cluster's CPU, memory or GPUs the job's tasks hold
// together (Dorm's eq. 2, s_i^t).
type JobFairness struct {
	JobID string
	// Life is the time from the job's arrival to its finish, in seconds.
	Life float64
	// Share is the job's dominant share averaged over its life, 0 while it
	// waits: ∫ s_i^t dt / Life.
	Share float64
	// DRFShare is the dominant share DRF would give the job among the jobs
	// active at each moment (fairshare.DRF of their elastic demands), averaged
	// the same way: ∫ ŝ_i^t dt / Life.
	DRFShare float64
	// Loss is the job's fairness loss, Dorm's eq. 2 l_i^t = |s_i^t − ŝ_i^t|,
	// averaged over its life: it counts holding more than the DRF share as
	// well as less.
	Loss float64
	// Shortfall is the one-sided part of Loss, max(0, ŝ_i^t − s_i^t)
	// averaged over the job's life: how much less than its DRF share the
	// job held.
	Shortfall float64
}

// Ratio is Share over DRFShare, the value Jain's index is taken over; 0
// when the job had no DRF share.
func (f JobFairness) Ratio() float64 {
	if f.DRFShare <= 0 {
		return 0
	}
	return f.Share / f.DRFShare
}

// Fairness is what a run reports about fairness, beside the per-job
// values.
type Fairness struct {
	// Jain is Jain's fairness index (Σx)²/(n·Σx²) over x = Share/DRFShare
	// of the jobs that had a DRF share: 1 when every job held the same
	// multiple of its DRF share, 1/n when one job held everything; 0 when
	// no job had a DRF share.
	Jain float64
	// Loss is the cluster's fairness loss, Dorm's eq. 2 (Σ over the active
	// jobs of |s_i^t − ŝ_i^t|), averaged over the makespan; MaxLoss is its
	// largest value over any span of time, the bound eq. 15 sets and
	// Dorm's Figure 7 plots.
	Loss    float64 `json:"FairnessLoss"`
	MaxLoss float64 `json:"MaxFairnessLoss"`
	// WorstJob is the job of largest Loss (JobFairness.Loss), and
	// WorstJobLoss that loss.
	WorstJob     string `json:",omitempty"`
	WorstJobLoss float64
}

// fairJob is what fairness needs to know of a job: its DRF demand and
// the order DRF serves minimums in.
type fairJob struct {
	namespace, id string
	priority      int
	demand        fairshare.Demand
}

// newFairJob reads job j's elastic demand for DRF, in the resources of
// capacity (CPU MHz, memory MB, GPUs). j must be canonical.
func newFairJob(j *structs.Job) fairJob {
	w, ps := sim.TaskResources(j)
	vec := func(r sim.Resources) []float64 {
		return []float64{float64(r.CPU), float64(r.MemoryMB), float64(r.GPUs)}
	}
	d := fairshare.Demand{Worker: vec(w), Workers: j.Elastic.Workers, Weight: j.Weight}
	if j.Training.Architecture == structs.ArchitecturePS && j.Elastic.ParameterServers != nil {
		d.Server, d.Servers = vec(ps), *j.Elastic.ParameterServers
	}
	return fairJob{namespace: j.Namespace, id: j.ID, priority: j.Priority, demand: d}
}

// capacityOf is the cluster's aggregate CPU (MHz), memory (MB) and GPUs,
// the resources shares are taken of.
func capacityOf(c sim.Config) []float64 {
	n := c.NodeCount()
	return []float64{float64(n * c.CPU), float64(n * c.MemoryMB), float64(c.TotalGPUs())}
}

// fairness sweeps a run's history in time order. Between two changes a
// job's share s is what its last allocation change holds and its DRF
// share ŝ is fairshare.DRF among the jobs active then (arrived and not
// finished, waiting jobs included), recomputed whenever a job arrives or
// finishes, in the order planner/drf serves minimums (priority, then
// namespace and ID). It takes O(changes × active jobs × log active jobs)
// plus DRF's filling, and does not modify its arguments. jobs and specs
// are in the same order; allocations of jobs not in jobs are ignored.
func fairness(jobs []sim.JobResult, specs []fairJob, allocs []sim.AllocChange, capacity []float64) ([]JobFairness, Fairness) {
	type state struct {
		s, drf, last        float64
		share, drfInt, loss float64
		shortfall, life     float64
		active              bool
	}
	// The virtual clock rounds times up to the nanosecond and one more,
	// while finishes are exact: times to the microsecond, so that what
	// happens at one instant is not split by spans of a nanosecond.
	instant := func(t float64) float64 { return math.Round(t*1e6) / 1e6 }
	st := make([]state, len(jobs))
	index := make(map[string]int, len(jobs))
	start, end := math.Inf(1), 0.0
	for i, j := range jobs {
		index[j.JobID] = i
		start = min(start, instant(j.Arrival))
		end = max(end, instant(j.Finish), instant(j.Arrival))
	}
	type event struct {
		time float64
		job  int
		// kind: 0 an arrival, 1 a finish, 2 an allocation change (share s).
		kind int
		s    float64
	}
	events := make([]event, 0, 2*len(jobs)+len(allocs))
	for i, j := range jobs {
		arrival, finish := instant(j.Arrival), end
		if j.Finish >= 0 {
			finish = instant(j.Finish)
		}
		if finish <= arrival {
			continue
		}
		st[i].life = finish - arrival
		events = append(events, event{time: arrival, job: i, kind: 0}, event{time: finish, job: i, kind: 1})
	}
	for _, a := range allocs {
		i, ok := index[a.JobID]
		if !ok {
			continue
		}
		events = append(events, event{time: instant(a.Time), job: i, kind: 2, s: dominantShare(capacity, a)})
	}
	slices.SortStableFunc(events, func(a, b event) int { return cmp.Compare(a.time, b.time) })

	// rank orders jobs as planner/drf serves their minimums.
	rank := func(a, b int) int {
		x, y := specs[a], specs[b]
		return cmp.Or(cmp.Compare(y.priority, x.priority), cmp.Compare(x.namespace, y.namespace), cmp.Compare(x.id, y.id))
	}
	accumulate := func(i int, t float64) {
		s := &st[i]
		if s.active {
			dt := t - s.last
			s.share += s.s * dt
			s.drfInt += s.drf * dt
			s.loss += math.Abs(s.s-s.drf) * dt
			s.shortfall += max(s.drf-s.s, 0) * dt
		}
		s.last = t
	}
	var active []int
	demands := make([]fairshare.Demand, 0, len(jobs))
	var f Fairness
	loss, lossInt, prev := 0.0, 0.0, start
	for k := 0; k < len(events); {
		t := events[k].time
		if t > prev {
			lossInt += loss * (t - prev)
			f.MaxLoss = max(f.MaxLoss, loss)
			prev = t
		}
		changed := false
		for ; k < len(events) && events[k].time == t; k++ {
			e := events[k]
			s := &st[e.job]
			accumulate(e.job, t)
			switch e.kind {
			case 0:
				s.active, changed = true, true
				active = append(active, e.job)
			case 1:
				s.active, changed = false, true
				active = slices.DeleteFunc(active, func(i int) bool { return i == e.job })
			case 2:
				s.s = e.s
			}
		}
		if changed {
			slices.SortFunc(active, rank)
			demands = demands[:0]
			for _, i := range active {
				demands = append(demands, specs[i].demand)
			}
			for n, a := range fairshare.DRF(capacity, demands) {
				accumulate(active[n], t)
				st[active[n]].drf = a.Share
			}
		}
		loss = 0
		for _, i := range active {
			loss += math.Abs(st[i].s - st[i].drf)
		}
	}
	if span := end - start; span > 0 {
		f.Loss = lossInt / span
	}

	out := make([]JobFairness, len(jobs))
	var ratios []float64
	for i, j := range jobs {
		s := st[i]
		out[i] = JobFairness{JobID: j.JobID, Life: s.life}
		if s.life > 0 {
			out[i].Share, out[i].DRFShare = s.share/s.life, s.drfInt/s.life
			out[i].Loss, out[i].Shortfall = s.loss/s.life, s.shortfall/s.life
		}
		if out[i].DRFShare > 0 {
			ratios = append(ratios, out[i].Ratio())
		}
		if out[i].Loss > f.WorstJobLoss {
			f.WorstJob, f.WorstJobLoss = j.JobID, out[i].Loss
		}
	}
	f.Jain = jain(ratios)
	return out, f
}

// dominantShare is the largest share of a resource of capacity that a
// holds; resources of capacity 0 do not count.
func dominantShare(capacity []float64, a sim.AllocChange) float64 {
	held := []float64{float64(a.CPU), float64(a.MemoryMB), float64(a.GPUs)}
	s := 0.0
	for k, c := range capacity {
		if c > 0 {
			s = max(s, held[k]/c)
		}
	}
	return s
}

// jain is Jain's fairness index of x, (Σx)²/(n·Σx²) = mean²/(mean² +
// population variance); 0 for no values or all zero.
func jain(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	m, v := stat.PopMeanVariance(x, nil)
	if m == 0 {
		return 0
	}
	return m * m / (m*m + v)
}
