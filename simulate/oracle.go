package simulate

import (
	"math"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/model"
)

// OracleSuffix marks a policy of `caravan sim -policy` that runs with
// oracle models, e.g. "optimus+oracle" (Options.Oracle).
const OracleSuffix = "+oracle"

// oracle hands the algorithm it wraps the ground truth instead of the
// fitted models, as the Pollux artifact's Optimus+Oracle baseline reads
// its jobs' true step times and remaining iterations: from a job's first
// round on, its speed is the truth's own function for parametric jobs and,
// for the others, the all-reduce form fitted without noise to the truth at
// every worker count within the job's bounds, spread evenly over the
// fewest nodes as planner/placement places them; its remaining steps are
// the truth's; and its models are not young. The all-reduce form is an
// approximation of the truth's step times, which jump where a job spans
// one more node or accumulates one more micro-batch.
var (
	_ planner.Algorithm    = (*oracle)(nil)
	_ planner.Configurable = (*oracle)(nil)
	_ planner.ModelDriven  = (*oracle)(nil)
	_ planner.Describer    = (*oracle)(nil)
)

type oracle struct {
	inner       planner.Algorithm
	truth       map[string]sim.Truth
	gpusPerNode int
	speeds      map[string]*model.Speed
}

// NewOracle wraps alg so that it plans with the truths (by job ID) of a
// run on cluster; jobs without a truth keep their fitted models.
func NewOracle(alg planner.Algorithm, truths map[string]sim.Truth, cluster sim.Config) planner.Algorithm {
	per := 1
	for i := range cluster.NodeCount() {
		per = max(per, cluster.GPUs(i))
	}
	return &oracle{inner: alg, truth: truths, gpusPerNode: per, speeds: map[string]*model.Speed{}}
}

func (o *oracle) Name() string { return o.inner.Name() }

// SpeedModels is the wrapped algorithm's (planner.ModelDriven).
func (o *oracle) SpeedModels() bool { return planner.CapabilitiesOf(o.inner).SpeedModels }

// Capabilities are the wrapped algorithm's (planner.Describer): the
// oracle changes what it reads, not what it reads it for.
func (o *oracle) Capabilities() planner.Capabilities { return planner.CapabilitiesOf(o.inner) }

// SetConfig passes options to the wrapped algorithm
// (planner.Configurable); one that takes none refuses them.
func (o *oracle) SetConfig(options map[string]string) error { return passConfig(o.inner, options) }

func (o *oracle) Plan(req *planner.Request) (*planner.Decision, error) {
	r := *req
	r.Jobs = make([]*planner.Job, len(req.Jobs))
	for i, j := range req.Jobs {
		tr, ok := o.truth[j.Job.ID]
		if !ok {
			r.Jobs[i] = j
			continue
		}
		jj := *j
		s, err := o.speed(j, tr)
		if err != nil {
			return nil, err
		}
		jj.Speed, jj.Young = s, false
		// With no loss curve and one epoch of all the steps, the planner
		// predicts exactly the true remaining steps.
		job := j.Job.Copy()
		job.Training.StepsPerEpoch = int(math.Ceil(tr.TotalSteps()))
		job.Training.Convergence.MaxEpochs = 1
		jj.Job, jj.Loss = job, nil
		r.Jobs[i] = &jj
	}
	return o.inner.Plan(&r)
}

func (o *oracle) speed(j *planner.Job, tr sim.Truth) (*model.Speed, error) {
	if s, ok := o.speeds[j.Job.ID]; ok {
		return s, nil
	}
	var s *model.Speed
	if pt, ok := tr.(*sim.ParametricTruth); ok {
		s = &model.Speed{Kind: model.SpeedSync, Theta: pt.Theta, Batch: pt.Batch}
	} else if ot, ok := tr.(*sim.OptimusTruth); ok {
		// The truth's eq. 3 or 4; it leaves out the truth's factor on the
		// w/p term for an unbalanced assignment (OptimusTruth.Imbalance),
		// which eq. 3 and 4 cannot express: under PAA at most 5%.
		s = &model.Speed{Kind: model.SpeedSync, Theta: ot.Theta, Batch: sim.OptimusTable2M}
		if ot.Async {
			s.Kind, s.Batch = model.SpeedAsync, 0
		}
	} else {
		_, wb := j.Bounds()
		var pts []model.SpeedPoint
		for w := max(wb.Min, 1); w <= wb.Max; w++ {
			pts = append(pts, model.SpeedPoint{Workers: w, Speed: 1 / tr.StepTime(0, spread(w, o.gpusPerNode))})
		}
		var err error
		if s, err = model.FitSpeed(model.SpeedAllReduce, float64(j.Job.Training.GlobalBatchSize), pts); err != nil {
			return nil, err
		}
	}
	o.speeds[j.Job.ID] = s
	return s, nil
}

// spread is w workers spread evenly over the fewest nodes of g GPUs.
func spread(w, g int) []int {
	k := (w + g - 1) / g
	per := make([]int, k)
	for x := range w {
		per[x%k]++
	}
	return per
}
