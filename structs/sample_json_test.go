package structs

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/shoenig/test/must"
)

// TestSample_JSON: a sample encodes with its field names and decodes from
// them or from the trainers' snake_case; a doubled key is an error that
// names it. An unknown key is skipped by readers, and refused, by name,
// where samples enter Caravan (DecodeSample, ReportRequest).
func TestSample_JSON(t *testing.T) {
	want := Sample{JobID: "a", Rank: 1, Step: 40, Loss: 0.5, StepTimeS: 0.25, CPUS: 0.1, NumPS: 1, NumWorkers: 2, GradSqr: 2, BatchSize: 64}
	out, err := json.Marshal(want)
	must.NoError(t, err)
	must.StrContains(t, string(out), `"JobID":"a"`)
	must.StrContains(t, string(out), `"StepTimeS":0.25`)
	must.StrNotContains(t, string(out), "step_time_s")

	for _, in := range []string{
		string(out),
		`{"job_id":"a","rank":1,"step":40,"loss":0.5,"step_time_s":0.25,"cpu_s":0.1,"num_ps":1,"num_workers":2,"grad_sqr":2,"batch_size":64}`,
	} {
		var got Sample
		must.NoError(t, json.Unmarshal([]byte(in), &got), must.Sprint(in))
		must.Eq(t, want, got)
	}
	var s Sample
	must.ErrorContains(t, json.Unmarshal([]byte(`{"job_id":"a","StepTimeS":1,"step_time_s":2}`), &s), `given twice`)
	must.Error(t, json.Unmarshal([]byte(`{"step":"three"}`), &s))

	newer := []byte(`{"JobID":"a","Step":3,"FieldOfANewerVersion":1}`)
	must.NoError(t, json.Unmarshal(newer, &s))
	must.Eq(t, Sample{JobID: "a", Step: 3}, s)
	_, err = DecodeSample(newer)
	must.ErrorContains(t, err, `sample: unknown field "FieldOfANewerVersion"`)
	got, err := DecodeSample([]byte(`{"job_id":"a","step":3}`))
	must.NoError(t, err)
	must.Eq(t, Sample{JobID: "a", Step: 3}, got)

	var req ReportRequest
	must.NoError(t, json.Unmarshal([]byte(`{"samples":[{"job_id":"a","step":3},{"JobID":"b"}]}`), &req))
	must.Eq(t, []Sample{{JobID: "a", Step: 3}, {JobID: "b"}}, req.Samples)
	must.ErrorContains(t, json.Unmarshal([]byte(`{"Samples":[{"JobID":"a"},{"job_id":"a","stpe":3}]}`), &req), `samples[1]: sample: unknown field "stpe"`)
	must.ErrorContains(t, json.Unmarshal([]byte(`{"Samples":[],"extra":1}`), &req), `unknown field "extra"`)
}

// TestSample_MsgpackKeys: samples encode to msgpack under the snake_case
// keys they always had, so that the Raft log and snapshots written before
// their JSON keys became field names still decode.
func TestSample_MsgpackKeys(t *testing.T) {
	var old bytes.Buffer
	must.NoError(t, codec.NewEncoder(&old, MsgpackHandle).Encode(map[string]any{
		"namespace": "ml", "job_id": "a", "role": RoleWorker, "rank": 1, "step": 7, "loss": 0.5, "step_time_s": 0.25,
		"checkpoint_step": 5, "alloc_id": "x", "batch_size": 64, "num_ps": 1, "num_workers": 2, "time": 9,
	}))
	var got Sample
	must.NoError(t, codec.NewDecoderBytes(old.Bytes(), MsgpackHandle).Decode(&got))
	want := Sample{Namespace: "ml", JobID: "a", Role: RoleWorker, Rank: 1, Step: 7, Loss: 0.5, StepTimeS: 0.25,
		CheckpointStep: 5, AllocID: "x", BatchSize: 64, NumPS: 1, NumWorkers: 2, Time: 9}
	must.Eq(t, want, got)

	var now bytes.Buffer
	must.NoError(t, codec.NewEncoder(&now, MsgpackHandle).Encode(&want))
	var keys map[string]any
	must.NoError(t, codec.NewDecoderBytes(now.Bytes(), MsgpackHandle).Decode(&keys))
	must.MapContainsKeys(t, keys, []string{"job_id", "step_time_s", "checkpoint_step", "num_workers"})
	must.MapNotContainsKey(t, keys, "JobID")
}
