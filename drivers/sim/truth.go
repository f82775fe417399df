package sim

import "slices"

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
// batch, one GPU per worker, as the Pollux artifact models it
// (efficiency.go): a step takes what the traces give at its placement and
// per-GPU batch, with gradient accumulation (Profile.Iteration), and the
// job trains until its statistical progress reaches the model's target,
// each step making Gain(Batch, epoch) of it. So a job needs
// Σ_e (EpochProgress(e+1) − EpochProgress(e)) / Gain(Batch, e) steps.
//
// The progress of a step is taken at the requested Batch; the artifact
// takes it at the batch after rounding the per-GPU batch up
// (Iteration.Batch), at most replicas − 1 samples more, which changes a
// step's progress by under 0.3% on the Pollux workloads.
type PolluxTruth struct {
	Profile *Profile
	Batch   float64
	// Local and Accum, when Local is not 0, are how a step splits Batch
	// over its replicas, as a decision chose it (structs.Batch): Local
	// samples a pass and Accum passes before the synchronising one. A
	// placement whose replicas do not make Batch of them, and a truth
	// without them, split it by the artifact's rules (Profile.Iteration).
	Local float64
	Accum int
	// Types, when not nil, are the model's profiles on the catalog's GPU
	// types: on nodes of a catalog type the job steps at that type's
	// speed, and cannot run on a type Types lacks (IterationOn, hetero.go).
	// Profile still gives its length, and its speed on any other GPU.
	Types TypeProfiles
	// Slowdown, when positive, multiplies every step time (the Sia
	// artifact's calibration, -assume sia-artifact); 0 means 1.
	Slowdown float64
	// cum[e] is the steps to the end of epoch e+1.
	cum []float64
}

// NewPolluxTruth returns the truth of a job of profile p with global batch b.
func NewPolluxTruth(p *Profile, batch float64) *PolluxTruth {
	t := &PolluxTruth{Profile: p, Batch: batch, cum: make([]float64, p.Epochs)}
	steps := 0.0
	for e := range p.Epochs {
		steps += (p.EpochProgress(e+1) - p.EpochProgress(e)) / p.Gain(batch, e)
		t.cum[e] = steps
	}
	return t
}

// StepTime is the step's time by Iteration, at the batch split last
// decided (Profile.IterationAt). Beyond the most
// replicas ever measured a job gets no faster: its step takes what it takes
// on that many, as many to a node as its fullest node holds
// (interpolating at the smaller per-GPU batch of more replicas would
// invent speedups no measurement shows).
func (t *PolluxTruth) StepTime(_ int, workersPerNode []int) float64 {
	return t.Iteration(workersPerNode).Seconds
}

// Iteration is how a step runs with the given workers per node: at the
// truth's split (Local, Accum) when it makes Batch on that many replicas,
// else by Profile.Iteration, on Profile's GPUs whatever the nodes hold
// (IterationOn reads their types), times Slowdown. Beyond the most
// replicas measured, as StepTime says.
func (t *PolluxTruth) Iteration(workersPerNode []int) Iteration {
	it := t.iterationOn(t.Profile, workersPerNode, t.Profile.MaxLocalBatch)
	it.Seconds *= t.slowdown()
	return it
}

// packed spreads n GPUs over nodes of per GPUs each, filling each in turn.
func packed(n, per int) []int {
	var out []int
	for ; n > 0; n -= per {
		out = append(out, min(n, per))
	}
	return out
}

func (t *PolluxTruth) TotalSteps() float64 { return t.cum[len(t.cum)-1] }

// Epoch is the (fractional) epoch after step steps: epochs are linear in
// steps in between their ends.
func (t *PolluxTruth) Epoch(step float64) float64 {
	e, _ := slices.BinarySearch(t.cum, step)
	if e >= len(t.cum) {
		return float64(len(t.cum))
	}
	from := 0.0
	if e > 0 {
		from = t.cum[e-1]
	}
	return float64(e) + (step-from)/(t.cum[e]-from)
}

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
