package sim

import "math"

// Truth is a job's ground truth: how fast it really trains and how long it
// really needs. Only the simulator reads it; the scheduler sees samples.
type Truth interface {
	// StepTime is the seconds one step takes with ps parameter servers and
	// the given workers on each node (zeros allowed).
	StepTime(ps int, workersPerNode []int) float64
	// TotalSteps is how many steps the job trains for.
	TotalSteps() float64
	// Epoch and Loss describe the job after step steps.
	Epoch(step float64) float64
	Loss(step float64) float64
}

// PolluxTruth is a data-parallel job of a Pollux model at a fixed global
// batch: one GPU per worker, step times from the model's profile.
type PolluxTruth struct {
	Profile *Profile
	Batch   float64
	total   float64
}

// NewPolluxTruth returns the truth of a job of profile p with global batch b.
func NewPolluxTruth(p *Profile, batch float64) *PolluxTruth {
	return &PolluxTruth{Profile: p, Batch: batch, total: p.Steps(batch)}
}

// StepTime interpolates the profile. Beyond the most replicas ever
// measured a job gets no faster: its step takes what it takes on that many,
// with their per-GPU batch (interpolating at the smaller per-GPU batch of
// more replicas would invent speedups no measurement shows). A per-GPU
// batch larger than any measured does not fit a GPU: the step accumulates
// gradients over micro-batches of the largest measured size, as Pollux's
// simulator does, and takes that many times longer.
func (t *PolluxTruth) StepTime(_ int, workersPerNode []int) float64 {
	_, replicas := shape(workersPerNode)
	replicas = min(max(replicas, 1), t.Profile.MaxReplicas)
	local := t.Batch / float64(replicas)
	accum := math.Ceil(local / t.Profile.MaxLocalBatch)
	return accum * t.Profile.StepTime(workersPerNode, local/accum)
}
func (t *PolluxTruth) TotalSteps() float64        { return t.total }
func (t *PolluxTruth) Epoch(step float64) float64 { return t.Profile.Epoch(t.Batch, step) }
func (t *PolluxTruth) Loss(step float64) float64 {
	return t.Profile.Loss(t.Batch, t.Epoch(step))
}

// ParametricTruth is a synchronous parameter-server job after the Optimus
// paper: step time θ0·M/w + θ1 + θ2·w/p + θ3·w + θ4·p (eq. 4), and loss
// 1/(b0·e + b1) + b2 over epochs e (Fig. 5's shape). It trains until its
// loss decreases by less than Threshold per epoch for Patience epochs, or
// until MaxEpochs when that is positive, as a trainer honours max_epochs.
type ParametricTruth struct {
	Theta         [5]float64
	Batch         float64
	B             [3]float64
	StepsPerEpoch float64
	Threshold     float64
	Patience      int
	MaxEpochs     float64
	total         float64
}

// Init computes the convergence point; call it once the fields are set.
func (t *ParametricTruth) Init() *ParametricTruth {
	below := 0
	for e := 0.0; ; e++ {
		l0, l1 := t.lossAt(e), t.lossAt(e+1)
		if (l0-l1)/l0 < t.Threshold {
			below++
		} else {
			below = 0
		}
		if below >= t.Patience || e > 10000 || t.MaxEpochs > 0 && e+1 >= t.MaxEpochs {
			t.total = (e + 1) * t.StepsPerEpoch
			return t
		}
	}
}

func (t *ParametricTruth) lossAt(epoch float64) float64 {
	return 1/(t.B[0]*epoch+t.B[1]) + t.B[2]
}

func (t *ParametricTruth) StepTime(ps int, workersPerNode []int) float64 {
	_, w := shape(workersPerNode)
	p, wf := float64(max(ps, 1)), float64(max(w, 1))
	return t.Theta[0]*t.Batch/wf + t.Theta[1] + t.Theta[2]*wf/p + t.Theta[3]*wf + t.Theta[4]*p
}
func (t *ParametricTruth) TotalSteps() float64        { return t.total }
func (t *ParametricTruth) Epoch(step float64) float64 { return step / t.StepsPerEpoch }
func (t *ParametricTruth) Loss(step float64) float64  { return t.lossAt(t.Epoch(step)) }
