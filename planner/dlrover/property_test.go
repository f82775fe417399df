package dlrover

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestPlan_RandomUsage: on random requests whose jobs have cpu and memory
// ranges and random measured usage (OOM kills, busy and idle servers,
// sampled and unsampled, changed long ago or just now), every decision
// keeps CheckDecision's rules and is the same in any job order, and every
// stage and adjustment is reached.
func TestPlan_RandomUsage(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	reached := map[string]int{}
	for trial := range 300 {
		req := planner.RandomRequest(rng)
		for _, j := range req.Jobs {
			randomUsage(rng, j, req.Now)
		}
		for round := range 2 {
			dec, err := New().Plan(req)
			must.NoError(t, err)
			must.NoError(t, planner.CheckDecision(req, dec), must.Sprintf("trial %d round %d", trial, round))
			shuffled := *req
			shuffled.Jobs = slices.Clone(req.Jobs)
			rng.Shuffle(len(shuffled.Jobs), func(a, b int) { shuffled.Jobs[a], shuffled.Jobs[b] = shuffled.Jobs[b], shuffled.Jobs[a] })
			again, err := New().Plan(&shuffled)
			must.NoError(t, err)
			must.Eq(t, dec, again, must.Sprintf("trial %d round %d: not deterministic", trial, round))
			byID := map[string]*structs.Placement{}
			for _, p := range dec.Placements {
				byID[p.JobID] = p
				for _, stage := range []string{"dlrover sample", "dlrover optimize", "waits", "OOM", "hot parameter server", "more", "one more server", "ΔN_w", "does not fit"} {
					if strings.Contains(p.Reason, stage) {
						reached[stage]++
					}
				}
			}
			for _, j := range req.Jobs {
				j.Current = byID[j.Job.ID]
				if !j.Current.Paused() {
					j.Since = req.Now - int64(2*time.Minute)
				}
			}
		}
	}
	t.Logf("reasons reached: %v", reached)
	for _, stage := range []string{"dlrover sample", "dlrover optimize", "waits", "OOM", "ΔN_w"} {
		must.Positive(t, reached[stage], must.Sprint(stage))
	}
}

// randomUsage gives job j cpu and memory ranges around its sizes and, if
// it runs, random usage of its tasks at its placement.
func randomUsage(rng *rand.Rand, j *planner.Job, now int64) {
	for _, r := range []*structs.Role{j.Job.Worker, j.Job.ParameterServer} {
		if r == nil {
			continue
		}
		res := r.Resources
		res.CPURange = &structs.ResourceRange{Min: max(res.CPU/4, 1), Max: 4 * res.CPU, Initial: res.CPU}
		res.MemoryRange = &structs.ResourceRange{Min: 64, Max: 4 * res.MemoryMB, Initial: res.MemoryMB}
	}
	if j.Current == nil {
		if rng.IntN(2) == 0 {
			j.Usage = &structs.JobUsage{Namespace: j.Job.Namespace, JobID: j.Job.ID, Time: now,
				ByShape: []structs.ShapeUsage{{Shape: j.Minimum(), WorkerCPUMHz: 100 + rng.Float64()*2000, PSCPUMHz: rng.Float64() * 3000, Measurements: 1}}}
		}
		return
	}
	j.Since = now - int64(time.Duration(rng.IntN(180))*time.Second)
	u := &structs.JobUsage{Namespace: j.Job.Namespace, JobID: j.Job.ID, Time: now}
	ranks := map[string]int{}
	for _, nt := range j.Current.Nodes {
		for _, e := range []struct {
			role string
			n    int
			res  *structs.Resources
			size structs.TaskSize
		}{{structs.RolePS, nt.PS, j.PSRole().Resources, nt.PSSize}, {structs.RoleWorker, nt.Workers, j.Job.Worker.Resources, nt.WorkerSize}} {
			cpu, mem := e.res.Sized(e.size)
			for range e.n {
				t := &structs.TaskUsage{Role: e.role, Rank: ranks[e.role], NodeID: nt.NodeID, CPULimitMHz: cpu, MemoryLimitMB: mem,
					CPUMHz: rng.Float64() * float64(cpu), MemoryMB: rng.Float64() * float64(mem), Source: structs.UsageSourceSim}
				t.MaxMemoryMB = t.MemoryMB
				ranks[e.role]++
				if rng.IntN(8) == 0 {
					t.OOMKills, t.LastOOM = 1+rng.IntN(2), now
				}
				u.Tasks = append(u.Tasks, t)
			}
		}
	}
	if rng.IntN(2) == 0 {
		u.ByShape = append(u.ByShape, structs.ShapeUsage{Shape: j.Minimum(), WorkerCPUMHz: 100 + rng.Float64()*2000, PSCPUMHz: rng.Float64() * 3000, Measurements: 2})
	}
	if rng.IntN(2) == 0 {
		u.ByShape = append(u.ByShape, structs.ShapeUsage{Shape: structs.Shape{PS: j.Current.NumPS, Workers: j.Current.NumWorkers},
			WorkerCPUMHz: 100 + rng.Float64()*2000, PSCPUMHz: rng.Float64() * 3000, Measurements: 2})
	}
	j.Usage = u
}
