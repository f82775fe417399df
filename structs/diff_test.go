package structs

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/shoenig/test/must"
)

func TestJob_SpecChanged(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(*Job)
		changed bool
	}{
		{"same spec", func(*Job) {}, false},
		{"server fields only", func(j *Job) {
			j.Status, j.StatusDescription, j.Version = JobStatusRunning, "placed", 7
			j.SubmitTime, j.CreateIndex, j.ModifyIndex = 99, 3, 12
		}, false},
		{"config number of another type", func(j *Job) { j.Worker.Config["port"] = float64(8080) }, false},
		{"nil and empty maps", func(j *Job) { j.Worker.Meta = map[string]string{} }, false},
		{"nil and empty lists", func(j *Job) { j.Constraints = []*Constraint{} }, false},
		{"priority", func(j *Job) { j.Priority = 70 }, true},
		{"weight", func(j *Job) { j.Weight = 2 }, true},
		{"name", func(j *Job) { j.Name = "other" }, true},
		{"datacenters", func(j *Job) { j.Datacenters = append(j.Datacenters, "dc2") }, true},
		{"bounds", func(j *Job) { j.Elastic.Workers.Max = 16 }, true},
		{"checkpoint timeout", func(j *Job) { j.Elastic.Checkpoint.Timeout = time.Minute }, true},
		{"training", func(j *Job) { j.Training.Convergence.MaxEpochs = 0 }, true},
		{"speed prior", func(j *Job) { j.Training.Speeds = []*SpeedPrior{{PS: 1, Workers: 2, StepsPerSecond: 3}} }, true},
		{"resources", func(j *Job) { j.Worker.Resources.MemoryMB = 8192 }, true},
		{"device", func(j *Job) { j.Worker.Resources.Devices[0].Count = 2 }, true},
		{"constraint", func(j *Job) {
			j.Constraints = []*Constraint{{LTarget: "${node.class}", Operand: OpEqual, RTarget: "gpu"}}
		}, true},
		{"env", func(j *Job) { delete(j.Worker.Env, "NCCL_DEBUG") }, true},
		{"config", func(j *Job) { j.Worker.Config["port"] = int64(9090) }, true},
		{"ps role", func(j *Job) { j.ParameterServer = j.Worker.Copy() }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := MockJob()
			old.Worker.Config["port"] = int64(8080)
			next := old.Copy()
			tc.mutate(next)
			must.Eq(t, tc.changed, old.SpecChanged(next))
			must.Eq(t, tc.changed, next.SpecChanged(old), must.Sprint("symmetric"))
		})
	}
	must.False(t, (*Job)(nil).SpecChanged(nil))
	must.True(t, (*Job)(nil).SpecChanged(MockJob()))
	must.True(t, MockJob().SpecChanged(nil))
}

// TestJob_SpecChanged_Encodings checks that a job is unchanged after the
// trips it makes to the state store: JSON on the HTTP API, msgpack in the
// Raft log, which give its driver config's numbers other Go types.
func TestJob_SpecChanged_Encodings(t *testing.T) {
	j := MockJob()
	j.Worker.Config["args"] = []any{"-features", int64(64)}
	j.Worker.Config["mounts"] = []any{map[string]any{"source": "/data", "readonly": true}}

	buf, err := json.Marshal(j)
	must.NoError(t, err)
	var fromJSON Job
	must.NoError(t, json.Unmarshal(buf, &fromJSON))
	must.False(t, j.SpecChanged(&fromJSON), must.Sprint(j.Diff(&fromJSON).Fields))

	var mp bytes.Buffer
	must.NoError(t, codec.NewEncoder(&mp, MsgpackHandle).Encode(&fromJSON))
	var fromMsgpack Job
	must.NoError(t, codec.NewDecoder(&mp, MsgpackHandle).Decode(&fromMsgpack))
	must.False(t, fromJSON.SpecChanged(&fromMsgpack))

	// A jobspec parsed from HCL has int64 numbers; msgpack gives them back
	// as another integer type.
	mp.Reset()
	must.NoError(t, codec.NewEncoder(&mp, MsgpackHandle).Encode(j))
	var fromHCL Job
	must.NoError(t, codec.NewDecoder(&mp, MsgpackHandle).Decode(&fromHCL))
	must.False(t, j.SpecChanged(&fromHCL))
	must.False(t, fromJSON.SpecChanged(&fromHCL))
}

func TestJob_Diff(t *testing.T) {
	old := MockJob()
	old.Meta["owner"] = "ada"
	next := old.Copy()
	next.Priority = 70
	next.Elastic.Workers.Max = 16
	next.Elastic.Checkpoint.Timeout = 30 * time.Second
	next.Worker.Resources.Devices[0].Constraints[0].RTarget = "32 GiB"
	next.Worker.Env["DEBUG"] = "1"
	next.Worker.Config["args"] = []any{"python", "train.py", "--fast"}
	delete(next.Meta, "owner")
	next.Datacenters = []string{"dc1", "dc2"}

	d := old.Diff(next)
	must.Eq(t, DiffTypeEdited, d.Type)
	must.Eq(t, "resnet50", d.ID)
	must.Eq(t, []*FieldDiff{
		{Type: DiffTypeEdited, Path: "datacenters", Old: `["dc1"]`, New: `["dc1", "dc2"]`},
		{Type: DiffTypeEdited, Path: "priority", Old: "50", New: "70"},
		{Type: DiffTypeDeleted, Path: "meta.owner", Old: `"ada"`},
		{Type: DiffTypeEdited, Path: "elastic.workers.max", Old: "32", New: "16"},
		{Type: DiffTypeEdited, Path: "elastic.checkpoint.timeout", Old: "2m0s", New: "30s"},
		{Type: DiffTypeEdited, Path: "worker.config.args", Old: `["python", "train.py"]`, New: `["python", "train.py", "--fast"]`},
		{Type: DiffTypeAdded, Path: "worker.env.DEBUG", New: `"1"`},
		{Type: DiffTypeEdited, Path: "worker.resources.device[0].constraint[0].value", Old: `"16 GiB"`, New: `"32 GiB"`},
	}, d.Fields)
	must.Eq(t, "elastic.workers.max 32 → 16", d.Fields[3].String())
	must.Eq(t, `+worker.env.DEBUG "1"`, d.Fields[6].String())
	must.Eq(t, "-meta.owner", d.Fields[2].String())

	must.Eq(t, &JobDiff{Type: DiffTypeNone, ID: "resnet50"}, old.Diff(old.Copy()))

	added := (*Job)(nil).Diff(old)
	must.Eq(t, DiffTypeAdded, added.Type)
	must.Eq(t, "resnet50", added.ID)
	must.SliceContains(t, added.Fields, &FieldDiff{Type: DiffTypeAdded, Path: "worker.resources.memory", New: "16384"})
	for _, f := range added.Fields {
		must.Eq(t, DiffTypeAdded, f.Type)
		must.NotEq(t, "status", f.Path, must.Sprint("server fields are not part of the spec"))
	}
}

func TestSpecName(t *testing.T) {
	for field, want := range map[string]string{
		"ID": "id", "NodePool": "node_pool", "CPU": "cpu", "PS": "ps", "MemoryMB": "memory",
		"GlobalBatchSize": "global_batch_size", "ParameterServers": "parameter_servers",
		"StepsPerSecond": "steps_per_second", "Constraints": "constraint", "LTarget": "attribute",
	} {
		must.Eq(t, want, specName(field))
	}
}
