package models

import (
	"fmt"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/dlrover"
	"github.com/caravan-sched/caravan/planner/fifo"
	"github.com/caravan-sched/caravan/planner/straggler"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

const t0 = int64(1_700_000_000_000_000_000)

// workerUsage is a usage report at t of a job's workers on the nodes
// given, each with its step time.
func workerUsage(key structs.JobKey, at time.Duration, nodes []string, steps ...float64) *structs.JobUsage {
	u := &structs.JobUsage{Namespace: key.Namespace, JobID: key.ID, Time: t0 + int64(at)}
	for r, s := range steps {
		u.Tasks = append(u.Tasks, &structs.TaskUsage{Role: structs.RoleWorker, Rank: r, NodeID: nodes[r], TaskStepTimeS: s, Source: structs.UsageSourceSample})
	}
	return u
}

// TestScheduler_Stragglers: with straggler handling on, a worker at a
// third of its peers' speed for a minute is moved to another node,
// whatever the algorithm (here fifo, which never moves a job), and the
// plan says why; with it off, nothing moves.
func TestScheduler_Stragglers(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint(on), func(t *testing.T) {
			opts := Options{}
			if on {
				opts.Stragglers = &straggler.Config{}
			}
			s := New(fifo.New(), opts)
			must.NoError(t, s.Register(planner.MockJob("a", structs.Bounds{Min: 1, Max: 1}, structs.Bounds{Min: 3, Max: 3})))
			key := structs.NewJobKey(structs.DefaultNamespace, "a")
			h := planner.NewHarness(t)
			h.AddNodes("n", 3, 4000, 16384, 0)
			running := &structs.Placement{Namespace: structs.DefaultNamespace, JobID: "a", NumPS: 1, NumWorkers: 3, Nodes: []*structs.NodeTasks{
				{NodeID: "n-0", PS: 1, Workers: 1}, {NodeID: "n-1", Workers: 2}}}
			s.Observe(key, running, &structs.Change{Target: running, Phase: structs.ChangeDone, Since: t0})

			nodes := []string{"n-0", "n-1", "n-1"}
			for _, at := range []time.Duration{10, 40} {
				s.ObserveUsage(key, workerUsage(key, at*time.Second, nodes, 1, 1, 3))
			}
			plan, err := s.Plan(h.Nodes, t0+int64(45*time.Second))
			must.NoError(t, err)
			must.True(t, plan.Placements[0].SameTasks(running), must.Sprint("not slow for long enough"))

			must.False(t, s.TickStragglers(t0+int64(69*time.Second)))
			must.Eq(t, on, s.TickStragglers(t0+int64(70*time.Second)), must.Sprint("the window ended with no new report"))
			must.Eq(t, on, s.Changed())
			plan, err = s.Plan(h.Nodes, t0+int64(75*time.Second))
			must.NoError(t, err)
			p := plan.Placements[0]
			if !on {
				must.True(t, p.SameTasks(running))
				return
			}
			must.Eq(t, []*structs.NodeTasks{{NodeID: "n-0", PS: 1, Workers: 1}, {NodeID: "n-1", Workers: 1}, {NodeID: "n-2", Workers: 1}}, p.Nodes)
			must.Len(t, 1, p.Actions)
			must.Eq(t, structs.ActionStragglerReplaced, p.Actions[0].Kind)
			must.Eq(t, 2, p.Actions[0].Rank)

			// Once the move ran, the job starts afresh.
			moved := p.Copy()
			moved.Actions = nil
			s.Observe(key, moved, &structs.Change{Target: moved, Phase: structs.ChangeDone, Since: t0 + int64(90*time.Second)})
			plan, err = s.Plan(h.Nodes, t0+int64(100*time.Second))
			must.NoError(t, err)
			must.True(t, plan.Placements[0].SameTasks(moved))
			must.Len(t, 0, plan.Placements[0].Actions)
		})
	}
}

// TestScheduler_UsageAndSince: the usage and the time the job began to
// run reach the algorithm: dlrover waits a minute after the job started
// at its sampling shape, then sizes it from the measured usage; a new OOM
// kill asks for a round.
func TestScheduler_UsageAndSince(t *testing.T) {
	s := New(dlrover.New(), Options{})
	j := planner.MockJob("a", structs.Bounds{Min: 1, Max: 16}, structs.Bounds{Min: 1, Max: 64})
	j.Worker.Resources = &structs.Resources{CPU: 80000, MemoryMB: 4096,
		CPURange:    &structs.ResourceRange{Min: 2500, Max: 80000, Initial: 80000},
		MemoryRange: &structs.ResourceRange{Min: 1024, Max: 16384, Initial: 4096}}
	must.NoError(t, s.Register(j))
	key := j.Key()
	h := planner.NewHarness(t)
	for _, n := range h.AddNodes("n", 8, 160000, 196608, 0) {
		n.Attributes["cpu.frequency"] = "2500"
	}
	running := &structs.Placement{Namespace: structs.DefaultNamespace, JobID: "a", NumPS: 1, NumWorkers: 1, Nodes: []*structs.NodeTasks{{NodeID: "n-0", PS: 1, Workers: 1}}}
	s.Observe(key, running, &structs.Change{Target: running, Phase: structs.ChangeDone, Since: t0})
	u := &structs.JobUsage{Namespace: structs.DefaultNamespace, JobID: "a", Time: t0 + int64(20*time.Second),
		ByShape: []structs.ShapeUsage{{Shape: structs.Shape{PS: 1, Workers: 1}, WorkerCPUMHz: 2.5 * 2500, PSCPUMHz: 5.7 * 2500, Measurements: 2}}}
	s.ObserveUsage(key, u)

	plan, err := s.Plan(h.Nodes, t0+int64(30*time.Second))
	must.NoError(t, err)
	must.True(t, plan.Placements[0].SameTasks(running))
	must.StrContains(t, plan.Placements[0].Reason, "waits 1m0s")

	plan, err = s.Plan(h.Nodes, t0+int64(61*time.Second))
	must.NoError(t, err)
	must.Eq(t, 24, plan.Placements[0].NumWorkers)
	must.Eq(t, 8, plan.Placements[0].NumPS)

	must.False(t, s.Changed())
	oom := u.Copy()
	oom.Tasks = []*structs.TaskUsage{{Role: structs.RoleWorker, NodeID: "n-0", OOMKills: 1, LastOOM: t0 + int64(62*time.Second)}}
	version := s.Version()
	s.ObserveUsage(key, oom)
	must.True(t, s.Changed())
	must.Eq(t, version+1, s.Version(), must.Sprint("a plan in flight did not know of the kill"))
	_, err = s.Plan(h.Nodes, t0+int64(63*time.Second))
	must.NoError(t, err)
	s.ObserveUsage(key, oom.Copy())
	must.False(t, s.Changed(), must.Sprint("the same kill again"))
	must.Eq(t, version+1, s.Version())
}
