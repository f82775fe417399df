package structs

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/internal/testutil"
	"github.com/hashicorp/go-msgpack/v2/codec"
)

// sampleSeeds are samples as trainers and hostile clients send them.
func sampleSeeds() [][]byte {
	seeds := []string{
		`{"job_id":"a","rank":1,"step":40,"loss":0.5,"step_time_s":0.25,"cpu_s":0.1,"num_ps":1,"num_workers":2,"grad_sqr":2,"batch_size":64}`,
		`{"JobID":"a","Step":40,"Loss":0.5,"StepTimeS":0.25,"NumWorkers":2,"Time":1700000000000000000}`,
		`{"namespace":"ml","job_id":"a","role":"ps","rank":0,"usage_cpu_mhz":900,"alloc_id":"8f1c2a3e-0b1d-4c5e-9f00-1234567890ab"}`,
		`null`, `{}`, `[]`, `"x"`, ``,
		// A key given twice, in two spellings and in one.
		`{"job_id":"a","JobID":"b"}`,
		`{"job_id":"a","job_id":"a"}`,
		// NaN and infinities: JSON has none, but huge exponents overflow.
		`{"job_id":"a","loss":1e400}`,
		`{"job_id":"a","loss":-1e400,"step_time_s":1e309}`,
		`{"job_id":"a","epoch":NaN}`,
		`{"job_id":"a","step":9223372036854775808}`,
		`{"job_id":"a","step":-9223372036854775808,"checkpoint_step":-1}`,
		`{"job_id":"a","rank":1e3}`,
		`{"job_id":"a","time":9223372036854775807}`,
		`{"job_id":"a","grad_var":1}`,
		`{"job_id":"a","role":"chief"}`,
		`{"job_id":"a","alloc_id":"a b"}`,
		`{"job_id":"a","stpe":3}`,
		`{"job_id":"a","samples":[1,2]}`,
		`{"job_id":"a","step":"3"}`,
		`{"job_id":"a"} {}`,
	}
	out := make([][]byte, 0, len(seeds)+2)
	for _, s := range seeds {
		out = append(out, []byte(s))
	}
	// Huge content: a long JobID and a long AllocID.
	out = append(out, []byte(`{"job_id":"`+strings.Repeat("j", 1<<16)+`","alloc_id":"`+strings.Repeat("a", 1<<12)+`"}`))
	// A value nested deeper than encoding/json allows (10,000).
	out = append(out, []byte(`{"job_id":`+strings.Repeat("[", 10_001)+strings.Repeat("]", 10_001)+`}`))
	return out
}

// FuzzDecodeSample decodes a sample as it enters Caravan (a collector's
// followed file, a report) and validates it. For any input: a clear error
// or a sample, and a sample that validates encodes to JSON and to msgpack
// (the Raft log) and decodes back to itself.
//
//	go test ./structs -run '^$' -fuzz '^FuzzDecodeSample$' -fuzztime 1m
func FuzzDecodeSample(f *testing.F) {
	for _, s := range sampleSeeds() {
		f.Add(s)
	}
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := DecodeSample(in)
		testutil.ClearError(t, "DecodeSample", err)
		if err != nil {
			return
		}
		verr := s.Validate()
		testutil.ClearError(t, "Validate", verr)
		testutil.ClearError(t, "ValidateTime", s.ValidateTime(now))
		for _, fe := range FieldErrors(verr) {
			if fe.Path == "" {
				t.Fatalf("Validate: a field error that names no field: %v", fe)
			}
		}
		if verr != nil {
			return
		}
		// What validates can be written and read back.
		js, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("encode a valid sample: %v", err)
		}
		back, err := DecodeSample(js)
		if err != nil {
			t.Fatalf("decode a valid sample's JSON %s: %v", js, err)
		}
		if !reflect.DeepEqual(s, back) {
			t.Fatalf("JSON round trip changed the sample:\n%+v\n%+v", s, back)
		}
		var buf bytes.Buffer
		if err := codec.NewEncoder(&buf, MsgpackHandle).Encode(s); err != nil {
			t.Fatalf("msgpack-encode a valid sample: %v", err)
		}
		var mp Sample
		if err := codec.NewDecoderBytes(buf.Bytes(), MsgpackHandle).Decode(&mp); err != nil {
			t.Fatalf("msgpack-decode a valid sample: %v", err)
		}
		if !reflect.DeepEqual(s, mp) {
			t.Fatalf("msgpack round trip changed the sample:\n%+v\n%+v", s, mp)
		}
	})
}

// FuzzReportRequest decodes a POST /v1/report body with its strict
// UnmarshalJSON. For any input: a clear error, or samples each of which
// validates or says clearly why not.
//
//	go test ./structs -run '^$' -fuzz '^FuzzReportRequest$' -fuzztime 1m
func FuzzReportRequest(f *testing.F) {
	for _, s := range sampleSeeds() {
		f.Add([]byte(`{"Samples":[` + string(s) + `]}`))
	}
	dup := `{"job_id":"a","step":3,"loss":0.5,"num_workers":1}`
	for _, s := range []string{
		`{"samples":[{"job_id":"a","step":3},{"JobID":"b"}]}`,
		`{"Samples":[` + dup + `,` + dup + `,` + dup + `]}`, // duplicate samples
		`{"Samples":[],"Samples":[{"JobID":"a"}]}`,
		`{"Samples":null}`, `{"Samples":{}}`, `{"Samples":[null,1,"x",[]]}`,
		`{"Samples":[],"extra":1}`, `{"samples":[]}[]`, `{}`, `null`,
		`{"Samples":[` + strings.Repeat(`{"JobID":"a"},`, 10_000) + `{"JobID":"a"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var req ReportRequest
		err := json.Unmarshal(in, &req)
		testutil.ClearError(t, "decode a report", err)
		if err != nil {
			return
		}
		if len(req.Samples) > len(in) {
			t.Fatalf("%d samples out of %d bytes", len(req.Samples), len(in))
		}
		for i := range req.Samples {
			testutil.ClearError(t, "Validate", req.Samples[i].Validate())
		}
	})
}
