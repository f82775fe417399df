package server

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/internal/testutil"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/shoenig/test/must"
)

// badInput is one hostile request of the corpus: it must be answered with
// a 4xx whose body holds want, and change nothing.
type badInput struct {
	name, method, path, body string
	// status is the code expected; 0 means any 4xx.
	status int
	want   string
}

// hclJob returns a register request for the demo jobspec with meta a =
// expr, or with the jobspec edited by edit.
func hclJob(t *testing.T, edit func(src string) string) string {
	src, err := os.ReadFile("../examples/demo.hcl")
	must.NoError(t, err)
	b, err := json.Marshal(map[string]any{"JobHCL": edit(string(src)), "Filename": "bad.hcl"})
	must.NoError(t, err)
	return string(b)
}

func withMeta(expr string) func(string) string {
	return func(src string) string {
		return strings.Replace(src, `job "demo" {`, "job \"demo\" {\n  meta {\n    a = "+expr+"\n  }\n", 1)
	}
}

func withLine(old, new string) func(string) string {
	return func(src string) string { return strings.Replace(src, old, new, 1) }
}

func badInputs(t *testing.T) []badInput {
	const n = 100_000
	cases := []badInput{
		// Evaluation bombs.
		{name: "nested parentheses", path: "/v1/jobs", body: hclJob(t, withMeta(strings.Repeat("(", n)+`"x"`+strings.Repeat(")", n))), want: "Nesting too deep"},
		{name: "nested lists", path: "/v1/jobs", body: hclJob(t, withMeta(strings.Repeat("[", n)+strings.Repeat("]", n))), want: "Nesting too deep"},
		{name: "nested interpolations", path: "/v1/jobs", body: hclJob(t, withMeta(strings.Repeat(`"${`, n/3)+"1"+strings.Repeat(`}"`, n/3))), want: "Nesting too deep"},
		{name: "unary chain", path: "/v1/jobs", body: hclJob(t, withMeta(strings.Repeat("!", n)+"true")), want: "Too many operators"},
		{name: "binary chain", path: "/v1/jobs", body: hclJob(t, withMeta("1"+strings.Repeat("+1", n))), want: "Too many operators"},
		{name: "setproduct of three", path: "/v1/jobs", body: hclJob(t, withMeta("length(setproduct(range(1000), range(1000), range(1000)))")), want: "setproduct would build"},
		{name: "setproduct of two", path: "/v1/jobs", body: hclJob(t, withMeta("length(setproduct(range(1000), range(1000)))")), want: "setproduct would build"},
		{name: "format width", path: "/v1/jobs", body: hclJob(t, withMeta(`format("%999999999d", 1)`)), want: "width or precision"},
		{name: "indent", path: "/v1/jobs", body: hclJob(t, withMeta(`indent(1000000000, "a\nb")`)), want: "indent would build"},
		{name: "nested for", path: "/v1/jobs", body: hclJob(t, withMeta(`length([for a in range(1000): [for b in range(1000): [for c in range(1000): 1]]])`)), want: "MiB of values"},
		{name: "jsondecode deep", path: "/v1/jobs", body: hclJob(t, withMeta(`jsondecode("`+strings.Repeat("[", 50_000)+`")`)), want: "nests more than"},
		{name: "huge string", path: "/v1/jobs", body: hclJob(t, withMeta(`"`+strings.Repeat("x", 300_000)+`"`)), want: "Jobspec too large"},
		{name: "huge meta value", path: "/v1/jobs", body: hclJob(t, withMeta(`join("", [for i in range(1000): "0123456789abcdefghij"])`)), want: "longer than"},
		// Malformed HCL.
		{name: "hcl unclosed block", path: "/v1/jobs", body: hclJob(t, func(s string) string { return s[:len(s)/2] }), want: "invalid jobspec"},
		{name: "hcl garbage", path: "/v1/jobs", body: `{"JobHCL": "}}}{{{ ==="}`, want: "invalid jobspec"},
		{name: "hcl empty", path: "/v1/jobs", body: `{"JobHCL": " "}`, want: "Missing job block"},
		{name: "no job at all", path: "/v1/jobs", body: `{}`, want: "no Job and no JobHCL"},
		{name: "hcl invalid utf-8", path: "/v1/jobs", body: "{\"JobHCL\": \"job \\\"\xff\xfe\\\" {}\"}", want: "invalid jobspec"},
		{name: "hcl undefined variable", path: "/v1/jobs", body: hclJob(t, withMeta("var.nope")), want: "invalid jobspec"},
		{name: "hcl unknown function", path: "/v1/jobs", body: hclJob(t, withMeta("file(\"/etc/passwd\")")), want: "invalid jobspec"},
		{name: "hcl namespace dot dot", path: "/v1/jobs", body: hclJob(t, withMeta(`"x"`+"\n  }\n  namespace = \"..\"\n  meta {\n b = 1")), want: "namespace"},
		{name: "hcl namespace with slash", path: "/v1/jobs", body: hclJob(t, withMeta(`"x"`+"\n  }\n  namespace = \"a/b\"\n  meta {\n b = 1")), want: "namespace"},
		{name: "hcl id with slash", path: "/v1/jobs", body: hclJob(t, withLine(`job "demo"`, `job "a/b"`)), want: "id"},
		{name: "hcl id dot dot", path: "/v1/jobs", body: hclJob(t, withLine(`job "demo"`, `job ".."`)), want: "id"},
		{name: "hcl id with NUL", path: "/v1/jobs", body: hclJob(t, withLine(`job "demo"`, `job "a\u0000b"`)), want: "id"},
		{name: "hcl id too long", path: "/v1/jobs", body: hclJob(t, withLine(`job "demo"`, `job "`+strings.Repeat("a", 200)+`"`)), want: "longer than"},
		{name: "hcl -var bomb", path: "/v1/jobs", body: `{"JobHCL": "variable \"x\" { type = list(number) }\njob \"a\" {}", "Variables": {"x": "` + strings.Repeat("[", 1000) + `"}}`, want: "Nesting too deep"},
		{name: "plan nested parentheses", path: "/v1/jobs/plan", body: hclJob(t, withMeta(strings.Repeat("(", n)+`"x"`+strings.Repeat(")", n))), want: "Nesting too deep"},
		{name: "plan setproduct", path: "/v1/jobs/plan", body: hclJob(t, withMeta("length(setproduct(range(1000), range(1000), range(1000)))")), want: "setproduct would build"},
		{name: "put job mismatched id", method: "PUT", path: "/v1/job/other", body: hclJob(t, withMeta(`"x"`)), want: "the path names job"},
		{name: "put job bomb", method: "PUT", path: "/v1/job/demo", body: hclJob(t, withMeta(strings.Repeat("(", n)+`"x"`+strings.Repeat(")", n))), want: "Nesting too deep"},
		// Malformed and hostile JSON.
		{name: "json empty body", path: "/v1/jobs", body: "", want: "not valid JSON"},
		{name: "json truncated", path: "/v1/jobs", body: `{"JobHCL": "`, want: "not valid JSON"},
		{name: "json not an object", path: "/v1/jobs", body: `[1,2,3]`, want: "not valid JSON"},
		{name: "json unknown field", path: "/v1/jobs", body: `{"Nope": 1}`, want: "unknown field"},
		{name: "json trailing data", path: "/v1/jobs", body: `{"JobHCL": "x"} {}`, want: "after its JSON value"},
		{name: "json stray brace", path: "/v1/jobs", body: `{"JobHCL": "x"}}`, want: "after its JSON value"},
		{name: "json stray bracket", path: "/v1/report", body: `{"Samples": [{"job_id": "demo", "step": 1, "loss": 1}]}]`, want: "after its JSON value"},
		{name: "json deep arrays", path: "/v1/jobs", body: `{"Job": {"Meta": ` + strings.Repeat("[", 200_000) + `}}`, want: "levels deep"},
		{name: "json deep objects", path: "/v1/report", body: strings.Repeat(`{"a":`, 100_000), want: "levels deep"},
		// Valid JSON, but deeper than the FSM's msgpack decoder goes: a
		// job the Raft log could not apply.
		{name: "json deep config", path: "/v1/jobs", body: string(testutil.DeepConfigJobJSON(1_100)), want: "levels deep"},
		{name: "json huge batch split", path: "/v1/jobs", body: `{"Job":{"ID":"split","Training":{"Mode":"sync","GlobalBatchSize":9223372036854775783,"StepsPerEpoch":1000},` +
			`"Elastic":{"Workers":{"Min":1,"Max":9223372036854775782}},"Worker":{"Driver":"docker","Resources":{"CPU":20,"MemoryMB":32}}}}`, want: "is more than the maximum of 16384"},
		{name: "hcl huge batch split", path: "/v1/jobs", body: hclJob(t, func(src string) string {
			return withLine("global_batch_size = 64", "global_batch_size = 9223372036854775783")(withLine("max = 4", "max = 9223372036854775782")(src))
		}), want: "is more than the maximum of 16384"},
		{name: "json both job and hcl", path: "/v1/jobs", body: `{"Job": {"ID": "x"}, "JobHCL": "job \"x\" {}"}`, want: "either Job or JobHCL"},
		{name: "json job with Nomad", path: "/v1/jobs", body: `{"Job": {"ID": "x", "Nomad": {"Groups": {"worker": "w"}}}}`, want: "Job.Nomad"},
		{name: "json job empty", path: "/v1/jobs", body: `{"Job": {}}`, want: "invalid job"},
		{name: "json job namespace dot dot", path: "/v1/jobs", body: `{"Job": {"ID": "x", "Namespace": ".."}}`, want: "namespace"},
		{name: "json job namespace slash", path: "/v1/jobs", body: `{"Job": {"ID": "x", "Namespace": "a/b"}}`, want: "namespace"},
		{name: "json job namespace NUL", path: "/v1/jobs", body: `{"Job": {"ID": "x", "Namespace": "a\u0000"}}`, want: "namespace"},
		{name: "json job id slash", path: "/v1/jobs", body: `{"Job": {"ID": "../../etc"}}`, want: "id"},
		{name: "json job id NUL", path: "/v1/jobs", body: `{"Job": {"ID": "a\u0000b"}}`, want: "id"},
		{name: "json job invalid utf-8", path: "/v1/jobs", body: "{\"Job\": {\"ID\": \"\xff\"}}", want: "id"},
		{name: "json job priority string", path: "/v1/jobs", body: `{"Job": {"ID": "x", "Priority": "high"}}`, want: "not valid JSON"},
		{name: "json job huge number", path: "/v1/jobs", body: `{"Job": {"ID": "x", "Priority": 1e400}}`, want: "not valid JSON"},
		{name: "json job NaN weight", path: "/v1/jobs", body: `{"Job": {"ID": "x", "Weight": NaN}}`, want: "not valid JSON"},
		{name: "json job many meta keys", path: "/v1/jobs", body: manyMeta(300), want: "keys is more than"},
		{name: "json oversized body", path: "/v1/jobs", body: `{"JobHCL": "` + strings.Repeat("x", 2<<20) + `"}`, status: http.StatusRequestEntityTooLarge, want: "larger than"},
		{name: "plan oversized body", path: "/v1/jobs/plan", body: `{"JobHCL": "` + strings.Repeat("x", 2<<20) + `"}`, status: http.StatusRequestEntityTooLarge, want: "larger than"},
		// Reports.
		{name: "report NaN", path: "/v1/report", body: `{"Samples": [{"job_id": "demo", "step": 1, "loss": NaN}]}`, want: "not valid JSON"},
		{name: "report Inf", path: "/v1/report", body: `{"Samples": [{"job_id": "demo", "step": 1, "loss": Infinity}]}`, want: "not valid JSON"},
		{name: "report huge exponent", path: "/v1/report", body: `{"Samples": [{"job_id": "demo", "step": 1, "loss": 1e999}]}`, want: "not valid JSON"},
		{name: "report no samples", path: "/v1/report", body: `{"Samples": []}`, want: "no samples"},
		{name: "report unknown sample key", path: "/v1/report", body: `{"Samples": [{"job_id": "demo", "step": 1, "loss": 1}, {"job_id": "demo", "stpe": 2}]}`, want: `samples[1]: sample: unknown field "stpe"`},
		{name: "report unknown key", path: "/v1/report", body: `{"Samples": [{"job_id": "demo", "step": 1, "loss": 1}], "Extra": 1}`, want: `unknown field "Extra"`},
		{name: "report null", path: "/v1/report", body: `null`, want: "no samples"},
		{name: "report unknown job", path: "/v1/report", body: `{"Samples": [{"job_id": "nope", "step": 1, "loss": 1}]}`, status: http.StatusNotFound, want: "not registered"},
		{name: "report namespace dot dot", path: "/v1/report", body: `{"Samples": [{"job_id": "x", "namespace": "..", "step": 1, "loss": 1}]}`, want: ""},
		{name: "report negative step", path: "/v1/report", body: `{"Samples": [{"job_id": "x", "step": -1, "loss": 1}]}`, want: ""},
		{name: "report far future", path: "/v1/report", body: `{"Samples": [{"job_id": "x", "step": 1, "loss": 1, "time": 9000000000000000000}]}`, want: ""},
		{name: "report invalid utf-8", path: "/v1/report", body: "{\"Samples\": [{\"JobID\": \"\xff\", \"Step\": 1, \"Loss\": 1}]}", want: ""},
		// Other writes.
		{name: "scheduler unknown algorithm", method: "PUT", path: "/v1/operator/scheduler/configuration", body: `{"Algorithm": "../../bin/sh"}`, want: ""},
		{name: "scheduler bad json", method: "PUT", path: "/v1/operator/scheduler/configuration", body: `{"Algorithm": 1}`, want: "not valid JSON"},
		{name: "revert bad json", path: "/v1/job/demo/revert", body: `{"Version": "x"}`, want: "not valid JSON"},
		{name: "revert unknown job", path: "/v1/job/nope/revert", body: `{"Version": 0}`, status: http.StatusNotFound, want: "not found"},
		{name: "stop bad purge", method: "DELETE", path: "/v1/job/x?purge=maybe", want: "not a boolean"},
		{name: "raft join empty", path: "/v1/operator/raft/join", body: `{}`, want: "a join request needs ID, RaftAddr"},
		{name: "raft join bad json", path: "/v1/operator/raft/join", body: `{"ID": 1}`, want: "not valid JSON"},
		{name: "raft remove no id", method: "DELETE", path: "/v1/operator/raft/peer", want: "?id="},
		{name: "raft remove unknown", method: "DELETE", path: "/v1/operator/raft/peer?id=nope", status: http.StatusNotFound, want: "no server"},
		{name: "member empty", method: "PUT", path: "/v1/internal/member", body: `{}`, want: "a member needs"},
		{name: "member bad json", method: "PUT", path: "/v1/internal/member", body: `{"ID": []}`, want: "not valid JSON"},
		// Reads with hostile parameters.
		{name: "read bad index", method: "GET", path: "/v1/jobs?index=-1", want: "not a non-negative integer"},
		{name: "read bad wait", method: "GET", path: "/v1/jobs?wait=forever", want: "not a duration"},
		{name: "read namespace dot dot", method: "GET", path: "/v1/job/x?namespace=..", status: http.StatusNotFound, want: "not found"},
		{name: "read id encoded slash", method: "GET", path: "/v1/job/..%2F..%2Fetc", status: http.StatusNotFound, want: "not found"},
		{name: "read id NUL", method: "GET", path: "/v1/job/a%00b", status: http.StatusNotFound, want: "not found"},
		// Wrong methods and paths.
		{name: "wrong method jobs", method: "PATCH", path: "/v1/jobs", status: http.StatusMethodNotAllowed, want: "not allowed"},
		{name: "wrong method report", method: "GET", path: "/v1/report", status: http.StatusMethodNotAllowed, want: "not allowed"},
		{name: "wrong method join", method: "GET", path: "/v1/operator/raft/join", status: http.StatusMethodNotAllowed, want: "not allowed"},
		{name: "wrong method member", method: "DELETE", path: "/v1/internal/member", status: http.StatusMethodNotAllowed, want: "not allowed"},
		{name: "wrong method snapshot", method: "POST", path: "/v1/operator/snapshot", status: http.StatusMethodNotAllowed, want: "not allowed"},
		{name: "no such endpoint", method: "GET", path: "/v1/nope", status: http.StatusNotFound, want: "no endpoint"},
		{name: "path traversal", method: "GET", path: "/v1/../../etc/passwd", status: 0},
		{name: "snapshot restore garbage", method: "PUT", path: "/v1/operator/snapshot", body: "not a snapshot", want: ""},
		// Queues: a follower refuses what it can check before forwarding.
		{name: "queue wrong types", method: "PUT", path: "/v1/queues", body: `{"Queues": [{"Name": ["x"]}]}`, status: http.StatusBadRequest, want: "not valid JSON"},
		{name: "queue null", method: "PUT", path: "/v1/queues", body: `{"Queues": [null]}`, status: http.StatusBadRequest, want: "queue[0]: is required"},
		{name: "queue invalid", method: "PUT", path: "/v1/queues", body: `{"Queues": [{"Name": "q", "Namespaces": ["q", "q"], "Weight": -2}]}`, status: http.StatusBadRequest, want: `queue[0].namespaces[1]: "q" is given twice`},
		{name: "queue namespace twice", method: "PUT", path: "/v1/queues", body: `{"Queues": [{"Name": "a", "Namespaces": ["x"]}, {"Name": "b", "Namespaces": ["x"]}]}`, status: http.StatusConflict, want: "a namespace maps to one queue"},
		{name: "queue huge", method: "PUT", path: "/v1/queues", body: `{"Queues": [{"Name": "` + strings.Repeat("q", maxBodyBytes) + `"}]}`, status: http.StatusRequestEntityTooLarge, want: "larger than"},
		{name: "queue unknown", method: "GET", path: "/v1/queue/nope", status: http.StatusNotFound, want: "not found"},
		{name: "queue delete unknown", method: "DELETE", path: "/v1/queue/nope", status: http.StatusNotFound, want: "not found"},
	}
	for i := range cases {
		if cases[i].method == "" {
			cases[i].method = http.MethodPost
		}
	}
	return cases
}

func manyMeta(n int) string {
	meta := map[string]string{}
	for i := range n {
		meta[fmt.Sprintf("k%d", i)] = "v"
	}
	b, _ := json.Marshal(map[string]any{"Job": map[string]any{"ID": "x", "Meta": meta}})
	return string(b)
}

// stateDump is what a bad request must not change.
func stateDump(t *testing.T, s *Server) string {
	txn := s.State().Txn()
	jobs, err := state.Jobs(txn, nil, "")
	must.NoError(t, err)
	members, err := state.Members(txn, nil)
	must.NoError(t, err)
	cfg, err := state.SchedulerConfig(txn, nil)
	must.NoError(t, err)
	queues, err := state.Queues(txn, nil)
	must.NoError(t, err)
	b, err := json.Marshal(map[string]any{"jobs": jobs, "members": members, "config": cfg, "queues": queues,
		"index": state.IndexOf(txn, state.TableJobs, state.TableVersions, state.TableSamples, state.TableConfig, state.TableQueues)})
	must.NoError(t, err)
	return string(b)
}

// TestBadInput sends the corpus of hostile requests to random servers of a
// 3-server cluster, leader and followers. Each must get a 4xx with a clear
// message, change nothing, and leave every server healthy.
func TestBadInput(t *testing.T) {
	servers := cluster(t, 3, simDriver(t, 50))
	leaderOf(t, servers...)
	for _, s := range servers {
		agent.WaitFor(t, 10*time.Second, "scheduler configuration and members replicated", func() error {
			if cfg, _ := state.SchedulerConfig(s.State().Txn(), nil); cfg == nil {
				return fmt.Errorf("no configuration on %s yet", s.ID())
			}
			if members, _ := state.Members(s.State().Txn(), nil); len(members) != len(servers) {
				return fmt.Errorf("%d members recorded on %s", len(members), s.ID())
			}
			return nil
		})
	}
	dumps := make([]string, len(servers))
	for i, s := range servers {
		dumps[i] = stateDump(t, s)
	}
	runtime.GC()
	goroutines := runtime.NumGoroutine()
	rng := rand.New(rand.NewSource(1))
	httpc := &http.Client{Timeout: 30 * time.Second}
	cases := badInputs(t)
	must.GreaterEq(t, 80, len(cases))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := servers[rng.Intn(len(servers))]
			req, err := http.NewRequest(tc.method, "http://"+s.HTTPAddr()+tc.path, strings.NewReader(tc.body))
			must.NoError(t, err)
			start := time.Now()
			resp, err := httpc.Do(req)
			must.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Logf("%s %s to %s: %d in %v: %.200s", tc.method, tc.path, s.cfg.NodeName, resp.StatusCode, time.Since(start), body)
			if tc.status != 0 {
				must.Eq(t, tc.status, resp.StatusCode)
			}
			must.Between(t, 400, resp.StatusCode, 499)
			must.StrContains(t, string(body), tc.want)
		})
	}
	t.Run("trickled body", func(t *testing.T) {
		conn, err := net.Dial("tcp", servers[0].HTTPAddr())
		must.NoError(t, err)
		defer conn.Close()
		fmt.Fprintf(conn, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
		// The server must not wait for the rest beyond its body timeout:
		// here only check that it still answers others meanwhile.
		resp, err := httpc.Get("http://" + servers[0].HTTPAddr() + "/v1/agent/health")
		must.NoError(t, err)
		resp.Body.Close()
		must.Eq(t, http.StatusOK, resp.StatusCode)
	})

	leaderOf(t, servers...)
	for i, s := range servers {
		agent.WaitFor(t, 10*time.Second, "state unchanged", func() error {
			if got := stateDump(t, s); got != dumps[i] {
				return fmt.Errorf("state of %s changed:\nbefore %s\nafter  %s", s.cfg.NodeName, dumps[i], got)
			}
			return nil
		})
	}
	agent.WaitFor(t, 10*time.Second, "goroutines back", func() error {
		if n := runtime.NumGoroutine(); n > goroutines+50 {
			return fmt.Errorf("%d goroutines, %d before", n, goroutines)
		}
		return nil
	})
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	must.Less(t, uint64(512<<20), ms.HeapAlloc)
}
