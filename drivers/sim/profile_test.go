package sim

import (
	"testing"

	"github.com/shoenig/test/must"
)

func loadAll(t *testing.T) map[string]*Profile {
	out := map[string]*Profile{}
	for name := range PolluxModels {
		p, err := LoadProfile(Data, name)
		must.NoError(t, err, must.Sprint(name))
		out[name] = p
	}
	return out
}

// TestProfile_StepTime checks the interpolation of step times against the
// measured rows (cifar10/placements.csv and scalability.csv).
func TestProfile_StepTime(t *testing.T) {
	p := loadAll(t)["cifar10"]
	// Measured: placement 1, local batch 32 and 45.
	must.Eq(t, 0.0427886962890625, p.StepTime([]int{1}, 32))
	must.Eq(t, 0.05048525333404541, p.StepTime([]int{1}, 45))
	mid := p.StepTime([]int{1}, 38.5)
	must.Between(t, 0.0427886962890625, mid, 0.05048525333404541)
	// Placement order does not matter: 13 and 31 are the same placement.
	must.Eq(t, p.StepTime([]int{1, 3}, 64), p.StepTime([]int{3, 0, 1}, 64))
	// Below and above the measured batches the step time is clamped.
	must.Eq(t, p.StepTime([]int{1}, p.MinLocalBatch), p.StepTime([]int{1}, 1))
	// Not measured as a placement: 6 nodes with one GPU each comes from
	// scalability.csv (6,6,32 → 0.14090566635131835).
	must.Eq(t, 0.14090566635131835, p.StepTime([]int{1, 1, 1, 1, 1, 1}, 32))
	// Between measured replica counts (6 nodes: 8 and 10 are measured, 9
	// is not) the step time is in between.
	eight, ten := p.StepTime([]int{3, 1, 1, 1, 1, 1}, 32), p.StepTime([]int{3, 3, 1, 1, 1, 1}, 32)
	must.Between(t, min(eight, ten), p.StepTime([]int{4, 1, 1, 1, 1, 1}, 32), max(eight, ten))
	for name, prof := range loadAll(t) {
		for _, pl := range [][]int{{1}, {4}, {4, 4}, {4, 4, 4, 4}, {4, 4, 4, 4, 4, 4, 4, 4}, {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}} {
			st := prof.StepTime(pl, prof.MaxLocalBatch/2)
			must.Positive(t, st, must.Sprintf("%s %v", name, pl))
		}
	}
}

// TestProfile_Steps checks convergence: at the smallest measured batch a
// step makes one unit of progress, so a job needs the target progress in
// steps; larger batches need fewer steps but more samples (efficiency ≤
// 1); epochs run through in order.
func TestProfile_Steps(t *testing.T) {
	profiles := loadAll(t)
	cifar := profiles["cifar10"]
	must.Eq(t, 100, cifar.Epochs)
	must.Eq(t, cifar.EpochProgress(100), cifar.Steps(128))
	must.Between(t, 39062, cifar.Steps(128), 39064)
	must.Less(t, cifar.Steps(512), cifar.Steps(1024))
	must.Greater(t, cifar.Steps(512)*512, cifar.Steps(1024)*1024)

	for name, p := range profiles {
		b := p.curves[len(p.curves)/2].batch
		truth := NewPolluxTruth(p, b)
		total := truth.TotalSteps()
		must.Less(t, total*b/p.InitBatch, p.Steps(p.InitBatch), must.Sprintf("%s: fewer samples at the smallest batch", name))
		prev := 0.0
		for _, f := range []float64{0.1, 0.5, 0.9, 1} {
			e := truth.Epoch(f * total)
			must.Greater(t, prev, e, must.Sprintf("%s epoch at %v", name, f))
			prev = e
		}
		must.Eq(t, float64(p.Epochs), truth.Epoch(total))
		must.Greater(t, p.Loss(b, float64(p.Epochs)), p.Loss(b, 1), must.Sprintf("%s learns", name))
	}
}

// TestPolluxTruth_Saturates checks that a job gets no faster beyond the
// most replicas measured (64: 16 nodes of 4 GPUs in scalability.csv).
func TestPolluxTruth_Saturates(t *testing.T) {
	p := loadAll(t)["imagenet"]
	must.Eq(t, 64, p.MaxReplicas)
	truth := NewPolluxTruth(p, 6400)
	nodes := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = 4
		}
		return out
	}
	must.Eq(t, truth.StepTime(0, nodes(16)), truth.StepTime(0, nodes(20)))
	must.NotEq(t, truth.StepTime(0, nodes(8)), truth.StepTime(0, nodes(16)), must.Sprint("within the measurements replicas matter"))
}

func TestCanonical(t *testing.T) {
	must.Eq(t, "13", canonical([]int{3, 1}))
	must.Eq(t, "1223", canonical([]int{2, 3, 1, 2}))
	must.Eq(t, "4", canonical([]int{0, 4, 0}))
}

func TestLoadProfile_Unknown(t *testing.T) {
	_, err := LoadProfile(Data, "gpt5")
	must.ErrorContains(t, err, `unknown Pollux model "gpt5"`)
}
