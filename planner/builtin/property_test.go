package builtin

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/model"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// randomRequest builds a random cluster and job set: CPU nodes and GPU nodes
// with two GPU models, PS and all-reduce jobs, GPU requests with memory
// constraints, fitted and missing models, priorities and weights.
func randomRequest(rng *rand.Rand) *planner.Request {
	req := &planner.Request{}
	for i := range 1 + rng.IntN(24) {
		n := &structs.Node{
			ID: fmt.Sprintf("node-%02d", i), Datacenter: "dc1", Status: structs.NodeStatusReady, Eligible: true,
			CPU: 2000 * (1 + rng.IntN(8)), MemoryMB: 4096 * (1 + rng.IntN(8)),
			Attributes: map[string]string{"kernel.name": "linux", "rack": fmt.Sprint(rng.IntN(3))},
		}
		if rng.IntN(2) == 0 {
			model, mem := "V100", "16 GiB"
			if rng.IntN(2) == 0 {
				model, mem = "A100", "40 GiB"
			}
			d := &structs.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: model,
				Attributes: map[string]*structs.Attribute{"memory": structs.ParseAttribute(mem)}}
			for g := range 1 + rng.IntN(8) {
				d.Instances = append(d.Instances, &structs.NodeDevice{ID: fmt.Sprintf("%s-%d", n.ID, g), Healthy: g%7 != 6})
			}
			n.Devices = []*structs.NodeDeviceResource{d}
		}
		req.Nodes = append(req.Nodes, n)
	}
	for i := range 1 + rng.IntN(30) {
		minW := 1 + rng.IntN(3)
		j := planner.MockJob(fmt.Sprintf("job-%02d", i), structs.Bounds{Min: 1, Max: 1 + rng.IntN(4)}, structs.Bounds{Min: minW, Max: minW + rng.IntN(12)})
		j.Priority = 1 + rng.IntN(100)
		j.Weight = 0.5 + rng.Float64()*2
		j.SubmitTime = int64(rng.IntN(1000))
		j.Worker.Resources.CPU = 500 * (1 + rng.IntN(6))
		j.Worker.Resources.MemoryMB = 1024 * (1 + rng.IntN(6))
		if rng.IntN(3) == 0 {
			j.Training.Architecture, j.Training.Mode, j.Elastic.ParameterServers = structs.ArchitectureAllReduce, structs.ModeSync, nil
		}
		if rng.IntN(3) == 0 {
			dev := &structs.RequestedDevice{Name: "nvidia/gpu", Count: 1 + rng.IntN(2)}
			if rng.IntN(2) == 0 {
				dev.Constraints = []*structs.Constraint{{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "32 GiB"}}
			}
			j.Worker.Resources.Devices = []*structs.RequestedDevice{dev}
		}
		if rng.IntN(5) == 0 {
			j.Worker.Constraints = []*structs.Constraint{{LTarget: "${attr.rack}", Operand: "=", RTarget: "1"}}
		}
		if rng.IntN(6) == 0 {
			j.Worker.Constraints = append(j.Worker.Constraints, &structs.Constraint{Operand: structs.OpDistinctHosts})
		}
		j.Canonicalize()
		v := &planner.Job{Job: j, Young: rng.IntN(3) == 0, Step: float64(rng.IntN(500))}
		if rng.IntN(4) != 0 {
			kind := model.SpeedAsync
			if j.Training.Architecture == structs.ArchitectureAllReduce {
				kind = model.SpeedAllReduce
			}
			v.Speed = &model.Speed{Kind: kind, Batch: 64, Theta: [5]float64{rng.Float64(), rng.Float64() * 0.5, rng.Float64() * 0.05, rng.Float64() * 0.05}}
		}
		if rng.IntN(2) == 0 {
			v.Loss = &model.Loss{B0: 0.01 + rng.Float64()*0.3, B1: 1, B2: rng.Float64() * 0.1, Scale: 1}
		}
		req.Jobs = append(req.Jobs, v)
	}
	return req
}

// minimum is the smallest size the algorithm runs job j at.
func minimum(alg string, j *planner.Job) (ps, w int) {
	if alg == "fifo" || alg == "tetris" {
		return j.FixedRequest()
	}
	psb, wb := j.Bounds()
	if j.HasPS() {
		ps = max(psb.Min, 1)
	}
	return ps, max(wb.Min, 1)
}

// leftover returns the cluster's capacity after the decision's placements.
func leftover(t *testing.T, req *planner.Request, dec *planner.Decision) *planner.Cluster {
	c := planner.NewCluster(req.Nodes)
	jobs := map[string]*planner.Job{}
	for _, j := range req.Jobs {
		jobs[j.Job.ID] = j
	}
	for _, p := range dec.Placements {
		tasks := c.JobTasks(jobs[p.JobID])
		for _, nt := range p.Nodes {
			i, ok := c.NodeIndex(nt.NodeID)
			must.True(t, ok)
			if nt.PS > 0 {
				c.Take(i, tasks.PS, nt.PS)
			}
			c.Take(i, tasks.Worker, nt.Workers)
		}
	}
	return c
}

// TestAlgorithms_Properties checks, for every built-in algorithm on random
// instances: decisions keep CheckDecision's rules (capacity, devices,
// constraints, bounds); the same request, in any job order, gives the same
// decision; and no job is left paused while the room left over could hold
// its minimum. Each instance is planned twice, the second time with the
// first decision as the jobs' current placements.
func TestAlgorithms_Properties(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(42, 7))
			paused, placed := 0, 0
			for trial := range 150 {
				req := randomRequest(rng)
				for round := range 2 {
					alg := Algorithms[name]()
					dec, err := alg.Plan(req)
					must.NoError(t, err)
					must.NoError(t, planner.CheckDecision(req, dec), must.Sprintf("trial %d round %d", trial, round))

					shuffled := *req
					shuffled.Jobs = slices.Clone(req.Jobs)
					rng.Shuffle(len(shuffled.Jobs), func(a, b int) { shuffled.Jobs[a], shuffled.Jobs[b] = shuffled.Jobs[b], shuffled.Jobs[a] })
					again, err := Algorithms[name]().Plan(&shuffled)
					must.NoError(t, err)
					must.Eq(t, dec, again, must.Sprintf("trial %d round %d: not deterministic", trial, round))

					left := leftover(t, req, dec)
					placer := placement.New(left)
					byID := map[string]*structs.Placement{}
					for _, p := range dec.Placements {
						byID[p.JobID] = p
					}
					for _, j := range req.Jobs {
						p := byID[j.Job.ID]
						if !p.Paused() {
							placed++
							continue
						}
						paused++
						tasks := left.JobTasks(j)
						ps, w := minimum(name, j)
						_, fits := placer.Place(tasks.PS, ps, tasks.Worker, w)
						must.False(t, fits, must.Sprintf("trial %d round %d: job %s is paused (%s) but its minimum of %d ps and %d workers fits", trial, round, j.Job.ID, p.Reason, ps, w))
					}
					for _, j := range req.Jobs {
						j.Current = byID[j.Job.ID]
					}
				}
			}
			t.Logf("%s: %d placements, %d paused", name, placed, paused)
			must.Positive(t, paused, must.Sprint("the instances should stress capacity"))
		})
	}
}

func TestNames(t *testing.T) {
	must.Eq(t, []string{"drf", "fifo", "optimus", "optimus-relative", "tetris"}, Names())
	for name, f := range Algorithms {
		must.Eq(t, name, f().Name())
	}
}
