package simulate

import (
	"testing"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/planner/straggler"
	"github.com/shoenig/test/must"
)

// runDLRover runs a DLRover workload under policy on 8 nodes without GPUs.
func runDLRover(t *testing.T, workload, policy string, stragglers bool) *Result {
	t.Helper()
	wl, err := LoadWorkload(workload, 1, 0)
	must.NoError(t, err)
	cfg := sim.DefaultConfig()
	cfg.Nodes, cfg.GPUsPerNode = 8, 0
	opts := Options{Cluster: cfg}
	if stragglers {
		opts.Stragglers = &straggler.Config{}
	}
	r, err := Run(wl, builtin.Algorithms[policy](), opts)
	must.NoError(t, err)
	must.Eq(t, len(wl.Arrivals), r.Summary.Jobs, must.Sprint("every job finishes"))
	return r
}

// TestDLRover_Table1: from the user's request (the sampling shape, 12 and
// 6.2 steps/s), dlrover's optimize stage reaches Table 1's 210 and 47.8
// steps/s within 2%, from the usage the simulator measured; for W&D its
// hot-server replacements then reach the text's 258 (D:166).
func TestDLRover_Table1(t *testing.T) {
	for _, c := range []struct {
		workload        string
		sample, optimal float64
	}{{"dlrover-wd", 12, 210}, {"dlrover-xdfm", 6.2, 47.8}} {
		t.Run(c.workload, func(t *testing.T) {
			r := runDLRover(t, c.workload, "dlrover", false)
			speeds := r.Jobs[0].Speeds
			must.Greater(t, 1, len(speeds))
			must.Eq(t, 1, speeds[0].Workers)
			must.Eq(t, 1, speeds[0].PS)
			within(t, "sample", speeds[0].StepsPerSecond, c.sample, 0.01)
			within(t, "optimize", speeds[1].StepsPerSecond, c.optimal, 0.02)
			fifo := runDLRover(t, c.workload, "fifo", false)
			must.Eq(t, 1, len(fifo.Jobs[0].Speeds))
			within(t, "fifo", fifo.Jobs[0].Speeds[0].StepsPerSecond, c.sample, 0.01)
			must.Less(t, fifo.Summary.AvgJCT/5, r.Summary.AvgJCT)
		})
	}
	wd := runDLRover(t, "dlrover-wd", "dlrover", false).Jobs[0].Speeds
	within(t, "after the hot servers", wd[3].StepsPerSecond, 258, 0.02)
}

func within(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	must.True(t, got >= want*(1-tol) && got <= want*(1+tol), must.Sprintf("%s = %.3f, want %.3f ± %.0f%%", name, got, want, tol*100))
}

// TestDLRover_OOM: a worker started below its memory need is OOM-killed
// in the simulator, the kill reaches dlrover through the job's usage, and
// dlrover restarts it with double memory; the job completes.
func TestDLRover_OOM(t *testing.T) {
	wl, err := LoadWorkload("dlrover-wd", 1, 0)
	must.NoError(t, err)
	a := &wl.Arrivals[0]
	a.Job = a.Job.Copy()
	a.Job.Worker.Resources.MemoryRange.Initial = 2048 // below W&D's 3072
	a.Job.Worker.Resources.MemoryMB = 2048
	cfg := sim.DefaultConfig()
	cfg.Nodes, cfg.GPUsPerNode = 8, 0
	r, err := Run(wl, builtin.Algorithms["dlrover"](), Options{Cluster: cfg})
	must.NoError(t, err)
	j := r.Jobs[0]
	must.False(t, j.Failed)
	must.Greater(t, 0, j.Finish)
	must.Eq(t, 1, j.OOMKills)
	must.Eq(t, 2048+24576, j.Speeds[0].MemoryMB)
	must.Eq(t, 4096+24576, j.Speeds[1].MemoryMB, must.Sprint("the worker restarts with double memory"))
	must.Eq(t, 1, j.Speeds[1].Workers)

	// fifo cannot resize it: the job fails once Nomad would give up.
	f, err := Run(wl, builtin.Algorithms["fifo"](), Options{Cluster: cfg})
	must.NoError(t, err)
	must.True(t, f.Jobs[0].Failed)
	must.Eq(t, -1.0, f.Jobs[0].Finish)
}

// TestDLRover_Stragglers: an xDeepFM worker at 25% of its CPU is a
// straggler (Optimus §5.2), and so is a server at 25% of its CPU, which
// takes 3.1 times its peer's time per update while using less CPU than it,
// a machine problem by DLRover §5.4. With straggler handling on, the pass
// moves the slow task to another node once, which cures it, and the job
// ends sooner.
func TestDLRover_Stragglers(t *testing.T) {
	for _, c := range []struct {
		workload string
		gain     float64 // the JCT with the pass is below this share of without
	}{{"dlrover-xdfm-slow-worker-static", 0.4}, {"dlrover-xdfm-slow-ps", 0.95}} {
		t.Run(c.workload, func(t *testing.T) {
			off := runDLRover(t, c.workload, "fifo", false)
			on := runDLRover(t, c.workload, "fifo", true)
			must.Eq(t, 0, off.Jobs[0].Rescales)
			must.Eq(t, 1, on.Jobs[0].Rescales, must.Sprint("the straggler is moved once"))
			speeds := on.Jobs[0].Speeds
			must.SliceLen(t, 2, speeds)
			within(t, "after the move, as healthy", speeds[1].StepsPerSecond, 47.14, 0.01)
			must.Less(t, c.gain*off.Summary.AvgJCT, on.Summary.AvgJCT)
		})
	}
}
