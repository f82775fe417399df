package tetris

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
)

// Name is the algorithm's registry name.
const Name = "tetris"

// Tetris implements planner.Algorithm.
type Tetris struct{}

var (
	_ planner.Algorithm = (*Tetris)(nil)
	_ planner.Describer = (*Tetris)(nil)
)

// New returns Tetris.
func New() planner.Algorithm { return &Tetris{} }

// Name returns "tetris".
func (*Tetris) Name() string { return Name }

// Capabilities: Tetris runs jobs at their fixed request and reads the
// loss curves and speed models for its duration term (planner.Describer).
func (*Tetris) Capabilities() planner.Capabilities {
	return planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorLoss, planner.EstimatorSpeed}, FixedSize: true}
}

// remainingTime predicts a job's remaining seconds at its fixed request;
// without a speed model it assumes one step per second.
func remainingTime(j *planner.Job) float64 {
	ps, w := j.FixedRequest()
	speed := 1.0
	if j.Speed != nil {
		speed = j.Speed.At(ps, w)
	}
	if speed <= 0 {
		return math.Inf(1)
	}
	return j.RemainingSteps() / speed
}

// Plan keeps running jobs, then packs waiting jobs shortest first.
func (*Tetris) Plan(req *planner.Request) (*planner.Decision, error) {
	jobs := slices.Clone(req.Jobs)
	planner.SortJobs(jobs)
	remaining := make(map[*planner.Job]float64, len(jobs))
	for _, j := range jobs {
		remaining[j] = remainingTime(j)
	}
	slices.SortStableFunc(jobs, func(a, b *planner.Job) int { return cmp.Compare(remaining[a], remaining[b]) })

	c := planner.NewCluster(req.Nodes)
	p := newPacker(c)
	out, tasks := planner.KeepFixed(c, jobs, Name)
	for i, j := range jobs {
		if out[i] != nil {
			continue
		}
		ps, w := j.FixedRequest()
		trial := p.c.Clone()
		counts := map[int]*structs.NodeTasks{}
		ok := p.pack(trial, tasks[i].PS, ps, counts, func(nt *structs.NodeTasks) *int { return &nt.PS }) &&
			p.pack(trial, tasks[i].Worker, w, counts, func(nt *structs.NodeTasks) *int { return &nt.Workers })
		if !ok {
			out[i] = planner.Paused(j, fmt.Sprintf("tetris: waiting for room for its request of %s", structs.Shape{PS: ps, Workers: w}))
			continue
		}
		p.c = trial
		nodes := make([]*structs.NodeTasks, 0, len(counts))
		for _, nt := range counts {
			nodes = append(nodes, nt)
		}
		slices.SortFunc(nodes, func(a, b *structs.NodeTasks) int { return cmp.Compare(a.NodeID, b.NodeID) })
		out[i] = &structs.Placement{
			Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: ps, NumWorkers: w, Nodes: nodes,
			Reason: fmt.Sprintf("tetris: packed at its request of %s (predicted remaining %.0fs)", structs.Shape{PS: ps, Workers: w}, remaining[j]),
		}
	}
	planner.SortPlacements(out)
	return &planner.Decision{Placements: out}, nil
}

type packer struct {
	c                      *planner.Cluster
	maxCPU, maxMem, maxDev float64
}

func newPacker(c *planner.Cluster) *packer {
	p := &packer{c: c}
	for i := range c.Nodes {
		cpu, mem, dev := c.Free(i)
		p.maxCPU, p.maxMem, p.maxDev = max(p.maxCPU, float64(cpu)), max(p.maxMem, float64(mem)), max(p.maxDev, float64(dev))
	}
	return p
}

// pack places n tasks t one at a time on the best-aligned node of trial,
// counting them in counts through field. It reports false when a task finds
// no node.
func (p *packer) pack(trial *planner.Cluster, t *planner.Task, n int, counts map[int]*structs.NodeTasks, field func(*structs.NodeTasks) *int) bool {
	if n == 0 {
		return true
	}
	devices := 0
	for _, d := range t.DeviceCounts {
		devices += d
	}
	for range n {
		best, bestScore := -1, -1.0
		for i := range trial.Nodes {
			if nt := counts[i]; nt != nil && t.DistinctHosts && *field(nt) > 0 {
				continue
			}
			if !trial.Fits(i, t, 1) {
				continue
			}
			cpu, mem, dev := trial.Free(i)
			score := norm(float64(t.CPU), p.maxCPU)*norm(float64(cpu), p.maxCPU) +
				norm(float64(t.MemoryMB), p.maxMem)*norm(float64(mem), p.maxMem) +
				norm(float64(devices), p.maxDev)*norm(float64(dev), p.maxDev)
			if score > bestScore {
				best, bestScore = i, score
			}
		}
		if best < 0 {
			return false
		}
		trial.Take(best, t, 1)
		nt := counts[best]
		if nt == nil {
			nt = &structs.NodeTasks{NodeID: trial.Nodes[best].ID}
			counts[best] = nt
		}
		*field(nt)++
	}
	return true
}

func norm(v, maxV float64) float64 {
	if maxV == 0 {
		return 0
	}
	return v / maxV
}
