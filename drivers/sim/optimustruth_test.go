package sim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

func optimusModel(t *testing.T, name string) OptimusModel {
	t.Helper()
	for _, m := range OptimusModels {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no model %q", name)
	return OptimusModel{}
}

// TestOptimusTruthTable2 checks that ResNet-50's truth is the paper's speed
// functions with Table 2's coefficients, worked out by hand here, and that
// the sync function has Fig. 4(a)'s optimum at 8 workers of 20 containers.
func TestOptimusTruthTable2(t *testing.T) {
	rn := optimusModel(t, "resnet-50")
	rn.Blocks = nil // evenly split, as Table 2's fit assumes (§3.2)
	async := NewOptimusTruth(rn, true, 0.02, 2, nil, 1)
	sync := NewOptimusTruth(rn, false, 0.02, 2, nil, 1)
	cases := []struct {
		name  string
		truth *OptimusTruth
		p, w  int
		speed float64 // steps per second, by hand from eq. 3 or 4
	}{
		// eq. 3: w / (2.83 + 3.92·w/p + 0·w + 0.11·p)
		{"async 1,1", async, 1, 1, 1 / (2.83 + 3.92 + 0.11)},
		{"async 4,8", async, 4, 8, 8 / (2.83 + 3.92*2 + 0.44)},
		{"async 10,10", async, 10, 10, 10 / (2.83 + 3.92 + 1.1)},
		// eq. 4: 1 / (1.02·M/w + 2.78 + 4.92·w/p + 0·w + 0.02·p), M = 41.6
		{"sync 1,1", sync, 1, 1, 1 / (1.02*41.6 + 2.78 + 4.92 + 0.02)},
		{"sync 12,8", sync, 12, 8, 1 / (1.02*41.6/8 + 2.78 + 4.92*8/12 + 0.24)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, math.Round(tc.speed*1e9), math.Round(tc.truth.Speed(tc.p, tc.w)*1e9))
			must.Eq(t, math.Round(1e9/tc.speed), math.Round(1e9*tc.truth.StepTime(tc.p, []int{tc.w})))
		})
	}
	best := 0
	for w := 1; w < 20; w++ {
		if best == 0 || sync.Speed(20-w, w) > sync.Speed(20-best, best) {
			best = w
		}
	}
	must.Eq(t, 8, best, must.Sprint("Fig. 4(a): 8 workers and 12 servers train fastest of 20 containers"))
}

// TestOptimusTruthBalance checks eq. 2's slowest server: ResNet-50's w/p
// term grows by its assignment's largest over mean load, more under
// MXNet's default than under an even split, and not at all with one
// server; and MXNet's default makes Table 3's 247 requests at 10 servers.
func TestOptimusTruthBalance(t *testing.T) {
	rn := optimusModel(t, "resnet-50")
	must.SliceLen(t, 157, rn.Blocks)
	var total int64
	for _, b := range rn.Blocks {
		total += b.Size
	}
	must.Between(t, 25_000_000, total, 26_000_000)
	_, requests := MXNetLoads(rn.Blocks, 10, rand.New(rand.NewPCG(1, 2)))
	must.Eq(t, 247, requests)

	even := func(blocks []ParamBlock, servers int) []int64 {
		loads := make([]int64, servers)
		for s := range loads {
			loads[s] = total / int64(servers)
		}
		return loads
	}
	mx := NewOptimusTruth(rn, false, 0.02, 2, nil, 1)
	ideal := NewOptimusTruth(rn, false, 0.02, 2, even, 1)
	must.Eq(t, ideal.StepSeconds(1, 4), mx.StepSeconds(1, 4))
	for p := 2; p <= 16; p++ {
		must.Less(t, 1.0001, ideal.Imbalance[p])
		must.Greater(t, 1.04, mx.Imbalance[p], must.Sprintf("MXNet at %d servers", p))
	}
	t.Logf("imbalance MXNet %.3f", mx.Imbalance)
	// Fig. 21's set-up, 10 workers and 10 servers: the w/p term is
	// 4.92 s at even loads.
	must.Eq(t, math.Round(1e6*(ideal.StepSeconds(10, 10)+4.92*(mx.Imbalance[10]-ideal.Imbalance[10]))), math.Round(1e6*mx.StepSeconds(10, 10)))
}

// TestOptimusTruthScaling checks eq. 2's scaling: a model of 2.5 million
// parameters has a tenth of ResNet-50's model-bound coefficients and the
// same connection overheads.
func TestOptimusTruthScaling(t *testing.T) {
	m := OptimusModel{Name: "tenth", Params: 2.5, Examples: 1000}
	a := NewOptimusTruth(m, true, 0.02, 2, nil, 1)
	must.Eq(t, [5]float64{0.283, 0.392, 0, 0.11, 0}, round9(a.Theta))
	s := NewOptimusTruth(m, false, 0.02, 2, nil, 1)
	must.Eq(t, [5]float64{0.102, 0.278, 0.492, 0, 0.02}, round9(s.Theta))
	must.Eq(t, 32.0, a.StepsPerEpoch, must.Sprint("1000 examples in mini-batches of 32"))
	must.Eq(t, 4.0, s.StepsPerEpoch, must.Sprint("1000 examples in global batches of 256"))
}

func round9(x [5]float64) [5]float64 {
	for i := range x {
		x[i] = math.Round(x[i]*1e9) / 1e9
	}
	return x
}

// TestOptimusTruthConvergence checks the loss curve of Fig. 7 and the
// epochs it takes to converge: with β = (0.21, 1.07, 0.07) the loss
// decreases by less than 2% per epoch from epoch 28 on, and by less than
// 5% from epoch 11 on.
func TestOptimusTruthConvergence(t *testing.T) {
	m := optimusModel(t, "kaggle")
	for _, tc := range []struct {
		threshold float64
		epochs    float64
	}{{0.02, 30}, {0.05, 13}, {0.01, 52}} {
		tr := NewOptimusTruth(m, true, tc.threshold, 2, nil, 1)
		must.Eq(t, tc.epochs*tr.StepsPerEpoch, tr.TotalSteps())
		must.Eq(t, tc.epochs, tr.Epoch(tr.TotalSteps()))
	}
	tr := NewOptimusTruth(m, true, 0.02, 2, nil, 1)
	must.Eq(t, 1/1.07+0.07, tr.Loss(0))
	must.Eq(t, 1/(0.21*30+1.07)+0.07, tr.Loss(tr.TotalSteps()))
}

func TestOptimusWorkload(t *testing.T) {
	w := OptimusWorkload(60, 12000, 1)
	must.SliceLen(t, 60, w.Arrivals)
	must.Eq(t, w, OptimusWorkload(60, 12000, 1), must.Sprint("deterministic for a seed"))
	must.SliceLen(t, 13, w.NodeGPUs)
	models, modes := map[string]bool{}, map[string]int{}
	for i, a := range w.Arrivals {
		must.NoError(t, a.Job.Validate())
		must.Between(t, 0, a.Time, 12000)
		if i > 0 {
			must.GreaterEq(t, w.Arrivals[i-1].Time, a.Time)
		}
		tr := a.Truth.(*OptimusTruth)
		must.Between(t, 0.01, tr.Threshold, 0.05)
		must.Eq(t, tr.Async, a.Job.Training.Mode == structs.ModeAsync)
		must.Eq(t, int(tr.StepsPerEpoch), a.Job.Training.StepsPerEpoch)
		must.Eq(t, 5000, a.Job.Worker.Resources.CPU)
		models[tr.Model.Name] = true
		modes[a.Job.Training.Mode]++
	}
	must.MapLen(t, 9, models, must.Sprint("60 draws cover Table 1's nine models"))
	must.Between(t, 20, modes[structs.ModeAsync], 40)
}
