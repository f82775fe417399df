package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/acl"
	"github.com/caravan-sched/caravan/internal/testutil"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/plugins/loader"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// The fuzz targets of this file feed request bodies to the decoding and
// checking a write endpoint does before it commits anything, without a
// Raft peer or a listener: decode, then the endpoint's own check. For any
// body the answer is a refusal with a 4xx code and a message, or a value
// the endpoint would commit.

// fuzzServer is a server with nothing started: enough for the checks that
// endpoints make of a request before they commit it.
func fuzzServer(tb testing.TB) *Server {
	tb.Helper()
	l, err := loader.New(loader.Config{Builtins: builtin.Algorithms, Logger: hclog.NewNullLogger()})
	if err != nil {
		tb.Fatalf("load the built-in algorithms: %v", err)
	}
	cfg := Config{Algorithms: l, Clock: func() time.Time { return time.Unix(1_700_000_000, 0) }}
	cfg.setDefaults()
	return &Server{cfg: cfg, log: cfg.Logger}
}

// bodyRequest is a request with body, bounded as handle bounds it.
func bodyRequest(body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/fuzz", bytes.NewReader(body))
	r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, maxBodyBytes)
	return r
}

// refused checks a refusal: a message, and a 4xx code. It reports whether
// err refused the request.
func refused(t *testing.T, what string, err error) bool {
	t.Helper()
	if err == nil {
		return false
	}
	testutil.ClearError(t, what, err)
	if code := errorCode(err); code < 400 || code > 499 {
		t.Fatalf("%s: refused with %d, not a 4xx: %v", what, code, err)
	}
	return true
}

// addJobSeeds adds the register request bodies of the examples and the jobspec's
// tests, as the JSON that clients send.
func addJobSeeds(f *testing.F) {
	f.Helper()
	testutil.AddFiles(f, func(file string, src []byte) {
		b, err := json.Marshal(structs.JobRegisterRequest{JobHCL: string(src), Filename: filepath.Base(file)})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}, "../examples/*.hcl", "../jobspec/testdata/valid/*.hcl", "../jobspec/testdata/invalid/*.hcl")
	job, err := json.Marshal(structs.JobRegisterRequest{Job: structs.MockJob()})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(job)
	for _, s := range []string{
		`{}`, `null`, `[]`, ``, `{"Job":null}`, `{"Job":{}}`, `{"Job":{"ID":"a"}}`,
		`{"Job":{"ID":"a"},"JobHCL":"job \"a\" {}"}`,
		`{"JobHCL":"job \"a\" {}","Variables":{"x":"1"}}`,
		`{"JobHCL":"variable \"n\" {\n type = number\n}\njob \"a\" {\n meta { n = var.n }\n}","Variables":{"n":"1+"}}`,
		`{"Job":{"ID":"a","Nomad":{}}}`,
		`{"Job":{"ID":"a"}} {}`, `{"Job":{"ID":"a"}}}`, `{"Jbo":{}}`,
	} {
		f.Add([]byte(s))
	}
	// Worker.Config nested deeper than the FSM's msgpack decoder goes.
	f.Add(testutil.DeepConfigJobJSON(1_100))
}

// FuzzJobRegisterBody decodes a job register body (POST /v1/jobs, PUT
// /v1/job/{id}, POST /v1/jobs/plan) and checks it as the endpoint does:
// the JSON job or the jobspec, canonical, valid and allowed. A job the
// server accepts must apply on a fresh state machine, as the Raft log will
// apply it: what can be written can be applied.
//
//	go test ./server -run '^$' -fuzz '^FuzzJobRegisterBody$' -fuzztime 1m
func FuzzJobRegisterBody(f *testing.F) {
	addJobSeeds(f)
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req structs.JobRegisterRequest
		if refused(t, "decode", decode(bodyRequest(body), &req)) {
			return
		}
		job, err := s.registeredJob(&req)
		if refused(t, "check the job", err) {
			return
		}
		job.SubmitTime = s.now().UnixNano()
		buf, err := fsm.Encode(fsm.JobRegisterType, &fsm.JobRegisterRequest{Job: job, MustBeNew: true, Time: job.SubmitTime})
		if err != nil {
			t.Fatalf("encode an accepted job for the Raft log: %v", err)
		}
		m, err := fsm.New(hclog.NewNullLogger(), nil)
		if err != nil {
			t.Fatal(err)
		}
		switch out := m.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: buf}).(type) {
		case fsm.JobRegisterResponse:
		case error:
			t.Fatalf("a fresh state machine refused an accepted job: %v", out)
		default:
			t.Fatalf("a fresh state machine answered an accepted job with %T", out)
		}
		got, err := state.JobByID(m.State().Txn(), nil, job.Namespace, job.ID)
		if err != nil || got == nil {
			t.Fatalf("the accepted job is not in the state after its apply: %v, %v", got, err)
		}
	})
}

// FuzzReportBody decodes a POST /v1/report body and checks it as the
// endpoint does before it looks up the samples' jobs. A report it accepts
// has samples that validate, each with a namespace and a time.
//
//	go test ./server -run '^$' -fuzz '^FuzzReportBody$' -fuzztime 1m
func FuzzReportBody(f *testing.F) {
	s := fuzzServer(f)
	sample := `{"job_id":"a","step":3,"loss":0.5,"step_time_s":0.2,"num_ps":1,"num_workers":2}`
	for _, b := range []string{
		`{"Samples":[` + sample + `]}`,
		`{"samples":[` + sample + `,` + sample + `,` + sample + `]}`, // duplicate samples
		`{"Samples":[{"JobID":"a","Step":1,"Time":1699999999000000000}]}`,
		`{"Samples":[{"JobID":"a","Time":1700000061000000000}]}`, // ahead of the server's clock
		`{"Samples":[{"JobID":"a","Loss":1e400}]}`,               // overflows to +Inf
		`{"Samples":[{"JobID":"a","Loss":-1e309,"Epoch":1e308}]}`,
		`{"Samples":[{"JobID":"a","GradVar":1}]}`,
		`{"Samples":[{"JobID":"a","stpe":3}]}`,
		`{"Samples":[{"JobID":"` + strings.Repeat("j", 1<<16) + `","AllocID":"` + strings.Repeat("x", 1<<10) + `"}]}`,
		`{"Samples":[` + strings.Repeat(sample+",", 5_000) + sample + `]}`,
		`{"Samples":[]}`, `{"Samples":null}`, `{}`, `null`, ``, `{"Samples":[]} x`,
		`{"Samples":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req structs.ReportRequest
		if refused(t, "decode", decode(bodyRequest(body), &req)) {
			return
		}
		if refused(t, "check the report", checkReport(&req, s.now())) {
			return
		}
		for i, smp := range req.Samples {
			if err := smp.Validate(); err != nil || smp.Namespace == "" || smp.Time == 0 {
				t.Fatalf("accepted samples[%d] %+v: %v", i, smp, err)
			}
		}
	})
}

// FuzzSchedulerConfigBody decodes a PUT
// /v1/operator/scheduler/configuration body and builds the algorithm it
// names, with its options, from the built-ins.
//
//	go test ./server -run '^$' -fuzz '^FuzzSchedulerConfigBody$' -fuzztime 1m
func FuzzSchedulerConfigBody(f *testing.F) {
	s := fuzzServer(f)
	for _, name := range builtin.Names() {
		f.Add([]byte(`{"Algorithm":"` + name + `"}`))
	}
	for _, b := range []string{
		`{"Algorithm":"optimus","Options":{"interval":"30s"}}`,
		`{"Algorithm":"optimus","Options":{"":""}}`,
		`{"Algorithm":"pollux","Options":{"seed":"-1","rounds":"99999999999999999999"}}`,
		`{"Algorithm":"nope"}`, `{"Algorithm":""}`, `{"Options":null}`, `{}`, `null`,
		`{"Algorithm":"optimus","Options":{"a":1}}`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req structs.SchedulerConfigRequest
		if refused(t, "decode", decode(bodyRequest(body), &req)) {
			return
		}
		cfg, err := s.schedulerConfig(&req)
		if refused(t, "check the configuration", err) {
			return
		}
		if cfg.Algorithm != req.Algorithm {
			t.Fatalf("accepted %q as algorithm %q", req.Algorithm, cfg.Algorithm)
		}
	})
}

// FuzzACLPolicyBody decodes a POST /v1/acl/policy/{name} body and parses
// its rules, as the endpoint does before it commits the policy.
//
//	go test ./server -run '^$' -fuzz '^FuzzACLPolicyBody$' -fuzztime 1m
func FuzzACLPolicyBody(f *testing.F) {
	for _, rules := range []string{
		`namespace "default" { policy = "write" }`,
		`namespace "*" { policy = "read" capabilities = ["submit-job"] }` + "\n" + `agent { policy = "read" }` + "\n" + `operator { policy = "write" }`,
		`namespace "default" { policy = "nope" }`,
		`namespace { }`, `}}{{`, ``, `namespace "` + strings.Repeat("a", 1<<12) + `" { policy = "read" }`,
		strings.Repeat(`namespace "a" { policy = "read" }`+"\n", 1_000),
		`namespace "a" { policy = ` + strings.Repeat("(", 5_000) + `"read"` + strings.Repeat(")", 5_000) + ` }`,
	} {
		b, err := json.Marshal(structs.ACLPolicyRequest{Description: "d", Rules: rules})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"Rules":"x","Extra":1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var req structs.ACLPolicyRequest
		if refused(t, "decode", decode(bodyRequest(body), &req)) {
			return
		}
		p, diags := acl.Parse("fuzz.hcl", []byte(req.Rules))
		if diags.HasErrors() {
			testutil.ClearError(t, "parse the rules", acl.DiagnosticsError(diags))
			return
		}
		if p == nil {
			t.Fatal("rules parsed without errors into no policy")
		}
	})
}

// FuzzRequestBody decodes the other write endpoints' bodies, which are
// checked field by field after decoding: an ACL token (POST
// /v1/acl/token), a job revert (POST /v1/job/{id}/revert), a Raft join and
// a member (the servers' own endpoints). kind chooses the endpoint.
//
//	go test ./server -run '^$' -fuzz '^FuzzRequestBody$' -fuzztime 1m
func FuzzRequestBody(f *testing.F) {
	bodies := []func() any{
		func() any { return new(structs.ACLTokenRequest) },
		func() any { return new(structs.JobRevertRequest) },
		func() any { return new(structs.JoinRequest) },
		func() any { return new(structs.Member) },
	}
	for kind, b := range [][]string{
		{`{"Name":"dev","Type":"client","Policies":["dev","dev"]}`, `{"Type":"management","Policies":null}`, `{"Policies":[1]}`},
		{`{"Version":3,"EnforcePriorVersion":4}`, `{"Version":-1}`, `{"Version":1e30}`, `{"Version":18446744073709551616}`},
		{`{"ID":"s1","RaftAddr":"127.0.0.1:4647","HTTPAddr":"127.0.0.1:4646"}`, `{"ID":""}`},
		{`{"ID":"s1","Name":"a","RaftAddr":"x","HTTPAddr":"y"}`, `{"ID":"s1","ID":"s2"}`},
	} {
		for _, s := range b {
			f.Add(uint8(kind), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		v := bodies[int(kind)%len(bodies)]()
		refused(t, "decode", decode(bodyRequest(body), v))
	})
}

// FuzzQueueUpsertBody decodes a PUT /v1/queues body and checks it as the
// endpoint does, against an empty state. Queues it accepts must apply on
// a fresh state machine, all of them, as the Raft log will apply them.
//
//	go test ./server -run '^$' -fuzz '^FuzzQueueUpsertBody$' -fuzztime 1m
func FuzzQueueUpsertBody(f *testing.F) {
	f.Add([]byte(`{"Queues": [{"Name": "nlp", "Namespaces": ["nlp", "nlp-*"], "Cohort": "r", "Weight": 2, "Quota": {"GPU": [{"Type": "A100", "Nominal": 8, "LendingLimit": 4}], "CPU": 100, "MemoryMB": 10}}]}`))
	f.Add([]byte(`{"Queues": [{"Name": "a", "Namespaces": ["x"]}, {"Name": "b", "Namespaces": ["x"]}]}`))
	f.Add([]byte(`{"Queues": [{"Name": "default"}, null, {"Name": "a", "Namespaces": ["["], "Weight": -1}]}`))
	f.Add([]byte(`{"Queues": [{"Name": "a", "Namespaces": ["a"], "Quota": {"GPU": [null, {"Type": "*", "Nominal": -1, "BorrowingLimit": -3}]}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		queues, err := decodeQueues(bodyRequest(body))
		if refused(t, "decode", err) {
			return
		}
		m, err := fsm.New(hclog.NewNullLogger(), nil)
		if err != nil {
			t.Fatal(err)
		}
		queues, err = state.CheckQueues(m.State().Txn(), queues)
		if refused(t, "check the queues", err) {
			return
		}
		buf, err := fsm.Encode(fsm.QueueUpsertType, &fsm.QueueUpsertRequest{Queues: queues})
		if err != nil {
			t.Fatalf("encode accepted queues for the Raft log: %v", err)
		}
		if out := m.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: buf}); out != nil {
			t.Fatalf("a fresh state machine answered accepted queues with %v", out)
		}
		stored, err := state.Queues(m.State().Txn(), nil)
		if err != nil || len(stored) != len(queues) {
			t.Fatalf("%d queues accepted, %d stored: %v", len(queues), len(stored), err)
		}
	})
}
