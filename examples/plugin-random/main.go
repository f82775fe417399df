// Command plugin-random is an example third-party algorithm plugin: it
// gives each job a random number of workers and parameter servers within
// its bounds, and spreads them over the nodes as the built-ins do. It is
// no good at scheduling; it shows how little a plugin needs. Build it,
// declare it in the agent configuration, and select it:
//
//	go build -o /opt/caravan/plugins/random ./examples/plugin-random
//	plugin "random" { path = "/opt/caravan/plugins/random" }
//	caravan operator scheduler set-config -algorithm random -option seed=7
//
// It needs no Nomad client, driver or device: it runs beside the Caravan
// servers, on any driver, the simulated one of `make demo` included.
package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/placement"
	"github.com/caravan-sched/caravan/plugins/algorithm/sdk"
	"github.com/caravan-sched/caravan/structs"
)

func main() {
	sdk.Serve(&sdk.Plugin{Name: "random", Version: "0.1.0", Func: plan, Validate: validate})
}

// validate accepts one option, seed, an integer.
func validate(options map[string]string) error {
	for k, v := range options {
		if k != "seed" {
			return fmt.Errorf("unknown option %q; random takes only seed", k)
		}
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			return fmt.Errorf("seed = %q is not a non-negative integer", v)
		}
	}
	return nil
}

// plan draws each job's size from a generator seeded by the seed option
// and the request's time, so that the same request gets the same answer.
func plan(req *planner.Request, options map[string]string) (*planner.Decision, error) {
	seed, _ := strconv.ParseUint(options["seed"], 10, 64)
	rng := rand.New(rand.NewPCG(seed, uint64(req.Now)))
	c := planner.NewCluster(req.Nodes)
	placer := placement.New(c)
	dec := &planner.Decision{}
	for _, j := range req.Jobs {
		psb, wb := j.Bounds()
		ps, w := draw(rng, psb), draw(rng, wb)
		t := c.JobTasks(j)
		nodes, ok := placer.Place(t.PS, ps, t.Worker, w)
		if !ok {
			dec.Placements = append(dec.Placements, planner.Paused(j, fmt.Sprintf("random: drew %d ps and %d workers, which do not fit", ps, w)))
			continue
		}
		dec.Placements = append(dec.Placements, &structs.Placement{
			Namespace: j.Job.Namespace, JobID: j.Job.ID, NumPS: ps, NumWorkers: w, Nodes: nodes,
			Reason: fmt.Sprintf("random: drew %d ps and %d workers", ps, w),
		})
	}
	return dec, nil
}

func draw(rng *rand.Rand, b structs.Bounds) int {
	if b.Max <= b.Min {
		return b.Min
	}
	return b.Min + rng.IntN(b.Max-b.Min+1)
}
