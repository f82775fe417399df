package optimus

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/model"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

func bounds(min, max int) structs.Bounds { return structs.Bounds{Min: min, Max: max} }

// TestOptimus_WorkLeft checks how the gain treats work left. Of two jobs
// alike but for how much training they have left, under eq. 9
// (GainSeconds) the longer one saves more seconds with each task, so it
// gets more of a contended cluster; under GainRelative each task saves both
// the same fraction of their remaining time, so they split the cluster.
func TestOptimus_WorkLeft(t *testing.T) {
	for _, tc := range []struct {
		name      string
		gain      Gain
		longExtra int // tasks the long job gets beyond the short one's, at least
		maxDiff   int // and at most
	}{
		{"seconds", GainSeconds, 20, 64},
		{"relative", GainRelative, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := planner.NewHarness(t)
			h.AddNodes("n", 4, 16000, 65536, 0)
			long := planner.MockJob("long", bounds(1, 16), bounds(1, 64))
			long.Training.Convergence.MaxEpochs = 100
			short := planner.MockJob("short", bounds(1, 16), bounds(1, 64))
			short.Training.Convergence.MaxEpochs = 10
			h.AddJob(long, planner.MockSpeed())
			h.AddJob(short, planner.MockSpeed())

			got := h.Plan(NewWithOptions(Options{Gain: tc.gain}))
			l, s := got["long"], got["short"]
			nl, ns := l.NumWorkers+l.NumPS, s.NumWorkers+s.NumPS
			t.Logf("long: %s\nshort: %s", l.Reason, s.Reason)
			must.Between(t, tc.longExtra, nl-ns, tc.maxDiff)
			must.Eq(t, 64, nl+ns, must.Sprint("the CPU-bound cluster holds 64 tasks and is used fully"))
		})
	}
}

// TestOptimus_StopsWhenGainIsGone checks that a job whose speed stops
// improving gets no more tasks even when the cluster has room. (Only the
// sync form can peak: with θ ≥ 0 the async speed grows with every worker.)
func TestOptimus_StopsWhenGainIsGone(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 8, 32000, 131072, 0)
	j := planner.MockJob("peak", bounds(1, 8), bounds(1, 64))
	j.Training.Mode, j.Training.GlobalBatchSize = structs.ModeSync, 512
	// 1/f = 0.001·512/w + 0.05·w/p + 0.05·w: fastest at 3 or 4 workers.
	speed := &model.Speed{Kind: model.SpeedSync, Batch: 512, Theta: [5]float64{0.001, 0, 0.05, 0.05, 0}}
	h.AddJob(j, speed)
	got := h.Plan(New())["peak"]
	must.Between(t, 2, got.NumWorkers, 4, must.Sprint(got.Reason))
	must.StrContains(t, got.Reason, "more tasks would gain less than they cost")
	must.Greater(t, speed.At(got.NumPS, got.NumWorkers+1), speed.At(got.NumPS, got.NumWorkers))
}

func TestOptimus_Bounds(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 8, 32000, 131072, 0)
	h.AddJob(planner.MockJob("capped", bounds(2, 3), bounds(4, 5)), planner.MockSpeed())
	got := h.Plan(New())["capped"]
	must.Eq(t, 3, got.NumPS)
	must.Eq(t, 5, got.NumWorkers)
	must.StrContains(t, got.Reason, "at its maximum")
}

// TestOptimus_Profiling checks that a job without a speed model keeps its
// minimum: there is nothing to compute gains from until it is profiled.
func TestOptimus_Profiling(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 4, 16000, 65536, 0)
	h.AddJob(planner.MockJob("new", bounds(1, 4), bounds(2, 16)), nil)
	got := h.Plan(New())["new"]
	must.Eq(t, 1, got.NumPS)
	must.Eq(t, 2, got.NumWorkers)
	must.StrContains(t, got.Reason, "profiled")
}

// TestOptimus_YoungFactor checks that of two identical jobs competing for
// the cluster, the one whose models are young gets no more than the other.
func TestOptimus_YoungFactor(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 2, 16000, 65536, 0)
	h.AddJob(planner.MockJob("a-young", bounds(1, 16), bounds(1, 64)), planner.MockSpeed()).Young = true
	h.AddJob(planner.MockJob("b-mature", bounds(1, 16), bounds(1, 64)), planner.MockSpeed())
	got := h.Plan(New())
	y, m := got["a-young"], got["b-mature"]
	must.Less(t, m.NumPS+m.NumWorkers, y.NumPS+y.NumWorkers, must.Sprintf("young %s; mature %s", y.Reason, m.Reason))
}

// TestOptimus_Placement checks Theorem 1's scheme: a job that fits on one
// node runs on one node; a larger one is spread evenly over the fewest.
func TestOptimus_Placement(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("n", 4, 8000, 65536, 0)
	h.AddJob(planner.MockJob("small", bounds(1, 1), bounds(3, 3)), planner.MockSpeed())
	h.AddJob(planner.MockJob("large", bounds(2, 2), bounds(10, 10)), planner.MockSpeed())
	got := h.Plan(New())
	must.Eq(t, []*structs.NodeTasks{{NodeID: got["small"].Nodes[0].NodeID, PS: 1, Workers: 3}}, got["small"].Nodes)
	large := got["large"].Nodes
	must.SliceLen(t, 2, large, must.Sprint("12 tasks of 1000 MHz need two 8000 MHz nodes"))
	for _, nt := range large {
		must.Eq(t, 1, nt.PS)
		must.Eq(t, 5, nt.Workers)
	}
}

// TestOptimus_Devices checks device-aware placement: GPU tasks land only on
// nodes with enough matching instances, constraints on device attributes
// hold, and a job whose devices the cluster lacks waits with a reason.
func TestOptimus_Devices(t *testing.T) {
	h := planner.NewHarness(t)
	h.AddNodes("cpu", 2, 32000, 131072, 0)
	gpus := h.AddNodes("v100", 2, 32000, 131072, 4)
	a100 := h.AddNodes("a100", 1, 32000, 131072, 8)
	a100[0].Devices[0].Name = "A100"
	a100[0].Devices[0].Attributes["memory"] = structs.ParseAttribute("40 GiB")

	train := planner.MockJob("train", bounds(1, 2), bounds(1, 16))
	train.Worker.Resources.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}
	big := planner.MockJob("big", bounds(1, 1), bounds(2, 2))
	big.Worker.Resources.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: 2,
		Constraints: []*structs.Constraint{{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "32 GiB"}}}}
	fpga := planner.MockJob("fpga", bounds(1, 1), bounds(1, 1))
	fpga.Worker.Resources.Devices = []*structs.RequestedDevice{{Name: "xilinx/fpga"}}
	h.AddJob(train, planner.MockSpeed())
	h.AddJob(big, planner.MockSpeed())
	h.AddJob(fpga, planner.MockSpeed())

	got := h.Plan(New())
	gpuNodes := map[string]bool{gpus[0].ID: true, gpus[1].ID: true, a100[0].ID: true}
	for _, nt := range got["train"].Nodes {
		must.True(t, nt.Workers == 0 || gpuNodes[nt.NodeID], must.Sprintf("GPU worker on %s", nt.NodeID))
	}
	for _, nt := range got["big"].Nodes {
		must.True(t, nt.Workers == 0 || nt.NodeID == a100[0].ID, must.Sprintf("a 32 GiB worker on %s", nt.NodeID))
	}
	must.Eq(t, 2, got["big"].NumWorkers)
	must.True(t, got["fpga"].Paused())
	must.StrContains(t, got["fpga"].Reason, "none of the devices")
	must.LessEq(t, 16-4, got["train"].NumWorkers, must.Sprint("16 GPUs, 4 of them taken by big"))
}

// TestOptimus_HeapMatchesScan checks that the heap and the straightforward
// scan make the same decisions: the heap is an optimisation, not a change.
func TestOptimus_HeapMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := range 50 {
		h := planner.NewHarness(t)
		h.AddNodes("n", 1+rng.IntN(20), 4000*(1+rng.IntN(8)), 8192*(1+rng.IntN(8)), rng.IntN(3)*4)
		for i := range 1 + rng.IntN(25) {
			j := planner.MockJob(fmt.Sprintf("j%02d", i), bounds(1, 1+rng.IntN(6)), bounds(1, 1+rng.IntN(20)))
			if rng.IntN(3) == 0 {
				j.Worker.Resources.Devices = []*structs.RequestedDevice{{Name: "gpu"}}
			}
			v := h.AddJob(j, &model.Speed{Kind: model.SpeedAsync, Theta: [5]float64{rng.Float64(), rng.Float64(), rng.Float64() * 0.1, rng.Float64() * 0.1}})
			v.Young = rng.IntN(2) == 0
			v.Step = float64(rng.IntN(900))
		}
		for _, g := range []Gain{GainSeconds, GainRelative} {
			heap := h.Plan(NewWithOptions(Options{Gain: g}))
			scan := h.Plan(NewWithOptions(Options{Gain: g, Scan: true}))
			must.Eq(t, heap, scan, must.Sprintf("trial %d, gain %d", trial, g))
		}
	}
}

func TestOptimus_SetConfig(t *testing.T) {
	o := NewWithOptions(Options{})
	must.NoError(t, o.SetConfig(map[string]string{"young_factor": "0.8", "rescale_cost": "10s"}))
	must.Eq(t, 0.8, o.opts.YoungFactor)
	must.Eq(t, 10*time.Second, o.opts.RescaleCost)

	err := o.SetConfig(map[string]string{"young_factor": "2", "rescale_cost": "-1s", "colour": "red"})
	must.ErrorContains(t, err, `young_factor = "2": must be a number in (0, 1]`)
	must.ErrorContains(t, err, `rescale_cost = "-1s": must be a positive duration`)
	must.ErrorContains(t, err, `unknown option "colour"`)
	must.Eq(t, 0.8, o.opts.YoungFactor, must.Sprint("nothing changes on an error"))

	must.NoError(t, o.SetConfig(nil))
	must.Eq(t, DefaultYoungFactor, o.opts.YoungFactor, must.Sprint("keys left out take their defaults"))
	must.Eq(t, DefaultRescaleCost, o.opts.RescaleCost)
}
