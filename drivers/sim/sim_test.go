package sim

import (
	"math"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// constTruth trains at a fixed step time per worker count: 1/w seconds.
type constTruth struct{ total float64 }

func (c constTruth) StepTime(_ int, perNode []int) float64 {
	_, w := shape(perNode)
	return 1 / float64(max(w, 1))
}
func (c constTruth) TotalSteps() float64        { return c.total }
func (c constTruth) Epoch(step float64) float64 { return step / 10 }
func (c constTruth) Loss(step float64) float64  { return 1 / (1 + step) }

func gpuJob(id string) *structs.Job {
	j := &structs.Job{
		ID:       id,
		Training: &structs.Training{Architecture: structs.ArchitectureAllReduce, GlobalBatchSize: 64, StepsPerEpoch: 10},
		Elastic:  &structs.Elastic{Workers: structs.Bounds{Min: 1, Max: 8}},
		Worker: &structs.Role{Driver: "sim", Resources: &structs.Resources{CPU: 1000, MemoryMB: 1024,
			Devices: []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}}},
	}
	j.Canonicalize()
	return j
}

func plan(id string, perNode map[string]int) *structs.Plan {
	p := &structs.Placement{Namespace: "default", JobID: id}
	for _, n := range []string{"node-00", "node-01", "node-02"} {
		if w := perNode[n]; w > 0 {
			p.Nodes = append(p.Nodes, &structs.NodeTasks{NodeID: n, Workers: w})
			p.NumWorkers += w
		}
	}
	return &structs.Plan{Placements: []*structs.Placement{p}}
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Nodes, cfg.RestartPenalty, cfg.SampleInterval, cfg.Noise = 3, 10*time.Second, 5*time.Second, 0
	return cfg
}

func TestSim_RejectsOverCommit(t *testing.T) {
	s := New(testConfig())
	must.NoError(t, s.Submit(gpuJob("a"), constTruth{100}))
	err := s.Enact(plan("a", map[string]int{"node-00": 5}))
	must.ErrorIs(t, err, ErrOverCommitted)
	must.ErrorContains(t, err, "node-00 would hold 5000 MHz, 5120 MB and 5 GPUs of 64000, 262144 and 4")
	must.Eq(t, StatePending, s.Jobs()[0].Status, must.Sprint("a rejected plan changes nothing"))

	must.ErrorContains(t, s.Enact(plan("b", map[string]int{"node-00": 1})), `unknown job "b"`)
	bad := plan("a", map[string]int{"node-00": 1})
	bad.Placements[0].Nodes[0].NodeID = "node-99"
	must.ErrorContains(t, s.Enact(bad), `unknown node "node-99"`)
}

// TestSim_Progress checks the clock: a job trains at its true rate after the
// restart penalty, reports samples on the interval, finishes exactly when
// its steps run out, and frees its GPUs.
func TestSim_Progress(t *testing.T) {
	s := New(testConfig())
	must.NoError(t, s.Submit(gpuJob("a"), constTruth{100}))
	must.NoError(t, s.Enact(plan("a", map[string]int{"node-00": 2, "node-01": 2})))
	must.Eq(t, StateRunning, s.Jobs()[0].Status)
	// 4 workers: 4 steps/s after 10 s of penalty; 100 steps take 25 s more.
	must.Eq(t, 10.0, s.NextEvent(), must.Sprint("while restarting, the next event is the restart's end"))
	s.Advance(10)
	must.Eq(t, 0.0, s.Jobs()[0].Step)
	must.Eq(t, 35.0, s.NextEvent())
	s.Advance(20)
	must.Eq(t, 40.0, s.Jobs()[0].Step)
	s.Advance(100)
	res := s.Results()[0]
	must.Eq(t, 35.0, res.Finish)
	must.Eq(t, 0.0, res.Start)
	must.True(t, s.Done())
	must.Eq(t, StateComplete, s.Jobs()[0].Status)

	samples, next := s.Samples(0)
	var times []float64
	for _, smp := range samples {
		times = append(times, float64(smp.Time)/1e9)
		must.NoError(t, smp.Validate())
		must.Eq(t, 4, smp.NumWorkers)
	}
	must.Eq(t, []float64{15, 20, 25, 30, 35, 35}, times, must.Sprint("every 5 s after the penalty, and at the end"))
	must.Eq(t, int64(100), samples[len(samples)-1].Step)
	again, _ := s.Samples(next)
	must.SliceEmpty(t, again)

	usage := s.Usage()
	must.Eq(t, 4, usage[0].GPUs)
	must.Eq(t, 0, usage[len(usage)-1].GPUs)
}

// TestSim_Rescale checks that a new placement costs the restart penalty and
// keeps the steps done, and that the same placement costs nothing.
func TestSim_Rescale(t *testing.T) {
	s := New(testConfig())
	must.NoError(t, s.Submit(gpuJob("a"), constTruth{1000}))
	must.NoError(t, s.Enact(plan("a", map[string]int{"node-00": 1})))
	s.Advance(20) // 10 s of training at 1 step/s
	must.Eq(t, 10.0, s.Jobs()[0].Step)
	must.NoError(t, s.Enact(plan("a", map[string]int{"node-00": 1})))
	s.Advance(30)
	must.Eq(t, 20.0, s.Jobs()[0].Step, must.Sprint("an unchanged placement does not restart"))
	must.NoError(t, s.Enact(plan("a", map[string]int{"node-00": 4, "node-01": 4})))
	s.Advance(40)
	must.Eq(t, 20.0, s.Jobs()[0].Step, must.Sprint("restarting: no progress for 10 s"))
	s.Advance(41)
	must.Eq(t, 28.0, s.Jobs()[0].Step)
	must.Eq(t, 1, s.Results()[0].Rescales)
	must.NoError(t, s.Enact(&structs.Plan{Placements: []*structs.Placement{{Namespace: "default", JobID: "a"}}}))
	must.Eq(t, StatePaused, s.Jobs()[0].Status)
	s.Advance(100)
	must.Eq(t, 28.0, s.Jobs()[0].Step, must.Sprint("paused jobs keep their steps"))
}

// TestSim_EventOrder checks that NextEvent always names the earliest
// completion, so a runner that advances event by event sees them in order.
func TestSim_EventOrder(t *testing.T) {
	s := New(testConfig())
	for _, id := range []string{"slow", "fast", "mid"} {
		must.NoError(t, s.Submit(gpuJob(id), constTruth{map[string]float64{"slow": 300, "fast": 50, "mid": 100}[id]}))
	}
	p := &structs.Plan{}
	for i, id := range []string{"slow", "fast", "mid"} {
		p.Placements = append(p.Placements, plan(id, map[string]int{[]string{"node-00", "node-01", "node-02"}[i]: 1}).Placements[0])
	}
	must.NoError(t, s.Enact(p))
	var order []string
	for !s.Done() {
		next := s.NextEvent()
		must.False(t, math.IsInf(next, 1))
		before := map[string]bool{}
		for _, r := range s.Results() {
			before[r.JobID] = r.Finish >= 0
		}
		s.Advance(next)
		for _, r := range s.Results() {
			if r.Finish >= 0 && !before[r.JobID] {
				order = append(order, r.JobID)
				must.Eq(t, next, r.Finish)
			}
		}
	}
	must.Eq(t, []string{"fast", "mid", "slow"}, order)
}

func TestPolluxWorkload(t *testing.T) {
	profiles, err := LoadProfiles(Data)
	must.NoError(t, err)
	w, err := LoadPolluxWorkload(Data, "pollux/workloads/workload-6.csv", profiles)
	must.NoError(t, err)
	must.SliceLen(t, 160, w.Arrivals)
	for i, a := range w.Arrivals {
		must.NoError(t, a.Job.Validate())
		must.NoError(t, a.FixedJob().Validate())
		b := a.Job.Elastic.Workers
		must.True(t, b.Contains(a.RequestWorkers))
		must.Eq(t, 0, a.Job.Training.GlobalBatchSize%a.RequestWorkers)
		if i > 0 {
			must.GreaterEq(t, w.Arrivals[i-1].Time, a.Time)
		}
		must.Positive(t, a.Truth.TotalSteps())
	}
	// cifar10-0 asks for 6 replicas with a batch of 2048: 8 divides it.
	must.Eq(t, "cifar10-0", w.Arrivals[0].Job.ID)
	must.Eq(t, 8, w.Arrivals[0].RequestWorkers)
}

func TestParametricWorkload(t *testing.T) {
	w := ParametricWorkload(20, 300, 1)
	must.SliceLen(t, 20, w.Arrivals)
	must.Eq(t, w, ParametricWorkload(20, 300, 1), must.Sprint("deterministic for a seed"))
	for _, a := range w.Arrivals {
		must.NoError(t, a.Job.Validate())
		must.Less(t, a.Truth.StepTime(1, []int{1}), a.Truth.StepTime(4, []int{4}), must.Sprint("4 ps and 4 workers step faster than 1 and 1"))
		must.Greater(t, a.Truth.StepTime(4, []int{16}), a.Truth.StepTime(1, []int{16}), must.Sprint("one ps is a bottleneck for 16 workers"))
		must.Positive(t, a.Truth.TotalSteps())
	}
}

func subtaskJob(id string) *structs.Job {
	j := &structs.Job{
		ID:       id,
		Training: &structs.Training{Architecture: structs.ArchitecturePS, GlobalBatchSize: 64, StepsPerEpoch: 10},
		Elastic:  &structs.Elastic{Workers: structs.Bounds{Min: 1, Max: 8}},
		Worker:   &structs.Role{Driver: "sim", Resources: &structs.Resources{CPU: 1000, MemoryMB: 1024}},
	}
	j.Canonicalize()
	return j
}

// TestSim_Colocation: subtask jobs sharing nodes overlap one's computation
// with the other's communication: a CPU-heavy and a network-heavy job on
// the same two nodes iterate in max(ΣC, ΣN, own) (eq. 4.1) rather than
// each in its own C + N, and report their subtasks in their samples. The
// utilisation follows.
func TestSim_Colocation(t *testing.T) {
	cfg := testConfig()
	cfg.RestartPenalty = 0
	s := New(cfg)
	cpuHeavy := &SubtaskTruth{CPU1: 6, Net: 1, Iterations: 100}
	netHeavy := &SubtaskTruth{CPU1: 1, Net: 3, Iterations: 100}
	must.NoError(t, s.Submit(subtaskJob("c"), cpuHeavy))
	must.NoError(t, s.Submit(subtaskJob("n"), netHeavy))
	both := map[string]int{"node-00": 1, "node-01": 1}
	p := plan("c", both)
	p.Placements = append(p.Placements, plan("n", both).Placements...)
	must.NoError(t, s.Enact(p))

	// On 2 nodes: C = 3 and 0.5, N = 1 and 3: ΣC = 3.5, ΣN = 4, own 4 and
	// 3.5: every iteration takes 4 s, for both.
	co := s.colocation(false)
	for _, id := range []string{"c", "n"} {
		must.Eq(t, 4.0, s.stepTime(s.jobs[id], co))
	}
	cpu, net := s.subtaskUtilisation()
	// Two nodes of three busy: CPU 3.5/4 and network 4/4 on each.
	must.Less(t, 1e-12, math.Abs(cpu-2*3.5/4/3))
	must.Less(t, 1e-12, math.Abs(net-2*1.0/3))

	s.Advance(40)
	samples, _ := s.Samples(0)
	must.SliceNotEmpty(t, samples)
	for _, smp := range samples {
		if smp.JobID == "c" {
			must.Between(t, 2.5, smp.CPUS, 3.5)
			must.Between(t, 0.8, smp.NetS, 1.2)
		}
	}
	must.Eq(t, 10.0, s.Jobs()[0].Step, must.Sprint("4 s an iteration"))
	// Alone, the CPU-heavy job would take 3 + 1 = 4 s too, the other 3.5:
	// together they iterate as fast as alone, on the same nodes.
	must.Eq(t, 4.0, cpuHeavy.StepTime(0, []int{1, 1}))
}

// TestSim_AllocationsAtFinish: jobs that finish within one Advance give
// their tasks up at their own finish times, in time order, not at the
// time the Advance started from.
func TestSim_AllocationsAtFinish(t *testing.T) {
	s := New(testConfig())
	must.NoError(t, s.Submit(gpuJob("slow"), constTruth{100}))
	must.NoError(t, s.Submit(gpuJob("fast"), constTruth{100}))
	// Both restart for 10 s, then slow does 1 step a second (100 s),
	// fast 2 (50 s).
	must.NoError(t, s.Enact(plan("slow", map[string]int{"node-00": 1})))
	must.NoError(t, s.Enact(plan("fast", map[string]int{"node-01": 2})))
	s.Advance(1000)
	must.Eq(t, []AllocChange{
		{Time: 0, JobID: "slow", GPUs: 1, CPU: 1000, MemoryMB: 1024},
		{Time: 0, JobID: "fast", GPUs: 2, CPU: 2000, MemoryMB: 2048},
		{Time: 60, JobID: "fast"},
		{Time: 110, JobID: "slow"},
	}, s.Allocations())
	res := s.Results()
	must.Eq(t, []float64{110, 60}, []float64{res[0].Finish, res[1].Finish})
}

// TestSim_Sizes checks that per-task sizes count in capacity and in what a
// job holds, that a node may hold a job's tasks at two sizes, and that a
// change of size alone restarts the job like any other change.
func TestSim_Sizes(t *testing.T) {
	s := New(testConfig())
	j := gpuJob("a")
	j.Worker.Resources.CPURange = &structs.ResourceRange{Min: 1000, Max: 64000, Initial: 1000}
	j.Worker.Resources.MemoryRange = &structs.ResourceRange{Min: 512, Initial: 1024}
	must.NoError(t, s.Submit(j, constTruth{1000}))

	sized := func(nodes ...*structs.NodeTasks) *structs.Plan {
		p := &structs.Placement{Namespace: "default", JobID: "a", Nodes: nodes}
		for _, nt := range nodes {
			p.NumWorkers += nt.Workers
		}
		return &structs.Plan{Placements: []*structs.Placement{p}}
	}
	err := s.Enact(sized(&structs.NodeTasks{NodeID: "node-00", Workers: 2, WorkerSize: structs.TaskSize{CPU: 40000}}))
	must.ErrorIs(t, err, ErrOverCommitted)
	must.ErrorContains(t, err, "node-00 would hold 80000 MHz, 2048 MB and 2 GPUs")

	must.NoError(t, s.Enact(sized(
		&structs.NodeTasks{NodeID: "node-00", Workers: 1},
		&structs.NodeTasks{NodeID: "node-00", Workers: 1, WorkerSize: structs.TaskSize{CPU: 8000, MemoryMB: 4096}},
	)))
	allocs := s.Allocations()
	last := allocs[len(allocs)-1]
	must.Eq(t, 9000, last.CPU)
	must.Eq(t, 5120, last.MemoryMB)
	must.Eq(t, 2, last.GPUs)
	s.Advance(20) // 10 s of training at 2 workers: 0.5 s a step
	must.Eq(t, 20.0, s.Jobs()[0].Step, must.Sprint("both entries' workers train"))

	must.NoError(t, s.Enact(sized(
		&structs.NodeTasks{NodeID: "node-00", Workers: 1},
		&structs.NodeTasks{NodeID: "node-00", Workers: 1, WorkerSize: structs.TaskSize{CPU: 8000, MemoryMB: 8192}},
	)))
	must.Eq(t, 1, s.Results()[0].Rescales, must.Sprint("a size alone is a change"))
	s.Advance(30)
	must.Eq(t, 20.0, s.Jobs()[0].Step, must.Sprint("restarting from the checkpoint"))
}
