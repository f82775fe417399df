package sim

import (
	"context"
	"maps"
	"testing"

	"github.com/caravan-sched/caravan/structs"

	"github.com/shoenig/test/must"
)

const (
	t4Model   = "Tesla T4"
	rtxModel  = "GeForce RTX 2080 Ti"
	a100Model = "A100-SXM4-40GB"
	quadModel = "Quadro RTX 6000"
)

func siaTruth(t *testing.T, model string, batch float64) *PolluxTruth {
	t.Helper()
	pollux, err := PolluxProfiles()
	must.NoError(t, err)
	types, err := SiaProfiles()
	must.NoError(t, err)
	tr := NewPolluxTruth(pollux[model], batch)
	tr.Types = types[model]
	return tr
}

func TestSiaProfiles_Loaded(t *testing.T) {
	types, err := SiaProfiles()
	must.NoError(t, err)
	must.MapLen(t, len(PolluxModels), types)
	for name, tp := range types {
		must.MapLen(t, 4, tp, must.Sprintf("%s is measured on every catalog type", name))
	}
	// The largest measured per-GPU batch is what a type's memory fits;
	// deepspeech2 on rtx is held to 57, as the artifact sets it.
	must.Eq(t, 1024, types["cifar10"][t4Model].MaxLocalBatch)
	must.Eq(t, 4096, types["cifar10"][a100Model].MaxLocalBatch)
	must.Eq(t, 57, types["deepspeech2"][rtxModel].MaxLocalBatch)
	must.Eq(t, 320, types["deepspeech2"][a100Model].MaxLocalBatch)
	must.Eq(t, "rtx", types["deepspeech2"][rtxModel].Type)
}

// TestPolluxTruth_IterationOn checks step times against the rows of
// placements-<suffix>.csv.
func TestPolluxTruth_IterationOn(t *testing.T) {
	// cifar10 at a global batch of 516 on one node of 4 GPUs: 129 a GPU.
	tr := siaTruth(t, "cifar10", 516)
	cases := []struct {
		model string
		want  float64
	}{
		{t4Model, 0.11051218509674073},    // placements-aws.csv 4,129
		{rtxModel, 0.0939609706401825},    // placements-rtx.csv 129,…,4
		{a100Model, 0.035739436745643616}, // placements-dgx-ext.csv 129,…,4
	}
	for _, tc := range cases {
		it, m, ok := tr.IterationOn([]int{4}, []string{tc.model})
		must.True(t, ok)
		must.Eq(t, tc.model, m)
		must.Eq(t, tc.want, it.Seconds)
		must.Eq(t, 129, it.Atomic)
	}

	// Spanning t4 and rtx (placement 44, 129 a GPU): the slower type's.
	tr = siaTruth(t, "cifar10", 1032)
	it, m, ok := tr.IterationOn([]int{4, 4}, []string{t4Model, rtxModel})
	must.True(t, ok)
	must.Eq(t, t4Model, m)
	must.Eq(t, 0.23087265491485595, it.Seconds) // aws 44,129; rtx 44 takes 0.1196

	// A GPU outside the catalog runs at the Pollux traces' speed.
	it, m, ok = tr.IterationOn([]int{4, 4}, []string{DefaultGPUModel.Name, DefaultGPUModel.Name})
	must.True(t, ok)
	must.Eq(t, DefaultGPUModel.Name, m)
	must.Eq(t, tr.Profile.StepTime([]int{4, 4}, 129), it.Seconds)

	// The calibration slows every step.
	tr.Slowdown = 1.8
	it, _, _ = tr.IterationOn([]int{4, 4}, []string{t4Model, rtxModel})
	must.Eq(t, 0.23087265491485595*1.8, it.Seconds)
}

// TestPolluxTruth_TypeMemory checks that a per-GPU batch above what a
// type fits accumulates gradients there and not on a larger GPU.
func TestPolluxTruth_TypeMemory(t *testing.T) {
	tr := siaTruth(t, "deepspeech2", 320) // 80 a GPU on 4
	it, _, ok := tr.IterationOn([]int{4}, []string{rtxModel})
	must.True(t, ok)
	must.Eq(t, Iteration{Atomic: 40, Accum: 1, Batch: 320,
		// placements-rtx.csv 40,0.9121…,0.0416…,4: a step plus a pass
		Seconds: 0.9121202081441879 + (0.9121202081441879 - 0.04162219190597534)}, it)
	it, _, ok = tr.IterationOn([]int{4}, []string{a100Model})
	must.True(t, ok)
	must.Eq(t, 80, it.Atomic)
	must.Eq(t, 0, it.Accum)
	// Spanning both, the split fits the smaller GPU on both.
	it, _, ok = tr.IterationOn([]int{2, 2}, []string{rtxModel, a100Model})
	must.True(t, ok)
	must.Eq(t, 40, it.Atomic)
	must.Eq(t, 1, it.Accum)
}

// TestSim_CannotRunOnType places a job on a type its model lacks: it
// makes no progress, reports no samples and fails after OOMFailAfter;
// placed on a type it has, it trains and its samples name the type.
func TestSim_CannotRunOnType(t *testing.T) {
	tr := siaTruth(t, "cifar10", 128)
	tr.Types = maps.Clone(tr.Types)
	delete(tr.Types, quadModel)
	spec, err := ParseCluster("1xquad,1xt4")
	must.NoError(t, err)
	cfg := testConfig()
	spec.Apply(&cfg)
	s := New(cfg)
	must.NoError(t, s.Submit(gpuJob("a"), tr))
	must.NoError(t, s.Enact(plan("a", map[string]int{"node-00": 1})))
	s.Advance(OOMFailAfter.Seconds() - 1)
	must.Eq(t, 0, s.Jobs()[0].Step)
	smps, _ := s.Samples(0)
	must.SliceEmpty(t, smps)
	must.Eq(t, StateRunning, s.Jobs()[0].Status)
	must.Eq(t, OOMFailAfter.Seconds(), s.NextEvent())
	s.Advance(OOMFailAfter.Seconds())
	must.Eq(t, StateFailed, s.Jobs()[0].Status)
	must.True(t, s.Results()[0].Failed)

	s = New(cfg)
	must.NoError(t, s.Submit(gpuJob("b"), tr))
	must.NoError(t, s.Enact(plan("b", map[string]int{"node-00": 1})))
	must.NoError(t, s.Enact(plan("b", map[string]int{"node-01": 1}))) // moved in time
	s.Advance(60)
	smps, _ = s.Samples(0)
	must.SliceNotEmpty(t, smps)
	// placements-aws.csv 1,128 is not measured; 1,91 and 1,129 around it.
	want := tr.Types[t4Model].StepTime([]int{1}, 128)
	for _, smp := range smps {
		must.Eq(t, t4Model, smp.GPUType)
		must.Eq(t, want, smp.StepTimeS)
	}
	must.Greater(t, 0, s.Jobs()[0].Step)
}

// TestSim_SampleGPUType checks that samples of any truth name the model
// of the nodes they ran on.
func TestSim_SampleGPUType(t *testing.T) {
	spec, err := ParseCluster("1xt4,1xrtx")
	must.NoError(t, err)
	cfg := testConfig()
	spec.Apply(&cfg)
	s := New(cfg)
	must.NoError(t, s.Submit(gpuJob("a"), constTruth{1e6}))
	must.NoError(t, s.Enact(plan("a", map[string]int{"node-01": 2})))
	s.Advance(30)
	smps, _ := s.Samples(0)
	must.SliceNotEmpty(t, smps)
	for _, smp := range smps {
		must.Eq(t, rtxModel, smp.GPUType)
	}
}

// TestSim_ProfileTypes checks the samples of Sia's per-type bootstrap
// against placements-<suffix>.csv's one-GPU rows, and what the job pays.
func TestSim_ProfileTypes(t *testing.T) {
	spec, err := ParseCluster("1xt4,1xa100,1x4")
	must.NoError(t, err)
	cfg := testConfig()
	spec.Apply(&cfg)
	s := New(cfg)
	tr := siaTruth(t, "yolov3", 64)
	must.NoError(t, s.Submit(gpuJob("a"), tr))
	must.NoError(t, s.ProfileTypes("a"))
	smps, _ := s.Samples(0)
	// t4: 4 6 8 11 16; a100: 4 6 8 11 16 23 32; the untyped V100 node
	// (Pollux traces, yolov3 held to 8): 4 6 8.
	must.SliceLen(t, 5+7+3, smps)
	first := smps[0]
	must.Eq(t, t4Model, first.GPUType)
	must.Eq(t, 4, first.LocalBatchSize)
	must.Eq(t, 4, first.BatchSize)
	must.Eq(t, 1, first.NumWorkers)
	want, _ := tr.Types[t4Model].StepSync([]int{1}, 4)
	must.Eq(t, want, first.StepTimeS)
	must.Eq(t, a100Model, smps[5].GPUType)
	must.Eq(t, 32, smps[11].LocalBatchSize)
	must.Eq(t, DefaultGPUModel.Name, smps[12].GPUType)
	must.Eq(t, 8, smps[14].LocalBatchSize)
	cost := 0.0
	for _, smp := range smps {
		cost += DefaultTypeProfileSteps * smp.StepTimeS
	}
	must.Eq(t, cost, s.jobs["a"].profiling)
	// The job pays it before it starts.
	must.NoError(t, s.Enact(plan("a", map[string]int{"node-00": 1})))
	must.Eq(t, cfg.RestartPenalty.Seconds()+cost, s.jobs["a"].restartTo)

	// A type the job cannot run on is not measured.
	tr = siaTruth(t, "yolov3", 64)
	tr.Types = maps.Clone(tr.Types)
	delete(tr.Types, a100Model)
	must.NoError(t, s.Submit(gpuJob("b"), tr))
	must.NoError(t, s.ProfileTypes("b"))
	smps, _ = s.Samples(15)
	must.SliceLen(t, 5+3, smps)
	must.ErrorContains(t, s.ProfileTypes("c"), `unknown job "c"`)
}

func TestProfile_ProfileBatches(t *testing.T) {
	types, err := SiaProfiles()
	must.NoError(t, err)
	// deepspeech2 on rtx: measured 10 … 80 on one GPU, 57 fits.
	must.Eq(t, []float64{10, 14, 20, 28, 40, 57}, types["deepspeech2"][rtxModel].ProfileBatches())
	// ncf: 21 measured, ten of them spread from the first to the last.
	must.Eq(t, []float64{32, 64, 129, 363, 725, 1450, 2901, 8207, 16413, 32768}, types["ncf"][t4Model].ProfileBatches())
}

// TestDriver_ProfileTypes checks that a request before the job's first
// plan is carried out when the plan submits it.
func TestDriver_ProfileTypes(t *testing.T) {
	spec, err := ParseCluster("1xrtx")
	must.NoError(t, err)
	cfg := testConfig()
	spec.Apply(&cfg)
	pollux, err := PolluxProfiles()
	must.NoError(t, err)
	d := NewDriver(DriverConfig{Cluster: cfg, Profiles: pollux, Logger: testLogger(t)})
	ctx := context.Background()
	job := gpuJob("a")
	job.Meta = map[string]string{"application": "yolov3"}
	must.NoError(t, d.ProfileTypes(ctx, job))
	smps, _, err := d.Samples(ctx, 0)
	must.NoError(t, err)
	must.SliceEmpty(t, smps)
	_, err = d.Enact(ctx, plan("a", map[string]int{"node-00": 1}), []*structs.Job{job})
	must.NoError(t, err)
	smps, _, err = d.Samples(ctx, 0)
	must.NoError(t, err)
	must.SliceLen(t, 3, smps, must.Sprint("yolov3 on rtx: 4, 6 and 8 a GPU"))
	for _, smp := range smps {
		must.Eq(t, rtxModel, smp.GPUType)
	}
	// The driver's truth is typed: it steps at rtx's speed.
	must.NotNil(t, d.sim.jobs["a"].truth.(*PolluxTruth).Types)
}
