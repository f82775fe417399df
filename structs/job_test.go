package structs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/shoenig/test/must"
)

func TestJob_Canonicalize(t *testing.T) {
	j := &Job{
		ID:       "lr",
		Training: &Training{GlobalBatchSize: 64, StepsPerEpoch: 10},
		Elastic:  &Elastic{Workers: Bounds{Max: 8}},
		Worker: &Role{Driver: "exec", Resources: &Resources{
			Devices: []*RequestedDevice{{Name: "gpu", Constraints: []*Constraint{{LTarget: "${device.model}", Operand: "is", RTarget: "x"}}}},
		}},
		Affinities: []*Affinity{{LTarget: "${node.class}", RTarget: "gpu"}},
	}
	j.Canonicalize()

	must.Eq(t, "lr", j.Name)
	must.Eq(t, DefaultNamespace, j.Namespace)
	must.Eq(t, []string{"*"}, j.Datacenters)
	must.Eq(t, DefaultPriority, j.Priority)
	must.Eq(t, DefaultWeight, j.Weight)
	must.Eq(t, ArchitecturePS, j.Training.Architecture)
	must.Eq(t, ModeSync, j.Training.Mode)
	must.Eq(t, &Convergence{Threshold: DefaultThreshold, Patience: DefaultPatience}, j.Training.Convergence)
	must.Eq(t, Bounds{Min: 1, Max: 8}, j.Elastic.Workers)
	must.Eq(t, &Bounds{Min: 1, Max: 8}, j.Elastic.ParameterServers)
	must.Eq(t, &Checkpoint{Signal: "SIGUSR1", Timeout: 2 * time.Minute}, j.Elastic.Checkpoint)
	must.Eq(t, RoleWorker, j.Worker.Name)
	must.Eq(t, DefaultCPU, j.Worker.Resources.CPU)
	must.Eq(t, DefaultMemoryMB, j.Worker.Resources.MemoryMB)
	must.Eq(t, 1, j.Worker.Resources.Devices[0].Count)
	must.Eq(t, OpEqual, j.Worker.Resources.Devices[0].Constraints[0].Operand)
	must.Eq(t, &Affinity{LTarget: "${node.class}", RTarget: "gpu", Operand: OpEqual, Weight: DefaultAffinityWeight}, j.Affinities[0])
	must.NoError(t, j.Validate())

	again := *j
	again.Canonicalize()
	must.Eq(t, j, &again)
}

func TestJob_Canonicalize_AllReduceHasNoPS(t *testing.T) {
	j := &Job{ID: "bert", Training: &Training{Architecture: ArchitectureAllReduce}, Elastic: &Elastic{}}
	j.Canonicalize()
	must.Nil(t, j.Elastic.ParameterServers)
}

// TestJob_Validate checks that each mistake is reported at the jobspec path
// the parser maps back to a line, with a message naming the fix.
func TestJob_Validate(t *testing.T) {
	adaptive := MockJob()
	adaptive.Training.GlobalBatchSize = 0
	adaptive.Training.BatchSize = &BatchSize{Min: 100, Max: 4096}
	adaptive.Canonicalize()
	must.NoError(t, adaptive.Validate(), must.Sprint("an adaptive batch need not divide over the workers"))
	must.Eq(t, 100, adaptive.Training.GlobalBatchSize, must.Sprint("global_batch_size defaults to the minimum"))
	lo, hi := adaptive.Training.BatchSize.LocalBounds()
	must.Eq(t, [2]int{1, 4096}, [2]int{lo, hi})

	cases := []struct {
		name   string
		mutate func(*Job)
		path   string
		msg    string
	}{
		{"missing id", func(j *Job) { j.ID = "" }, "id", "is required"},
		{"bad id", func(j *Job) { j.ID = "a b" }, "id", "must start with a letter or digit"},
		{"priority", func(j *Job) { j.Priority = 101 }, "priority", "between 1 and 100"},
		{"weight", func(j *Job) { j.Weight = -1 }, "weight", "positive finite"},
		{"missing training", func(j *Job) { j.Training = nil }, "training", "is required"},
		{"architecture", func(j *Job) { j.Training.Architecture = "ring" }, "training.architecture", `"ring" is not an architecture`},
		{"mode", func(j *Job) { j.Training.Mode = "semi" }, "training.mode", `"semi" is not a training mode`},
		{"async allreduce", func(j *Job) {
			j.Training.Architecture, j.Training.Mode, j.Elastic.ParameterServers = ArchitectureAllReduce, ModeAsync, nil
		}, "training.mode", "all-reduce training is synchronous"},
		{"missing batch", func(j *Job) { j.Training.GlobalBatchSize = 0 }, "training.global_batch_size", "is required"},
		{"indivisible batch", func(j *Job) { j.Training.GlobalBatchSize = 500 }, "training.global_batch_size",
			"500 is not divisible by elastic.workers.max (32); in sync mode each worker gets global_batch_size / workers samples, so set global_batch_size to a multiple of 32 such as 480 or 512, or lower elastic.workers.max to 25"},
		{"batch bounds", func(j *Job) { j.Training.BatchSize = &BatchSize{Min: 256, Max: 128} }, "training.batch_size.min", "min (256) is greater than max (128)"},
		{"batch outside bounds", func(j *Job) { j.Training.BatchSize = &BatchSize{Min: 1024, Max: 4096} }, "training.batch_size.min",
			"global_batch_size (512) is outside [1024, 4096]"},
		{"local bounds", func(j *Job) { j.Training.BatchSize = &BatchSize{Min: 64, Max: 4096, MinLocal: 64, MaxLocal: 32} },
			"training.batch_size.min_local", "64 is greater than max_local (32)"},
		{"negative local", func(j *Job) { j.Training.BatchSize = &BatchSize{Min: 64, Max: 4096, MaxLocal: -1} },
			"training.batch_size.max_local", "must not be negative"},
		{"adaptive async", func(j *Job) { j.Training.Mode, j.Training.BatchSize = ModeAsync, &BatchSize{Min: 64, Max: 4096} },
			"training.batch_size", "need synchronous training"},
		{"threshold", func(j *Job) { j.Training.Convergence.Threshold = 2 }, "training.convergence.threshold", "between 0 and 1"},
		{"patience", func(j *Job) { j.Training.Convergence.Patience = -1 }, "training.convergence.patience", "at least 1"},
		{"missing elastic", func(j *Job) { j.Elastic = nil }, "elastic", "is required"},
		{"min over max", func(j *Job) { j.Elastic.Workers = Bounds{Min: 8, Max: 4}; j.Training.GlobalBatchSize = 64 },
			"elastic.workers.min", "min (8) is greater than max (4)"},
		{"ps min over max", func(j *Job) { j.Elastic.ParameterServers = &Bounds{Min: 3, Max: 2} },
			"elastic.parameter_servers.min", "min (3) is greater than max (2)"},
		{"allreduce with ps bounds", func(j *Job) { j.Training.Architecture = ArchitectureAllReduce },
			"elastic.parameter_servers", "an allreduce job has no parameter servers"},
		{"allreduce with ps role", func(j *Job) {
			j.Training.Architecture, j.Elastic.ParameterServers = ArchitectureAllReduce, nil
			j.ParameterServer = &Role{Driver: "docker", Resources: &Resources{CPU: 100, MemoryMB: 100}}
		}, "parameter_server", "an allreduce job has no parameter servers"},
		{"signal", func(j *Job) { j.Elastic.Checkpoint.Signal = "USR1" }, "elastic.checkpoint.signal", `"USR1" is not a signal name`},
		{"timeout", func(j *Job) { j.Elastic.Checkpoint.Timeout = -time.Second }, "elastic.checkpoint.timeout", "must be positive"},
		{"interval", func(j *Job) { j.Elastic.Checkpoint.Interval = -time.Minute }, "elastic.checkpoint.interval", "must be positive"},
		{"missing worker", func(j *Job) { j.Worker = nil }, "worker", "is required"},
		{"missing driver", func(j *Job) { j.Worker.Driver = "" }, "worker.driver", "is required"},
		{"memory", func(j *Job) { j.Worker.Resources.MemoryMB = 5 }, "worker.resources.memory", "below Nomad's minimum"},
		{"device name", func(j *Job) { j.Worker.Resources.Devices[0].Name = "nvidia//gpu" },
			"worker.resources.device[0].name", `device name "nvidia//gpu" has an empty part`},
		{"device count", func(j *Job) { j.Worker.Resources.Devices[0].Count = -2 }, "worker.resources.device[0].count", "at least 1"},
		{"device operator", func(j *Job) { j.Worker.Resources.Devices[0].Constraints[0].Operand = "~" },
			"worker.resources.device[0].constraint[0].operator", `"~" is not a constraint operator`},
		{"device distinct_hosts", func(j *Job) { j.Worker.Resources.Devices[0].Constraints[0].Operand = OpDistinctHosts },
			"worker.resources.device[0].constraint[0].operator", "does not apply to devices"},
		{"constraint value", func(j *Job) { j.Worker.Constraints = []*Constraint{{LTarget: "${attr.kernel.name}", Operand: OpEqual}} },
			"worker.constraint[0].value", "is required"},
		{"regexp", func(j *Job) {
			j.Constraints = []*Constraint{{LTarget: "${node.class}", Operand: OpRegexp, RTarget: "("}}
		},
			"constraint[0].value", "invalid regular expression"},
		{"workers beyond the maximum", func(j *Job) {
			j.Elastic.Workers.Max, j.Elastic.ParameterServers.Max = 9223372036854775782, 4
		}, "elastic.workers.max", "9223372036854775782 is more than the maximum of 16384"},
		// The issue-26 request counted down from 2^63 in validateBatchSplit;
		// at the maxima it counts down 16,384 times at most.
		{"indivisible batch at the maxima", func(j *Job) {
			j.Training.GlobalBatchSize, j.Elastic.Workers.Max, j.Elastic.ParameterServers.Max = 16777213, 16384, 4
		}, "training.global_batch_size", "16777213 is not divisible by elastic.workers.max (16384)"},
		{"batch beyond the maximum", func(j *Job) { j.Training.GlobalBatchSize = 9223372036854775783 },
			"training.global_batch_size", "more than the maximum of 16777216"},
		{"steps per epoch", func(j *Job) { j.Training.StepsPerEpoch = 1 << 40 }, "training.steps_per_epoch", "more than the maximum of 1073741824"},
		{"max epochs", func(j *Job) { j.Training.Convergence.MaxEpochs = 1 << 40 }, "training.convergence.max_epochs", "more than the maximum of 100000"},
		{"local batch", func(j *Job) { j.Training.BatchSize = &BatchSize{Min: 64, Max: 4096, MaxLocal: 1 << 40} },
			"training.batch_size.max_local", "more than the maximum of 16777216"},
		{"speed priors", func(j *Job) {
			for range MaxSpeeds + 1 {
				j.Training.Speeds = append(j.Training.Speeds, &SpeedPrior{PS: 1, Workers: 1, StepsPerSecond: 1})
			}
		}, "training.speed", "257 speed priors are more than the maximum of 256"},
		{"cpu", func(j *Job) { j.Worker.Resources.CPU = 1 << 40 }, "worker.resources.cpu", "more than the maximum of 10000000"},
		{"device count beyond the maximum", func(j *Job) { j.Worker.Resources.Devices[0].Count = 1 << 40 },
			"worker.resources.device[0].count", "more than the maximum of 1024"},
		{"checkpoint timeout", func(j *Job) { j.Elastic.Checkpoint.Timeout = 1000 * time.Hour }, "elastic.checkpoint.timeout", "more than the maximum of 24h0m0s"},
		{"checkpoint interval", func(j *Job) { j.Elastic.Checkpoint.Interval = 1000 * time.Hour }, "elastic.checkpoint.interval", "more than the maximum of 168h0m0s"},
		{"affinity weight", func(j *Job) {
			j.Worker.Affinities = []*Affinity{{LTarget: "${node.class}", Operand: OpEqual, RTarget: "a", Weight: 200}}
		}, "worker.affinity[0].weight", "between -100 and 100"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := MockJob()
			tc.mutate(j)
			errs := FieldErrors(j.Validate())
			must.Len(t, 1, errs, must.Sprintf("errors: %v", errs))
			must.Eq(t, tc.path, errs[0].Path)
			must.StrContains(t, errs[0].Err.Error(), tc.msg)
		})
	}
}

func TestJob_Validate_ReportsEverything(t *testing.T) {
	j := MockJob()
	j.Priority = 0
	j.Training.Mode = "x"
	j.Worker.Driver = ""
	errs := FieldErrors(j.Validate())
	var paths []string
	for _, e := range errs {
		paths = append(paths, e.Path)
	}
	sort.Strings(paths)
	must.Eq(t, []string{"priority", "training.mode", "worker.driver"}, paths)
	must.True(t, errors.Is(j.Validate(), ErrMissing))
}

func TestMockJob_Valid(t *testing.T) {
	must.NoError(t, MockJob().Validate())
}

// TestJob_Encoding checks that a job survives the two encodings Caravan uses:
// JSON on the HTTP API and msgpack in the Raft log.
func TestJob_Encoding(t *testing.T) {
	j := MockJob()

	buf, err := json.Marshal(j)
	must.NoError(t, err)
	var fromJSON Job
	must.NoError(t, json.Unmarshal(buf, &fromJSON))
	// JSON numbers decode as float64 in untyped config maps; everything else
	// round-trips exactly.
	must.Eq(t, j.Worker.Config["image"], fromJSON.Worker.Config["image"])
	fromJSON.Worker.Config, j.Worker.Config = nil, nil
	must.Eq(t, j, &fromJSON)

	j = MockJob()
	var mp bytes.Buffer
	must.NoError(t, codec.NewEncoder(&mp, MsgpackHandle).Encode(j))
	var fromMsgpack Job
	must.NoError(t, codec.NewDecoder(&mp, MsgpackHandle).Decode(&fromMsgpack))
	must.Eq(t, j, &fromMsgpack)
}

func TestJobValidate_NamesAndMaps(t *testing.T) {
	big := map[string]string{}
	for i := range MaxMapKeys + 1 {
		big[fmt.Sprintf("k%d", i)] = "v"
	}
	cases := []struct {
		name string
		edit func(j *Job)
		want string
	}{
		{"namespace dot dot", func(j *Job) { j.Namespace = ".." }, "namespace"},
		{"namespace with a slash", func(j *Job) { j.Namespace = "a/b" }, "namespace"},
		{"namespace too long", func(j *Job) { j.Namespace = strings.Repeat("a", 129) }, "namespace"},
		{"id with a slash", func(j *Job) { j.ID = "a/b" }, "id"},
		{"id with NUL", func(j *Job) { j.ID = "a\x00b" }, "id"},
		{"id dot dot", func(j *Job) { j.ID = ".." }, "id"},
		{"too many meta keys", func(j *Job) { j.Meta = big }, "meta: 257 keys"},
		{"long meta value", func(j *Job) { j.Meta = map[string]string{"a": strings.Repeat("x", MaxMapValueLength+1)} }, "meta.a"},
		{"long env key", func(j *Job) { j.Worker.Env = map[string]string{strings.Repeat("K", MaxMapKeyLength+1): "v"} }, "worker.env"},
		{"empty env key", func(j *Job) { j.Worker.Env = map[string]string{"": "v"} }, "worker.env"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := MockJob()
			tc.edit(j)
			j.Canonicalize()
			err := j.Validate()
			must.Error(t, err)
			must.StrContains(t, err.Error(), tc.want)
		})
	}
}
