package sim

import (
	"math"
	"testing"

	"github.com/shoenig/test/must"
)

// TestHarmonyWorkload: the dissertation's 80 jobs, 4 applications × 2
// datasets × 10 hyper-parameter settings, each once, all submitted at
// once on m4.2xlarge nodes where five jobs' tasks fit; a seed gives the
// same workload, another seed another order.
func TestHarmonyWorkload(t *testing.T) {
	w := HarmonyWorkload(HarmonyJobs, 0, 1)
	must.SliceLen(t, 80, w.Arrivals)
	must.Eq(t, 8*2300, w.NodeCPU)
	must.Eq(t, 32768, w.NodeMemoryMB)
	type key struct {
		app, dataset string
		setting      int
	}
	seen := map[key]bool{}
	ids := map[string]bool{}
	apps := map[string]int{}
	for _, a := range w.Arrivals {
		tr := a.Truth.(*SubtaskTruth)
		k := key{tr.App, tr.Dataset, tr.Setting}
		must.False(t, seen[k], must.Sprintf("%v twice", k))
		seen[k] = true
		ids[a.Job.ID] = true
		apps[tr.App]++
		must.Eq(t, 0.0, a.Time)
		must.Eq(t, tr.ID, a.Job.ID)
		must.Eq(t, HarmonyDoP, a.RequestWorkers)
		// One worker and one server per node: five jobs fit a node.
		cpu := a.Job.Worker.Resources.CPU + a.Job.ParameterServer.Resources.CPU
		mem := a.Job.Worker.Resources.MemoryMB + a.Job.ParameterServer.Resources.MemoryMB
		must.LessEq(t, w.NodeCPU, 5*cpu)
		must.LessEq(t, w.NodeMemoryMB, 5*mem)
		must.Greater(t, w.NodeCPU, 6*cpu)
		// Trained to the convergence threshold: the loss reaches it at
		// the job's iterations and not before.
		must.Less(t, 1e-9, math.Abs(tr.Loss(tr.Iterations)-(harmonyLossB2+harmonyThreshold)))
		must.Greater(t, harmonyLossB2+harmonyThreshold, tr.Loss(tr.Iterations-1))
		must.Between(t, 66, tr.Iterations, 150)
	}
	must.MapLen(t, 80, seen)
	must.MapLen(t, 80, ids)
	must.Eq(t, map[string]int{"mlr": 20, "nmf": 20, "lasso": 20, "lda": 20}, apps)

	again := HarmonyWorkload(HarmonyJobs, 0, 1)
	other := HarmonyWorkload(HarmonyJobs, 0, 2)
	sameOrder := true
	for i := range w.Arrivals {
		must.Eq(t, *w.Arrivals[i].Truth.(*SubtaskTruth), *again.Arrivals[i].Truth.(*SubtaskTruth))
		sameOrder = sameOrder && w.Arrivals[i].Job.ID == other.Arrivals[i].Job.ID
	}
	must.False(t, sameOrder)

	// More than 80: another set of settings; gaps space arrivals.
	more := HarmonyWorkload(100, 60, 1)
	must.SliceLen(t, 100, more.Arrivals)
	must.Greater(t, 0.0, more.Arrivals[99].Time)
}

// TestHarmonyApps_Text: the shapes follow the text. At DoP 16 an
// iteration on each app's first dataset takes Table 2.1's time; compute
// intensity ranks MLR > NMF > Lasso > LDA (chapter 3); NMF is CPU-bound
// and Lasso network-bound (§4.1). Over the 10 settings of the workload,
// the geometric mean iteration stays within 10% of Table 2.1.
func TestHarmonyApps_Text(t *testing.T) {
	table21 := map[string]float64{"nmf": 48.3, "lda": 94.5, "mlr": 32.4, "lasso": 28.9}
	ratio := map[string]float64{}
	for _, a := range harmonyApps {
		cpu1, net := a.shape(0)
		tr := &SubtaskTruth{CPU1: cpu1, Net: net}
		perNode := make([]int, HarmonyDoP)
		for i := range perNode {
			perNode[i] = 1
		}
		must.Less(t, 1e-9, math.Abs(tr.StepTime(HarmonyDoP, perNode)-table21[a.App]))
		ratio[a.App] = cpu1 / HarmonyDoP / net
	}
	must.Greater(t, ratio["nmf"], ratio["mlr"])
	must.Greater(t, ratio["lasso"], ratio["nmf"])
	must.Greater(t, ratio["lda"], ratio["lasso"])
	must.Greater(t, 1, ratio["nmf"])
	must.Less(t, 1, ratio["lasso"])

	for _, seed := range []uint64{1, 2, 3} {
		logSum := map[string]float64{}
		for _, a := range HarmonyWorkload(HarmonyJobs, 0, seed).Arrivals {
			tr := a.Truth.(*SubtaskTruth)
			if tr.Dataset == harmonyDatasetOf(tr.App) {
				logSum[tr.App] += math.Log(tr.CPU1/HarmonyDoP+tr.Net) / harmonySettings
			}
		}
		for app, want := range table21 {
			must.Between(t, 0.9*want, math.Exp(logSum[app]), 1.1*want, must.Sprintf("%s, seed %d", app, seed))
		}
	}
}

func harmonyDatasetOf(app string) string {
	for _, a := range harmonyApps {
		if a.App == app {
			return a.Datasets[0].Name
		}
	}
	return ""
}

// TestColocation: jobs on one node, through Enact, run as the phase
// simulation has them (TestSimulatePhases_Contention worked them by hand):
// a job alone iterates in C + N either way; a CPU-heavy and a
// network-heavy job iterate in their own 3 s coordinated and in 5 s
// sharing; an uncoordinated node takes no third job (Figure 4.3's OOM), a
// coordinated one does.
func TestColocation(t *testing.T) {
	run := func(uncoordinated bool, truths ...*SubtaskTruth) (*Sim, []float64, error) {
		cfg := testConfig()
		cfg.RestartPenalty = 0
		cfg.Uncoordinated = uncoordinated
		s := New(cfg)
		p := plan("j0", map[string]int{"node-00": 1})
		p.Placements = nil
		for i, tr := range truths {
			id := string(rune('a' + i))
			must.NoError(t, s.Submit(subtaskJob(id), tr))
			p.Placements = append(p.Placements, plan(id, map[string]int{"node-00": 1}).Placements...)
		}
		if err := s.Enact(p); err != nil {
			return s, nil, err
		}
		co := s.colocation(false)
		var out []float64
		for i := range truths {
			out = append(out, s.stepTime(s.jobs[string(rune('a'+i))], co))
		}
		return s, out, nil
	}
	cpuHeavy := &SubtaskTruth{CPU1: 2, Net: 1, Iterations: 100}
	netHeavy := &SubtaskTruth{CPU1: 1, Net: 2, Iterations: 100}
	near := func(want, got float64) {
		t.Helper()
		must.Less(t, 1e-9, math.Abs(got-want), must.Sprintf("want %v, got %v", want, got))
	}

	for _, unco := range []bool{false, true} {
		_, alone, err := run(unco, cpuHeavy)
		must.NoError(t, err)
		near(3, alone[0])
	}
	s, coord, err := run(false, cpuHeavy, netHeavy)
	must.NoError(t, err)
	near(3, coord[0])
	near(3, coord[1])
	cpu, net := s.subtaskUtilisation()
	near(1.0/3, cpu) // one node of three, always busy
	near(1.0/3, net)

	s, naive, err := run(true, cpuHeavy, netHeavy)
	must.NoError(t, err)
	near(5, naive[0])
	near(5, naive[1])
	cpu, net = s.subtaskUtilisation()
	near(0.6/3, cpu)
	near(0.6/3, net)

	_, _, err = run(true, cpuHeavy, netHeavy, cpuHeavy)
	must.ErrorIs(t, err, ErrOutOfMemory)
	_, three, err := run(false, cpuHeavy, netHeavy, cpuHeavy)
	must.NoError(t, err)
	// Coordinated, the node's CPU has 2 + 1 + 2 s of work a round.
	for _, v := range three {
		near(5, v)
	}
}
