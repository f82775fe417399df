package simulate

import (
	"testing"
	"time"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/planner/roundrobin"
	"github.com/caravan-sched/caravan/planner/specon"
	"github.com/shoenig/test/must"
)

// startRecorder wraps an algorithm and records the node index each job
// first starts on.
type startRecorder struct {
	inner planner.Algorithm
	first map[string]int
}

var (
	_ planner.Algorithm    = (*startRecorder)(nil)
	_ planner.Configurable = (*startRecorder)(nil)
)

func (r *startRecorder) Name() string { return r.inner.Name() }

func (r *startRecorder) SetConfig(options map[string]string) error {
	if c, ok := r.inner.(planner.Configurable); ok {
		return c.SetConfig(options)
	}
	return nil
}

func (r *startRecorder) Plan(req *planner.Request) (*planner.Decision, error) {
	dec, err := r.inner.Plan(req)
	if err != nil {
		return nil, err
	}
	running := map[string]bool{}
	for _, j := range req.Jobs {
		running[j.Job.ID] = j.Current != nil && !j.Current.Paused()
	}
	for _, p := range dec.Placements {
		if _, seen := r.first[p.JobID]; seen || running[p.JobID] || p.Paused() {
			continue
		}
		for i, n := range req.Nodes {
			if n.ID == p.Nodes[0].NodeID {
				r.first[p.JobID] = i
			}
		}
	}
	return dec, nil
}

// TestRoundRobin_PaperRotation: on SpeCon's workloads, roundrobin and
// SpeCon over it start the k-th container on worker (k − 1) mod 4, the
// paper's fixed initial placement (§VI-A), although the turn is read from
// the running jobs; SpeCon then moves jobs on both (Algorithm 1's line 15
// read over the cluster; read per node, it moves none on the fixed
// schedule, where no worker holds three containers: planner/README.md).
func TestRoundRobin_PaperRotation(t *testing.T) {
	for _, workload := range []string{"specon", "specon-random:30:600"} {
		for _, base := range []bool{true, false} {
			inner, opts := roundrobin.New(), map[string]string(nil)
			if !base {
				inner, opts = specon.New(builtin.Base), map[string]string{"base": roundrobin.Name}
			}
			t.Run(workload+"/"+PolicySpec{Name: inner.Name(), Options: opts}.String(), func(t *testing.T) {
				wl, err := LoadWorkload(workload, 1, 0)
				must.NoError(t, err)
				cfg := sim.DefaultConfig()
				cfg.Nodes, cfg.GPUsPerNode, cfg.Seed = 4, 0, 1
				rec := &startRecorder{inner: inner, first: map[string]int{}}
				res, err := Run(wl, rec, Options{Cluster: cfg, Interval: 30 * time.Second, AlgorithmOptions: opts})
				must.NoError(t, err)
				for k, a := range wl.Arrivals {
					got, ok := rec.first[a.Job.ID]
					must.True(t, ok)
					must.Eq(t, k%4, got, must.Sprintf("container %d (%s)", k+1, a.Job.ID))
				}
				moves := res.Summary.Rescales
				switch {
				case base:
					must.Zero(t, moves)
				default:
					must.Positive(t, moves)
				}
			})
		}
	}
}
