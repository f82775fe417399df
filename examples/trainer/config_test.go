package main

import (
	"io"
	"maps"
	"syscall"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func baseEnv() map[string]string {
	return map[string]string{
		envJobID: "j", envRole: "worker", envRank: "1", envNumWorkers: "3", envNumPS: "2",
		envCheckpointDir: "/ckpt/default/j",
	}
}

func TestParseConfigDefaults(t *testing.T) {
	c, err := parseConfig(nil, envOf(baseEnv()), io.Discard)
	must.NoError(t, err)
	must.Eq(t, "default", c.Namespace)
	must.Eq(t, structs.ModeSync, c.Mode)
	must.Eq(t, "0", c.Generation)
	must.Eq(t, 64, c.GlobalBatch)
	must.Eq(t, 21, c.LocalBatch, must.Sprint("global batch split over 3 workers"))
	must.Eq(t, 63, c.samplesPerStep())
	must.Eq(t, 50000/63, c.StepsPerEpoch)
	must.Eq(t, structs.DefaultThreshold, c.Threshold)
	must.Eq(t, structs.DefaultPatience, c.Patience)
	must.Eq(t, 0, c.MaxEpochs)
	must.Eq(t, syscall.SIGUSR1, c.Signal)
	must.False(t, c.Resume)
	must.False(t, c.chief())
	must.Eq(t, 200*time.Microsecond, c.SampleCost)
}

func TestParseConfigFromCaravan(t *testing.T) {
	env := baseEnv()
	for k, v := range map[string]string{
		envRank: "0", envResume: "1", envGeneration: "4", envNamespace: "ml", envMode: "async",
		envGlobalBatch: "256", envLocalBatch: "256", envStepsPerEpoch: "100",
		envThreshold: "0.05", envPatience: "4", envMaxEpochs: "9", envCheckpointSignal: "SIGUSR2",
		envCollector: "http://127.0.0.1:4646,127.0.0.1:4656",
	} {
		env[k] = v
	}
	c, err := parseConfig([]string{"-lr", "0.1", "-features", "64", "-max-steps", "1000", "-bind", "0.0.0.0:7000"}, envOf(env), io.Discard)
	must.NoError(t, err)
	must.True(t, c.chief())
	must.True(t, c.Resume)
	must.Eq(t, "4", c.Generation)
	must.Eq(t, "ml", c.Namespace)
	must.Eq(t, structs.ModeAsync, c.Mode)
	must.Eq(t, 256, c.samplesPerStep(), must.Sprint("an async step is one worker's batch"))
	must.Eq(t, 100, c.StepsPerEpoch)
	must.Eq(t, 0.05, c.Threshold)
	must.Eq(t, 4, c.Patience)
	must.Eq(t, 9, c.MaxEpochs)
	must.Eq(t, syscall.SIGUSR2, c.Signal)
	must.Eq(t, 0.1, c.LR)
	must.Eq(t, 64, c.Features)
	must.Eq(t, 1000, c.MaxSteps)
	must.Eq(t, "0.0.0.0:7000", c.Bind)
}

func TestParseConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		// env is laid over baseEnv; nil means an empty environment.
		env   map[string]string
		args  []string
		wants []string
	}{
		{"nothing set", nil, nil, []string{
			envJobID + " is not set", envRole + " is not set", envRank + " is not set",
			envNumWorkers + " is not set", envNumPS + " is not set", envCheckpointDir + " is not set",
		}},
		{"bad values", map[string]string{
			envRole: "chief", envRank: "x", envMode: "eager", envResume: "yes", envThreshold: "2",
			envCheckpointSignal: "SIGKILL", envGeneration: "a/b",
		}, nil, []string{
			`CARAVAN_ROLE="chief"`, `CARAVAN_RANK="x": not an integer`, `CARAVAN_MODE="eager"`,
			`CARAVAN_RESUME="yes"`, "CARAVAN_CONVERGENCE_THRESHOLD=2", `"SIGKILL" cannot be a checkpoint signal`,
			`CARAVAN_GENERATION="a/b"`,
		}},
		{"rank out of range", map[string]string{envRank: "3"}, nil, []string{"rank must be below CARAVAN_NUM_WORKERS=3"}},
		{"ps rank out of range", map[string]string{envRole: "ps", envRank: "2"}, nil, []string{"rank must be below CARAVAN_NUM_PS=2"}},
		{"bad checkpoint durations", map[string]string{envCheckpointInterval: "0s", envCheckpointTimeout: "soon"}, nil,
			[]string{"CARAVAN_CHECKPOINT_INTERVAL=0s: must be positive", `CARAVAN_CHECKPOINT_TIMEOUT="soon": not a duration`}},
		{"negative checkpoint interval", map[string]string{envCheckpointInterval: "-1m", envCheckpointTimeout: "0s"}, nil,
			[]string{"CARAVAN_CHECKPOINT_INTERVAL=-1m0s: must be positive", "CARAVAN_CHECKPOINT_TIMEOUT=0s: must be positive"}},
		{"stop signal as checkpoint signal", map[string]string{envCheckpointSignal: "SIGINT"}, nil, []string{"stops the trainer"}},
		{"bad flags", map[string]string{}, []string{"-lr", "0", "-model", "resnet", "-report-every", "0"}, []string{"-lr=0", `-model="resnet"`, "-report-every=0"}},
		{"co-location knobs out of range", map[string]string{}, []string{"-cpu-work", "-1", "-comm-bytes", "100000000", "-link-rate", "-5"},
			[]string{"-cpu-work=-1", "-comm-bytes=100000000", "-link-rate=-5"}},
		{"unknown flag", map[string]string{}, []string{"-gpus", "2"}, []string{"flag provided but not defined: -gpus"}},
		{"more ps than parameters", map[string]string{envRole: "ps", envRank: "0"}, []string{"-features", "1"}, []string{"more parameter servers than -features=1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			if tc.env != nil {
				env = baseEnv()
				maps.Copy(env, tc.env)
			}
			_, err := parseConfig(tc.args, envOf(env), io.Discard)
			must.ErrorIs(t, err, errUsage)
			for _, want := range tc.wants {
				must.ErrorContains(t, err, want)
			}
		})
	}
}

func TestCheckpointSignal(t *testing.T) {
	for name, want := range map[string]syscall.Signal{"SIGUSR1": syscall.SIGUSR1, "usr2": syscall.SIGUSR2, " SIGHUP ": syscall.SIGHUP} {
		got, err := checkpointSignal(name)
		must.NoError(t, err)
		must.Eq(t, want, got)
	}
	for _, name := range []string{"SIGTERM", "SIGURG", "SIGNOPE", ""} {
		_, err := checkpointSignal(name)
		must.Error(t, err, must.Sprintf("%q", name))
	}
}
