package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

// recorder keeps what a worker reports.
type recorder struct{ samples []structs.Sample }

func (r *recorder) Report(s structs.Sample)   { r.samples = append(r.samples, s) }
func (*recorder) Flush(context.Context) error { return nil }
func (*recorder) Close(context.Context) error { return nil }

func TestParseConfigGPU(t *testing.T) {
	env := baseEnv()
	env[envGPUModel], env[envGPUMemory], env[envGPUSpeed] = "Tesla T4", "1000", "0.5"
	env[envProfileBatches], env[envProfileSteps] = "4, 8,16", "2"
	c, err := parseConfig([]string{"-sample-memory-mib", "100", "-sample-cost", "1ms"}, envOf(env), io.Discard)
	must.NoError(t, err)
	must.Eq(t, gpu{Model: "Tesla T4", MemoryMiB: 1000, Speed: 0.5}, c.GPU)
	must.Eq(t, []int{4, 8, 16}, c.ProfileBatches)
	must.Eq(t, 2, c.ProfileSteps)
	must.Eq(t, 20*time.Millisecond, c.computeTime(10), must.Sprint("10 examples at 1ms each, at half speed"))
	must.NoError(t, c.fits(10))
	must.EqError(t, c.fits(11), "out of GPU memory: a local batch of 11 needs 1100 MiB at -sample-memory-mib=100, and the Tesla T4 has 1000 MiB")

	for name, tc := range map[string]struct{ env map[string]string }{
		"descending":  {map[string]string{envProfileBatches: "8,4"}},
		"not a batch": {map[string]string{envProfileBatches: "8,x"}},
		"zero speed":  {map[string]string{envGPUSpeed: "0"}},
		"zero steps":  {map[string]string{envProfileSteps: "0"}},
	} {
		t.Run(name, func(t *testing.T) {
			env := baseEnv()
			for k, v := range tc.env {
				env[k] = v
			}
			_, err := parseConfig(nil, envOf(env), io.Discard)
			must.ErrorIs(t, err, errUsage)
		})
	}
}

// A profiling run measures each batch the GPU holds, in order, and stops
// at the first it does not: Profile samples of one worker on the GPU's
// model, each at least the batch's simulated time.
func TestRunProfile(t *testing.T) {
	env := baseEnv()
	env[envRank], env[envNumWorkers], env[envNumPS] = "0", "1", "1"
	env[envGPUModel], env[envGPUMemory], env[envGPUSpeed] = "Tesla T4", "1000", "2"
	env[envProfileBatches], env[envProfileSteps] = "4,8,16,32", "2"
	cfg, err := parseConfig([]string{"-sample-memory-mib", "100", "-sample-cost", "1ms", "-features", "8"}, envOf(env), io.Discard)
	must.NoError(t, err)
	rec := &recorder{}
	must.NoError(t, runProfile(t.Context(), cfg, hclog.NewNullLogger(), rec))

	var batches []int64
	for _, s := range rec.samples {
		batches = append(batches, s.LocalBatchSize)
		must.True(t, s.Profile)
		must.Eq(t, "Tesla T4", s.GPUType)
		must.Eq(t, 1, s.NumWorkers)
		must.Eq(t, s.LocalBatchSize, s.BatchSize)
		must.Eq(t, int64(0), s.Step)
		must.Eq(t, structs.RoleWorker, s.Role)
		must.GreaterEq(t, cfg.computeTime(int(s.LocalBatchSize)).Seconds(), s.StepTimeS)
		must.NoError(t, s.Validate())
	}
	must.Eq(t, []int64{4, 4, 8, 8}, batches, must.Sprint("two steps at each batch up to 10 examples (1000 MiB at 100 MiB each)"))
}
