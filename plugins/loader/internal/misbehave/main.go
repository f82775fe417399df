// Command misbehave is an algorithm plugin for the loader's tests: under
// option mode it plans as fifo ("fine"), panics ("panic"), never answers
// ("hang"), gives every job twice its maximum workers ("overallocate"), or
// places a job the request does not hold ("unknown-job").
package main

import (
	"fmt"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/fifo"
	"github.com/caravan-sched/caravan/plugins/algorithm/sdk"
	"github.com/caravan-sched/caravan/structs"
)

func main() {
	sdk.Serve(&sdk.Plugin{Name: "misbehave", Version: "0.0.1", Func: plan, Validate: validate})
}

func validate(options map[string]string) error {
	switch m := options["mode"]; m {
	case "", "fine", "panic", "hang", "overallocate", "unknown-job":
		return nil
	default:
		return fmt.Errorf("mode %q is not one of fine, panic, hang, overallocate, unknown-job", m)
	}
}

func plan(req *planner.Request, options map[string]string) (*planner.Decision, error) {
	dec, err := fifo.New().Plan(req)
	if err != nil {
		return nil, err
	}
	switch options["mode"] {
	case "panic":
		panic("misbehave: panic as asked")
	case "hang":
		time.Sleep(time.Hour)
	case "overallocate":
		if len(req.Nodes) == 0 {
			break
		}
		maxWorkers := map[structs.JobKey]int{}
		for _, j := range req.Jobs {
			_, w := j.Bounds()
			maxWorkers[j.Job.Key()] = w.Max
		}
		for _, p := range dec.Placements {
			p.NumWorkers = 2 * maxWorkers[p.Key()]
			p.Nodes = []*structs.NodeTasks{{NodeID: req.Nodes[0].ID, PS: p.NumPS, Workers: p.NumWorkers}}
		}
	case "unknown-job":
		dec.Placements = append(dec.Placements, &structs.Placement{Namespace: "default", JobID: "ghost"})
	}
	return dec, nil
}
