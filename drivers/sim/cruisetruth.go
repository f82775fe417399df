package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/caravan-sched/caravan/structs"
)

// cruiseN is the machines of the dissertation's homogeneous cluster (32
// r4.xlarge, §3.4.1), on which every measurement below was taken.
const cruiseN = 32

// cruiseEpoch is every application's epoch time at its optimum on 32
// machines, seconds. Chapter 3 gives its homogeneous measurements as
// ratios only (Figure 3.4's curves are not in the text we have); only
// ratios decide a split.
const cruiseEpoch = 100

// cruiseCompShare is the share of the epoch a worker spends computing at
// its application's optimum. The text gives no per-application split of
// computation and communication; chapter 4's jobs (Figure 4.9, the same
// applications at DoP 16) span 20–80% computation, and we take the
// middle, chosen before any run and the same for every application.
const cruiseCompShare = 0.5

// cruisePoint is one measured configuration on 32 machines: its workers
// (servers are the rest) and its epoch time over the optimum's.
type cruisePoint struct {
	w   int
	rel float64
}

// cruiseMeasured are the dissertation's measured epoch times on 32
// r4.xlarge machines, per application, relative to its grid-search
// optimum (the point of rel 1, Table 3.4's "Optimal (W, S)"):
//
//   - NMF, MLR, LDA at (18,14), (23,9), (27,5): Table 3.1a.
//   - NMF at (22,10) and (24,8), MLR at (26,6): Table 3.4's relative
//     performance of Cruise's choices (93.9%, 98.8%, 97.8%), measured
//     by running them.
//   - Lasso, which has no Table 3.1 column: §3.4.3's epoch-time drops
//     from (27,5) and (23,9) to its optimum (20,12), 42.7% and 28.5%:
//     1/(1−0.427) and 1/(1−0.285).
//
// §3.4.3's other drops check the table: LDA's 37.5% and 17.4% are
// Table 3.1a's 1.60× and 1.21× exactly, MLR's 55.3% from (18,14) to
// (26,6) is 2.29× and 97.8% (55.4%); NMF's 35.8% and 22.3% come out
// 39.0% and 18.1% from the tables (Figure 3.4's runs against Table
// 3.1's), and we keep the tables.
var cruiseMeasured = map[string][]cruisePoint{
	"nmf":   {{18, 1.30}, {22, 1 / 0.939}, {23, 1}, {24, 1 / 0.988}, {27, 1.66}},
	"mlr":   {{18, 2.29}, {23, 1.12}, {26, 1 / 0.978}, {27, 1}},
	"lda":   {{18, 1}, {23, 1.21}, {27, 1.60}},
	"lasso": {{20, 1}, {23, 1 / (1 - 0.285)}, {27, 1 / (1 - 0.427)}},
}

// CruiseTruth is a parameter-server job of one of chapter 3's
// applications whose epoch time is the dissertation's measurements,
// interpolated (cruiseMeasured, Rel). It does not use Cruise's cost
// model (eqs. 3.1–3.5): only the measured epoch times, the fact that a
// worker's computation is its share of the data (§3.2.2: the
// applications are linear in their data), and the assumption that at a
// fixed ratio of workers to servers the epoch time falls as 1/N.
//
// A step is a fixed 1/StepsPerEpoch of the data, whatever the split. A
// node running k of the job's workers computes k times as long (its
// machine is shared); the job's tasks should each fill a node, as
// CruiseWorkload's do.
type CruiseTruth struct {
	// App names the application (nmf, mlr, lda, lasso).
	App string
	// EpochS is the epoch time at the optimum on 32 machines, seconds.
	EpochS float64
	// StepsPerEpoch and Epochs fix the training's length.
	StepsPerEpoch, Epochs float64
	// B are the loss curve's 1/(B0·epoch + B1) + B2.
	B [3]float64
	// CompShare is the share of the epoch a worker computes at the
	// optimum (cruiseCompShare unless changed, for a sensitivity test).
	CompShare float64

	points []cruisePoint
	optW   int
}

// Rel is the epoch time on w workers and s servers, disjoint machines,
// over the optimum's on 32 machines; +Inf without a worker or a server.
//
// On N = w + s machines the configuration is taken at the same ratio of
// workers to servers on 32, W = 32·w/N, and its time scaled by 32/N (data
// and model spread over N machines in the same proportions). On 32
// machines, with x = ln(W/S):
//
//   - between two measured points, ln T is linear in x (a power law of
//     W/S through the neighbouring measurements);
//   - beyond the most workers measured (fewer servers), ln T goes on
//     along x with the last segment's slope, made rising: serving costs
//     no less with fewer servers, and the grid search (which ran every
//     configuration) found nothing faster than its optimum, so where the
//     last point is the optimum (MLR's (27,5)) the curve turns up as
//     steeply as it came down;
//   - below the fewest workers measured (more servers), the computation
//     grows as 1/W (each worker's data) and the communication stays at
//     its value at the fewest workers measured.
//
// The computation is CompShare of the optimum's epoch scaled by W*/W;
// the communication is the rest.
func (t *CruiseTruth) Rel(w, s int) float64 {
	if w < 1 || s < 1 {
		return math.Inf(1)
	}
	n := float64(w + s)
	return t.rel32(cruiseN*float64(w)/n) * cruiseN / n
}

// rel32 is Rel on 32 machines at W workers (not necessarily whole).
func (t *CruiseTruth) rel32(W float64) float64 {
	x := func(w float64) float64 { return math.Log(w / (cruiseN - w)) }
	ps := t.points
	lo, hi := ps[0], ps[len(ps)-1]
	switch {
	case W < float64(lo.w):
		comm := lo.rel - t.comp32(float64(lo.w))
		return t.comp32(W) + comm
	case W > float64(hi.w):
		prev := ps[len(ps)-2]
		slope := math.Abs(math.Log(hi.rel/prev.rel) / (x(float64(hi.w)) - x(float64(prev.w))))
		return hi.rel * math.Exp(slope*(x(W)-x(float64(hi.w))))
	}
	for i := 1; i < len(ps); i++ {
		a, b := ps[i-1], ps[i]
		if W > float64(b.w) {
			continue
		}
		f := (x(W) - x(float64(a.w))) / (x(float64(b.w)) - x(float64(a.w)))
		return math.Exp(math.Log(a.rel) + f*(math.Log(b.rel)-math.Log(a.rel)))
	}
	return hi.rel
}

// comp32 is a worker's computation on 32 machines at W workers, relative
// to the optimum's epoch.
func (t *CruiseTruth) comp32(W float64) float64 {
	return t.CompShare * float64(t.optW) / W
}

// Optimum returns the configuration of 32 machines with the least epoch
// time, by evaluating every one (the text's grid search).
func (t *CruiseTruth) Optimum() structs.Shape {
	best, bestT := 0, math.Inf(1)
	for w := 1; w < cruiseN; w++ {
		if r := t.Rel(w, cruiseN-w); r < bestT {
			best, bestT = w, r
		}
	}
	return structs.Shape{Workers: best, PS: cruiseN - best}
}

// CruiseOptimumRate returns, for a job of CruiseWorkload by its ID, its
// steps per second at its truth's optimum on 32 machines, one task a
// node (Optimum); false for another ID.
func CruiseOptimumRate(jobID string) (float64, bool) {
	app, _, _ := strings.Cut(jobID, "-")
	t, ok := NewCruiseTruth(app, 1)
	if !ok {
		return 0, false
	}
	o := t.Optimum()
	return t.StepsPerEpoch / (t.Rel(o.Workers, o.PS) * t.EpochS), true
}

// Subtasks returns a worker's computation and communication in one step
// with ps servers and the given workers per node: what its samples report
// as cpu_s and net_s. It returns +Inf for both without a worker or a
// server.
func (t *CruiseTruth) Subtasks(ps int, workersPerNode []int) (cpu, net float64) {
	_, w := shape(workersPerNode)
	if w == 0 || ps < 1 {
		return math.Inf(1), math.Inf(1)
	}
	n := float64(w + ps)
	W := cruiseN * float64(w) / n
	total := t.rel32(W) * cruiseN / n
	comp := t.comp32(W) * cruiseN / n
	unit := t.EpochS / t.StepsPerEpoch
	return comp * unit * float64(slices.Max(workersPerNode)), (total - comp) * unit
}

// StepTime is a step's computation and then its communication (a pull
// blocks the next computation, §3.2.1).
func (t *CruiseTruth) StepTime(ps int, workersPerNode []int) float64 {
	cpu, net := t.Subtasks(ps, workersPerNode)
	return cpu + net
}

func (t *CruiseTruth) TotalSteps() float64        { return t.Epochs * t.StepsPerEpoch }
func (t *CruiseTruth) Epoch(step float64) float64 { return step / t.StepsPerEpoch }
func (t *CruiseTruth) Loss(step float64) float64 {
	return 1/(t.B[0]*t.Epoch(step)+t.B[1]) + t.B[2]
}

// NewCruiseTruth returns app's truth (nmf, mlr, lda or lasso), cruiseEpoch
// seconds an epoch at its optimum on 32 machines, training for epochs
// epochs of 10 steps; false for another app.
func NewCruiseTruth(app string, epochs float64) (*CruiseTruth, bool) {
	ps, ok := cruiseMeasured[app]
	if !ok {
		return nil, false
	}
	t := &CruiseTruth{App: app, EpochS: cruiseEpoch, StepsPerEpoch: 10, Epochs: epochs, B: [3]float64{0.2, 1, 0.05}, CompShare: cruiseCompShare, points: ps}
	for _, p := range ps {
		if p.rel == 1 {
			t.optW = p.w
		}
	}
	return t, true
}

// cruiseStarts are Table 3.4's initial configurations, per application.
var cruiseStarts = []struct {
	app  string
	w, s int
}{
	{"nmf", 27, 5}, {"nmf", 18, 14},
	{"mlr", 18, 14}, {"mlr", 23, 9},
	{"lda", 27, 5}, {"lda", 23, 9},
	{"lasso", 27, 5}, {"lasso", 23, 9},
}

// CruiseWorkload returns n jobs of Table 3.4's runs (NMF, MLR, LDA and
// Lasso, each from two initial configurations on 32 machines, in turn),
// one every gap seconds, each training 30 epochs. A job's tasks take a
// whole node of DefaultConfig (one r4.xlarge each), so workers and
// servers run on disjoint machines; it may use 1–31 of each role, starts
// at its initial configuration (meta cruise_initial, planner/cruise) and
// requests that configuration of policies that do not rescale. Run it on
// 32 nodes without GPUs: `-cluster 32x0`.
func CruiseWorkload(n int, gap float64, _ uint64) *Workload {
	w := &Workload{Name: fmt.Sprintf("cruise-%d", n)}
	for i := range n {
		st := cruiseStarts[i%len(cruiseStarts)]
		truth, _ := NewCruiseTruth(st.app, 30)
		j := &structs.Job{
			ID:   fmt.Sprintf("%s-%dx%d-%d", st.app, st.w, st.s, i),
			Meta: map[string]string{"application": st.app, "cruise_initial": fmt.Sprintf("%d,%d", st.w, st.s)},
			Training: &structs.Training{
				// Asynchronous pushes (§3.2.1); any number of workers.
				Architecture: structs.ArchitecturePS, Mode: structs.ModeAsync,
				GlobalBatchSize: 1024, StepsPerEpoch: int(truth.StepsPerEpoch),
				Convergence: &structs.Convergence{MaxEpochs: int(truth.Epochs)},
			},
			Elastic: &structs.Elastic{Workers: structs.Bounds{Min: 1, Max: 31}, ParameterServers: &structs.Bounds{Min: 1, Max: 31}},
			Worker:  &structs.Role{Driver: "sim", Resources: &structs.Resources{CPU: DefaultConfig().CPU, MemoryMB: 4096}},
		}
		j.Canonicalize()
		w.Arrivals = append(w.Arrivals, Arrival{Time: float64(i) * gap, Job: j, RequestPS: st.s, RequestWorkers: st.w, Truth: truth})
	}
	return w
}
