package dlrover

import (
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/model"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// planOnce runs alg once at now, checks the decision and returns the
// job's placement.
func planOnce(t *testing.T, h *planner.Harness, alg planner.Algorithm) *structs.Placement {
	t.Helper()
	req := h.Request()
	req.Now = now
	dec, err := alg.Plan(req)
	must.NoError(t, err)
	must.NoError(t, planner.CheckDecision(req, dec))
	must.Len(t, 1, dec.Placements)
	return dec.Placements[0]
}

// podCPU sets the roles' initial CPU, in cores, as a jobspec that gives
// Table 2's pods would.
func podCPU(j *planner.Job, ps, worker int) {
	for r, cores := range map[*structs.Resources]int{j.Job.ParameterServer.Resources: ps, j.Job.Worker.Resources: worker} {
		r.CPU, r.CPURange.Initial = cores*mhz, cores*mhz
	}
}

// stepTimes gives every worker of the job's usage the same step time, so
// that the job trains at rate steps per second.
func stepTimes(j *planner.Job, rate float64) {
	n := j.Current.NumWorkers
	for _, u := range j.Usage.Tasks {
		if u.Role == structs.RoleWorker {
			u.TaskStepTimeS = float64(n) / rate
		}
	}
}

// TestAutoscale_Efficiency: the baseline starts a job at its servers and
// one step of workers at the roles' sizes, measures for the interval, adds
// a step, and when the step's scaling efficiency is at most the threshold
// it removes the step again, until the job runs without it, and holds the
// job there.
func TestAutoscale_Efficiency(t *testing.T) {
	h, j := setup(t)
	podCPU(j, 16, 3)
	a := NewAutoscale().(*Autoscale)
	must.NoError(t, a.SetConfig(map[string]string{"ps": "8", "step": "4"}))

	p := planOnce(t, h, a)
	must.Eq(t, structs.Shape{PS: 8, Workers: 4}, structs.Shape{PS: p.NumPS, Workers: p.NumWorkers})
	must.StrContains(t, p.Reason, "started at")

	size := structs.TaskSize{}
	running(j, 8, size, 4, size, time.Minute)
	stepTimes(j, 48)
	p = planOnce(t, h, a)
	must.Eq(t, 4, p.NumWorkers, must.Sprint("measures for 3 minutes first: ", p.Reason))

	j.Since = now - int64(3*time.Minute)
	p = planOnce(t, h, a)
	must.Eq(t, 8, p.NumWorkers, must.Sprint(p.Reason))

	// 4 more workers gain 40 steps/s over 12 a worker before: 0.83.
	running(j, 8, size, 8, size, 3*time.Minute)
	stepTimes(j, 88)
	p = planOnce(t, h, a)
	must.Eq(t, 12, p.NumWorkers, must.Sprint(p.Reason))
	must.StrContains(t, p.Reason, "scaling efficiency 0.83 > 0.30")

	// 4 more gain 12 over 11 a worker before: 0.27, so back to 8.
	running(j, 8, size, 12, size, 3*time.Minute)
	stepTimes(j, 100)
	p = planOnce(t, h, a)
	must.Eq(t, 8, p.NumWorkers, must.Sprint(p.Reason))
	must.StrContains(t, p.Reason, "scaling efficiency 0.27 ≤ 0.30")

	// The step back did not happen (it did not fit, or its plan was
	// dropped): the job still runs 12, and is asked for 8 again, not held
	// at the step that did not pay.
	p = planOnce(t, h, a)
	must.Eq(t, 8, p.NumWorkers, must.Sprint(p.Reason))
	must.StrContains(t, p.Reason, "stepping back")

	running(j, 8, size, 8, size, 10*time.Minute)
	stepTimes(j, 88)
	p = planOnce(t, h, a)
	must.Eq(t, 8, p.NumWorkers)
	must.StrContains(t, p.Reason, "the search ended")
}

// TestAutoscale_Cap: a step that would take the job past c_total cores is
// not taken.
func TestAutoscale_Cap(t *testing.T) {
	h, j := setup(t)
	podCPU(j, 16, 20)
	a := NewAutoscale().(*Autoscale)
	must.NoError(t, a.SetConfig(map[string]string{"ps": "2", "step": "1"}))
	size := structs.TaskSize{}
	// 2·16 + 8·20 = 192 cores; a ninth worker would make 212 > 200.
	running(j, 2, size, 8, size, 5*time.Minute)
	stepTimes(j, 47)
	p := planOnce(t, h, a)
	must.Eq(t, 8, p.NumWorkers)
	must.StrContains(t, p.Reason, "more would pass its cap")
}

// TestStepOptimus_Steps: the stepped Optimus starts at its steps, and
// adds the step its speed model predicts gains more: servers when the
// servers are the bottleneck, workers otherwise.
func TestStepOptimus_Steps(t *testing.T) {
	h, j := setup(t)
	podCPU(j, 16, 3)
	a := NewStepOptimus().(*Autoscale)
	must.NoError(t, a.SetConfig(map[string]string{"ps_step": "2", "step": "4"}))
	must.True(t, a.SpeedModels())

	p := planOnce(t, h, a)
	must.Eq(t, structs.Shape{PS: 2, Workers: 4}, structs.Shape{PS: p.NumPS, Workers: p.NumWorkers})

	size := structs.TaskSize{}
	running(j, 2, size, 4, size, 5*time.Minute)
	// Optimus's asynchronous form (eq. 3): f(p, w) = w/(θ0 + θ1·w/p + θ2·w + θ3·p).
	// With a large θ1 the servers are the bottleneck.
	j.Speed = &model.Speed{Kind: model.SpeedAsync, Theta: [5]float64{0.05, 0.2, 0.001, 0.001}}
	p = planOnce(t, h, a)
	must.Eq(t, structs.Shape{PS: 4, Workers: 4}, structs.Shape{PS: p.NumPS, Workers: p.NumWorkers}, must.Sprint(p.Reason))
	j.Speed.Theta = [5]float64{0.05, 0.001, 0.001, 0.001}
	p = planOnce(t, h, a)
	must.Eq(t, structs.Shape{PS: 2, Workers: 8}, structs.Shape{PS: p.NumPS, Workers: p.NumWorkers}, must.Sprint(p.Reason))
}
