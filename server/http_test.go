package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	reporter "github.com/caravan-sched/caravan/collector/client"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/shoenig/test/must"
)

// dump returns the rows of a store, encoded, of the given tables or of
// all.
func dump(t *testing.T, s *state.Store, tables ...string) []string {
	var rows []string
	must.NoError(t, state.Dump(s.Txn(), func(kind uint8, row any) error {
		if len(tables) > 0 && !slices.Contains(tables, state.TableOf(kind)) {
			return nil
		}
		var buf []byte
		err := codec.NewEncoderBytes(&buf, structs.MsgpackHandle).Encode(row)
		rows = append(rows, string(kind)+string(buf))
		return err
	}))
	return rows
}

// stable are the tables that change only on users' requests and node
// changes: not plans, events and indexes, which the leader writes on its
// own, nor samples, which it keeps draining from the driver.
var stable = []string{state.TableJobs, state.TableVersions, state.TableNodes, state.TableConfig, state.TableQueues}

func mustJSON(t *testing.T, v any) string {
	buf, err := jsonOf(v)
	must.NoError(t, err)
	return string(buf)
}

func TestAPI_BadInputs(t *testing.T) {
	driver := simDriver(t, 1)
	s := TestServer(t, TestConfig(t, driver))
	leaderOf(t, s)
	c := client(t, s)
	_, _, err := c.Jobs().Register(demoJob(t, "dup"), nil)
	must.NoError(t, err)
	agent.WaitFor(t, 20*time.Second, "job placed", jobStatus(t, c, "dup", structs.JobStatusRunning))
	driver.Stop()
	before := dump(t, s.State(), stable...)

	big := `{"JobHCL": "` + strings.Repeat("#", maxBodyBytes) + `"}`
	cases := []struct {
		name, method, path, body string
		code                     int
		msg                      string
	}{
		{"invalid jobspec", "POST", "/v1/jobs", `{"JobHCL": "job \"x\" {\n  bogus = 1\n}\n", "Filename": "x.hcl"}`, 400, "x.hcl:2:3"},
		{"invalid job", "POST", "/v1/jobs", `{"Job": {"ID": "x"}}`, 400, "invalid job"},
		{"both forms", "POST", "/v1/jobs", `{"Job": {"ID": "x"}, "JobHCL": "job \"x\" {}"}`, 400, "not both"},
		{"empty body", "POST", "/v1/jobs", `{}`, 400, "no Job and no JobHCL"},
		{"wrong types", "POST", "/v1/jobs", `{"Job": {"ID": 7}}`, 400, "not valid JSON"},
		{"unknown field", "POST", "/v1/jobs", `{"Jobb": {}}`, 400, "unknown field"},
		{"trailing data", "POST", "/v1/jobs", `{} {}`, 400, "after its JSON value"},
		{"oversized body", "POST", "/v1/jobs", big, 413, "larger than"},
		{"duplicate", "POST", "/v1/jobs", mustJSON(t, changedDemoJob(t, "dup")), 409, "already registered"},
		{"path and body disagree", "PUT", "/v1/job/other", mustJSON(t, demoJob(t, "dup")), 400, `names job "other"`},
		{"unknown job", "GET", "/v1/job/nope", "", 404, `job "nope"`},
		{"stop unknown job", "DELETE", "/v1/job/nope", "", 404, "not found"},
		{"bad index", "GET", "/v1/jobs?index=x", "", 400, "index"},
		{"bad wait", "GET", "/v1/jobs?index=1&wait=soon", "", 400, "wait"},
		{"bad purge", "DELETE", "/v1/job/dup?purge=maybe", "", 400, "purge"},
		{"unknown algorithm", "PUT", "/v1/operator/scheduler/configuration", `{"Algorithm": "nope"}`, 400, "unknown algorithm"},
		{"options to an algorithm without", "PUT", "/v1/operator/scheduler/configuration", `{"Algorithm": "fifo", "Options": {"a": "b"}}`, 400, "takes no options"},
		{"dorm without its solver", "PUT", "/v1/operator/scheduler/configuration", `{"Algorithm": "dorm", "Options": {"glpsol": "/nonexistent/glpsol"}}`, 400, "dorm needs GLPK's glpsol: install glpk-utils (make tools)"},
		{"bad snapshot", "PUT", "/v1/operator/snapshot", "garbage\n", 400, "not a Caravan snapshot"},
		{"unknown route", "GET", "/v1/nope", "", 404, "no endpoint"},
		{"wrong method", "PUT", "/v1/nodes", "", 405, "method PUT not allowed on /v1/nodes; use GET"},
		{"wrong method on a job", "POST", "/v1/job/dup", "", 405, "use GET or PUT or DELETE"},
		{"bad per_page", "GET", "/v1/jobs?per_page=many", "", 400, "per_page"},
		{"bad filter", "GET", "/v1/jobs?filter=Status+%3D%3D", "", 400, "is not a valid expression"},
		{"filter on an unknown field", "GET", "/v1/nodes?filter=Bogus+%3D%3D+1", "", 400, "filter: "},
		{"bad event filter", "GET", "/v1/events?filter=%3D%3D", "", 400, "is not a valid expression"},
		{"remove unknown peer", "DELETE", "/v1/operator/raft/peer?id=nope", "", 404, "no server"},
		{"empty report", "POST", "/v1/report", `{"samples": []}`, 400, "no samples"},
		{"report with a bad sample", "POST", "/v1/report", `{"samples": [{"job_id": "dup", "step": 3}, {"job_id": "dup", "step": 2, "loss": -1}]}`, 400, "samples[1]: Loss"},
		{"report of a checkpoint ahead", "POST", "/v1/report", `{"samples": [{"job_id": "dup", "step": 2, "checkpoint_step": 5}]}`, 400, "CheckpointStep"},
		{"report from the future", "POST", "/v1/report", fmt.Sprintf(`{"samples": [{"job_id": "dup", "step": 3}, {"job_id": "dup", "step": 4, "time": %d}]}`, time.Now().Add(time.Hour).UnixNano()), 400, "samples[1]: Time: is "},
		{"report of an unknown job", "POST", "/v1/report", `{"samples": [{"job_id": "nope", "step": 3}]}`, 404, `samples[0]: job "nope" in namespace "default" is not registered`},
		{"report of a job in another namespace", "POST", "/v1/report", `{"samples": [{"job_id": "dup", "namespace": "other", "step": 3}]}`, 404, `job "dup" in namespace "other"`},
		{"report mixing known and unknown jobs", "POST", "/v1/report", `{"samples": [{"job_id": "dup", "step": 3}, {"job_id": "nope", "step": 3}, {"job_id": "nada", "step": 3}]}`, 404, `samples[1]: job "nope"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, "http://"+s.HTTPAddr()+tc.path, strings.NewReader(tc.body))
			must.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			must.NoError(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			must.Eq(t, tc.code, resp.StatusCode, must.Sprint(string(body)))
			must.StrContains(t, string(body), tc.msg)
		})
	}
	must.Eq(t, before, dump(t, s.State(), stable...), must.Sprint("no bad request changed the state"))
	smps, err := state.Samples(s.State().Txn(), nil, structs.DefaultNamespace, "dup")
	must.NoError(t, err)
	for _, smp := range smps.Samples {
		must.NotEq(t, 3, smp.Step, must.Sprint("no sample of a rejected report was committed"))
	}
}

// postReport posts a report body to a server and returns the status and
// the response body.
func postReport(t *testing.T, s *Server, body string) (int, string) {
	t.Helper()
	resp, err := http.Post("http://"+s.HTTPAddr()+"/v1/report", "application/json", strings.NewReader(body))
	must.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	return resp.StatusCode, string(out)
}

// TestReport_Commits reports samples as a trainer does: they are committed
// and stamped. Samples of a job that has ended are accepted and not kept.
func TestReport_Commits(t *testing.T) {
	leader := leaderOf(t, TestServer(t, TestConfig(t, simDriver(t, 1))))
	c := client(t, leader)
	_, _, err := c.Jobs().Register(demoJob(t, "rep"), nil)
	must.NoError(t, err)

	code, out := postReport(t, leader, `{"samples": [
		{"job_id": "rep", "step": 100001, "loss": 0.5, "num_ps": 1, "num_workers": 2},
		{"job_id": "rep", "step": 100002, "loss": 0.4, "checkpoint_step": 100002}]}`)
	must.Eq(t, 200, code, must.Sprint(out))
	must.StrContains(t, out, `"Accepted":2`)

	smps, err := state.Samples(leader.State().Txn(), nil, structs.DefaultNamespace, "rep")
	must.NoError(t, err)
	var steps []int64
	for _, smp := range smps.Samples {
		if smp.Step > 100000 {
			steps = append(steps, smp.Step)
			must.Positive(t, smp.Time, must.Sprint("the server stamps samples without a time"))
		}
	}
	must.Eq(t, []int64{100001, 100002}, steps)

	got, _, err := c.Jobs().Samples("rep", nil)
	must.NoError(t, err)
	must.Eq(t, smps.Samples, recode[[]structs.Sample](t, got.Samples), must.Sprint("GET /v1/job/rep/samples"))

	must.NoError(t, errOf(c.Jobs().Stop("rep", false, nil)))
	code, out = postReport(t, leader, `{"samples": [{"job_id": "rep", "step": 100003, "loss": 0.3}]}`)
	must.Eq(t, 200, code, must.Sprint(out))
	must.StrContains(t, out, `"Accepted":0`)
	after, err := state.Samples(leader.State().Txn(), nil, structs.DefaultNamespace, "rep")
	must.NoError(t, err)
	must.Eq(t, smps.Samples, after.Samples, must.Sprint("a stopped job's samples are not kept"))
}

// TestReport_UnknownJobBeforeEstablished: a leader that has not yet
// applied the log of earlier terms (as just after a restart) cannot tell
// an unknown job from one it has not replayed: it answers 503 with
// Retry-After, and nothing is kept; once established, the same report is
// a 404.
// notEstablished waits for the leader to establish its state, which marks
// it ready, and then takes readiness back, as if it had not yet: before,
// the leader loop could mark it ready again behind the test's back.
func notEstablished(t *testing.T, leader *Server) {
	t.Helper()
	agent.WaitFor(t, 10*time.Second, "the leader established", func() error {
		if !leader.establishedState() {
			return errors.New("not established yet")
		}
		return nil
	})
	leader.setReadyForReads(false)
}

func TestReport_UnknownJobBeforeEstablished(t *testing.T) {
	leader := leaderOf(t, TestServer(t, TestConfig(t, simDriver(t, 1))))
	report := `{"samples": [{"job_id": "later", "step": 3, "loss": 0.5}]}`

	notEstablished(t, leader)
	resp, err := http.Post("http://"+leader.HTTPAddr()+"/v1/report", "application/json", strings.NewReader(report))
	must.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	must.Eq(t, http.StatusServiceUnavailable, resp.StatusCode, must.Sprint(string(body)))
	must.Eq(t, "1", resp.Header.Get("Retry-After"))
	must.StrContains(t, string(body), `job "later" in namespace "default" is not known yet`)
	must.Eq(t, 0, len(committedSteps(t, leader, "later")))

	leader.setReadyForReads(true)
	code, out := postReport(t, leader, report)
	must.Eq(t, http.StatusNotFound, code, must.Sprint(out))
	must.StrContains(t, out, `job "later" in namespace "default" is not registered`)
}

// TestReport_ReporterRetriesUntilEstablished: a trainer's reporter
// (collector/client) keeps the samples a not yet established leader
// answered 503, and delivers them once the leader knows the job, as after
// a restart the leader replays the job's registration.
func TestReport_ReporterRetriesUntilEstablished(t *testing.T) {
	leader := leaderOf(t, TestServer(t, TestConfig(t, simDriver(t, 1))))
	rep, err := reporter.New(reporter.Config{Addrs: []string{leader.HTTPAddr()}, FlushInterval: time.Hour, RetryBackoff: time.Millisecond, Logger: testLogger(t)})
	must.NoError(t, err)
	t.Cleanup(func() {
		// Bounded: a failure below leaves the leader refusing reports,
		// which Close would retry until the test binary's timeout.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = rep.Close(ctx)
	})

	notEstablished(t, leader)
	rep.Report(structs.Sample{JobID: "later", Role: structs.RoleWorker, Step: 100001, Loss: 0.5, NumPS: 1, NumWorkers: 1})
	// Each flush gives up after 2 s, saying the last error; until the
	// reporter has had an answer (a loaded machine may take longer than
	// one flush), that is its own deadline. Up to 30 s in all.
	for start := time.Now(); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = rep.Flush(ctx)
		cancel()
		must.ErrorIs(t, err, context.DeadlineExceeded)
		if strings.Contains(err.Error(), "503") || time.Since(start) > 30*time.Second {
			break
		}
	}
	must.ErrorContains(t, err, "503")
	must.Eq(t, 1, rep.Pending(), must.Sprint("the sample stays buffered"))
	must.Eq(t, 0, rep.Dropped())

	_, _, err = client(t, leader).Jobs().Register(demoJob(t, "later"), nil)
	must.NoError(t, err)
	leader.setReadyForReads(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must.NoError(t, rep.Flush(ctx))
	must.Eq(t, 0, rep.Dropped())
	must.SliceContains(t, committedSteps(t, leader, "later"), int64(100001))
}

// TestReport_Idempotent: a report sent again (a retry after an ambiguous
// answer), through another server, is accepted again and stored once on
// every server; a sample repeated within a report is stored once too.
func TestReport_Idempotent(t *testing.T) {
	servers := cluster(t, 3, simDriver(t, 1))
	leader := leaderOf(t, servers...)
	_, _, err := client(t, leader).Jobs().Register(demoJob(t, "rep"), nil)
	must.NoError(t, err)
	agent.WaitFor(t, 10*time.Second, "every server's version recorded", func() error { return leader.supportsErr(fsm.SampleAppendType) })

	at := time.Now().UnixNano()
	report := fmt.Sprintf(`{"samples": [{"job_id": "rep", "step": 100001, "loss": 0.5, "time": %d}, {"job_id": "rep", "step": 100001, "loss": 0.5, "time": %d}]}`, at, at)
	for _, s := range servers {
		code, out := postReport(t, s, report)
		must.Eq(t, 200, code, must.Sprint(out))
		must.StrContains(t, out, `"Accepted":2`)
	}
	for _, s := range servers {
		agent.WaitFor(t, 10*time.Second, "the sample stored once on "+s.cfg.NodeName, func() error {
			// The simulated job reports steps of its own, far below.
			var reported []int64
			for _, step := range committedSteps(t, s, "rep") {
				if step > 100000 {
					reported = append(reported, step)
				}
			}
			if !slices.Equal(reported, []int64{100001}) {
				return fmt.Errorf("reported steps stored: %v", reported)
			}
			return nil
		})
	}
}

// committedSteps returns the steps of a job's committed samples, oldest
// first.
func committedSteps(t *testing.T, s *Server, id string) []int64 {
	t.Helper()
	js, err := state.Samples(s.State().Txn(), nil, structs.DefaultNamespace, id)
	must.NoError(t, err)
	var out []int64
	if js != nil {
		for _, smp := range js.Samples {
			out = append(out, smp.Step)
		}
	}
	return out
}

// feedSource is a MetricsSource that hands out the samples a test adds,
// each once.
type feedSource struct {
	mu      sync.Mutex
	pending []structs.Sample
}

func (f *feedSource) add(smps ...structs.Sample) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(f.pending, smps...)
}

func (f *feedSource) Samples(_ context.Context, cursor uint64) ([]structs.Sample, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pending) == 0 {
		return nil, cursor, nil
	}
	out := f.pending
	f.pending = nil
	return out, cursor + 1, nil
}

// TestReport_FutureSampleRefused: a sample stamped an hour ahead is
// refused with nothing stored, so the samples after it, from the metrics
// source and from reports, are still committed. (Had it been stored, the
// leader would drop every sample older than it as already committed.)
func TestReport_FutureSampleRefused(t *testing.T) {
	cfg := TestConfig(t, simDriver(t, 1))
	src := &feedSource{}
	cfg.Metrics = src
	s := leaderOf(t, TestServer(t, cfg))
	c := client(t, s)
	_, _, err := c.Jobs().Register(demoJob(t, "skew"), nil)
	must.NoError(t, err)
	// Placed, so the leader's scheduler takes the source's samples of it.
	agent.WaitFor(t, 20*time.Second, "job placed", jobStatus(t, c, "skew", structs.JobStatusRunning))

	steps := func() []int64 { return committedSteps(t, s, "skew") }
	future := time.Now().Add(time.Hour).UnixNano()
	code, out := postReport(t, s, fmt.Sprintf(`{"samples": [{"job_id": "skew", "step": 1, "loss": 1, "time": %d}]}`, future))
	must.Eq(t, 400, code, must.Sprint(out))
	// The server's clock is the simulated cluster's virtual time, which
	// can trail the test's wall clock: by a millisecond on a loaded
	// machine (1h0m0.001s).
	must.RegexMatch(t, regexp.MustCompile(`samples\[0\]: Time: is (59m59\.\d+s|1h0m0(\.\d+)?s) ahead of the receiver's clock; at most 1m0s is allowed`), out)
	must.SliceEmpty(t, steps(), must.Sprint("nothing of the refused report is stored"))

	src.add(structs.Sample{JobID: "skew", Step: 2, Loss: 0.9, StepTimeS: 0.1, NumPS: 1, NumWorkers: 1, Time: time.Now().UnixNano()})
	agent.WaitFor(t, 10*time.Second, "the source's sample committed", func() error {
		if got := steps(); !slices.Equal(got, []int64{2}) {
			return fmt.Errorf("steps %v", got)
		}
		return nil
	})
	code, out = postReport(t, s, `{"samples": [{"job_id": "skew", "step": 3, "loss": 0.8}]}`)
	must.Eq(t, 200, code, must.Sprint(out))
	must.StrContains(t, out, `"Accepted":1`)
	must.Eq(t, []int64{2, 3}, steps())
}

// changedDemoJob is demoJob(t, id) with another priority.
func changedDemoJob(t *testing.T, id string) *api.JobRegisterRequest {
	req := demoJob(t, id)
	req.JobHCL = strings.Replace(req.JobHCL, fmt.Sprintf("job %q {", id), fmt.Sprintf("job %q {\n  priority = 70", id), 1)
	return req
}

// TestJobRegister_Idempotent registers a running job's spec again, by POST
// and by PUT: nothing changes and the answer says so. Another spec is a new
// version.
func TestJobRegister_Idempotent(t *testing.T) {
	driver := simDriver(t, 1)
	s := TestServer(t, TestConfig(t, driver))
	leaderOf(t, s)
	c := client(t, s)
	ctx := context.Background()
	first, _, err := c.Jobs().Register(demoJob(t, "same"), (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	must.Eq(t, api.JobRegisterResponse{JobID: "same", Version: 0, Index: first.Index}, *first)
	agent.WaitFor(t, 20*time.Second, "job placed", jobStatus(t, c, "same", structs.JobStatusRunning))
	driver.Stop()
	before := dump(t, s.State(), stable...)
	events := func() int {
		evs, err := state.Events(s.State().Txn(), nil, 0)
		must.NoError(t, err)
		n := 0
		for _, e := range evs {
			if e.JobID == "same" && e.Type == structs.EventJobRegistered {
				n++
			}
		}
		return n
	}

	again, _, err := c.Jobs().Register(demoJob(t, "same"), (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	must.True(t, again.Unchanged)
	must.Eq(t, 0, again.Version)
	must.Greater(t, first.Index, again.Index)
	// The CLI sends the parsed job as JSON rather than HCL.
	job, _, err := c.Jobs().Info("same", nil)
	must.NoError(t, err)
	again, _, err = c.Jobs().Update("same", &api.JobRegisterRequest{Job: job}, (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	must.True(t, again.Unchanged)
	must.Eq(t, 0, again.Version)
	must.Eq(t, before, dump(t, s.State(), stable...), must.Sprint("an unchanged registration stores nothing"))
	must.Eq(t, 1, events())

	changed, _, err := c.Jobs().Update("same", changedDemoJob(t, "same"), (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	must.False(t, changed.Unchanged)
	must.Eq(t, 1, changed.Version)
	must.Eq(t, 2, events())
}

// TestJobRevert registers an earlier version's spec again as the next
// version; the current spec changes nothing.
func TestJobRevert(t *testing.T) {
	s := TestServer(t, TestConfig(t, simDriver(t, 1)))
	leaderOf(t, s)
	c := client(t, s)
	ctx := context.Background()
	_, _, err := c.Jobs().Register(demoJob(t, "rev"), (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	_, _, err = c.Jobs().Update("rev", changedDemoJob(t, "rev"), (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	version := func(n uint64) *structs.Job {
		vs, _, err := c.Jobs().Versions("rev", nil)
		must.NoError(t, err)
		for _, v := range vs {
			if v.Version == n {
				return recode[*structs.Job](t, v)
			}
		}
		t.Fatalf("job rev has no version %d", n)
		return nil
	}

	one := uint64(1)
	resp, _, err := c.Jobs().Revert("rev", &api.JobRevertRequest{Version: 0, EnforcePriorVersion: &one}, (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	must.Eq(t, api.JobRegisterResponse{JobID: "rev", Version: 2, Index: resp.Index}, *resp)
	must.False(t, version(0).SpecChanged(version(2)))
	must.Eq(t, 70, version(1).Priority)
	must.Eq(t, structs.DefaultPriority, version(2).Priority)
	must.Greater(t, version(1).SubmitTime, version(2).SubmitTime, must.Sprint("a revert is stamped anew"))

	resp, _, err = c.Jobs().Revert("rev", &api.JobRevertRequest{Version: 0}, (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	must.True(t, resp.Unchanged, must.Sprint("version 0's spec is the current one"))
	must.Eq(t, 2, resp.Version)

	cases := []struct {
		name, path, body string
		code             int
		msg              string
	}{
		{"unknown version", "/v1/job/rev/revert", `{"Version": 9}`, 404, "no version 9"},
		{"unknown job", "/v1/job/nope/revert", `{"Version": 0}`, 404, `job "nope"`},
		{"other namespace", "/v1/job/rev/revert?namespace=other", `{"Version": 0}`, 404, `job "rev"`},
		{"prior version", "/v1/job/rev/revert", `{"Version": 1, "EnforcePriorVersion": 1}`, 409, "current version is 2, not 1"},
		{"bad body", "/v1/job/rev/revert", `{"Version": "one"}`, 400, "not valid JSON"},
	}
	before := dump(t, s.State(), state.TableVersions)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post("http://"+s.HTTPAddr()+tc.path, "application/json", strings.NewReader(tc.body))
			must.NoError(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			must.Eq(t, tc.code, resp.StatusCode, must.Sprint(string(body)))
			must.StrContains(t, string(body), tc.msg)
		})
	}
	must.Eq(t, before, dump(t, s.State(), state.TableVersions), must.Sprint("no failed revert stored a version"))
}

func jsonOf(v any) ([]byte, error) {
	var buf bytes.Buffer
	err := writeJSON(&buf, v)
	return buf.Bytes(), err
}

func TestSnapshot_SaveWipeRestore(t *testing.T) {
	driver := simDriver(t, 50)
	s := TestServer(t, TestConfig(t, driver))
	leaderOf(t, s)
	c := client(t, s)
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		_, _, err := c.Jobs().Register(demoJob(t, id), (&api.WriteOptions{}).WithContext(ctx))
		must.NoError(t, err)
	}
	queuesWritable(t, s)
	_, _, err := c.Queues().Upsert([]*api.Queue{apiQueue("nlp", "nlp-*")}, (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	agent.WaitFor(t, 20*time.Second, "jobs placed", jobStatus(t, c, "b", structs.JobStatusRunning))
	driver.Stop() // no more samples
	var snap bytes.Buffer
	must.NoError(t, errOf(c.Operator().SnapshotSave(&snap, (&api.QueryOptions{}).WithContext(ctx))))
	want := dumpSnapshot(t, snap.Bytes())
	must.SliceNotEmpty(t, want)
	jobs, _, err := c.Jobs().List(nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, jobs)

	// Wipe: purge both jobs, delete the queue.
	for _, id := range []string{"a", "b"} {
		must.NoError(t, errOf(c.Jobs().Stop(id, true, (&api.WriteOptions{}).WithContext(ctx))))
	}
	must.NoError(t, errOf(c.Queues().Delete("nlp", (&api.WriteOptions{}).WithContext(ctx))))
	jobs, _, err = c.Jobs().List(nil)
	must.NoError(t, err)
	must.SliceEmpty(t, jobs)

	must.NoError(t, errOf(c.Operator().SnapshotRestore(bytes.NewReader(snap.Bytes()), (&api.WriteOptions{}).WithContext(ctx))))
	must.Eq(t, want, dump(t, s.State(), stable...))
	jobs, _, err = c.Jobs().List(nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, jobs)
	q, _, err := c.Queues().Info("nlp", nil)
	must.NoError(t, err)
	must.Eq(t, []string{"nlp-*"}, q.Namespaces, must.Sprint("the queue is back"))
}

// dumpSnapshot restores a saved snapshot into a fresh FSM and dumps its
// stable tables.
func dumpSnapshot(t *testing.T, buf []byte) []string {
	_, body, ok := bytes.Cut(buf, []byte("\n"))
	must.True(t, ok)
	f, err := fsm.New(TestConfig(t, nil).Logger, nil)
	must.NoError(t, err)
	must.NoError(t, f.Restore(io.NopCloser(bytes.NewReader(body))))
	return dump(t, f.State(), stable...)
}

func TestServer_RestartKeepsState(t *testing.T) {
	driver := simDriver(t, 50)
	cfg := TestConfig(t, driver)
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)
	_, _, err := c.Jobs().Register(demoJob(t, "a"), nil)
	must.NoError(t, err)
	queuesWritable(t, s)
	_, _, err = c.Queues().Upsert([]*api.Queue{apiQueue("nlp", "nlp-*")}, nil)
	must.NoError(t, err)
	agent.WaitFor(t, 20*time.Second, "job placed", jobStatus(t, c, "a", structs.JobStatusRunning))
	agent.WaitFor(t, 20*time.Second, "samples committed", func() error {
		js, err := state.Samples(s.State().Txn(), nil, structs.DefaultNamespace, "a")
		if err != nil || js == nil || len(js.Samples) == 0 {
			return fmt.Errorf("no samples of job a yet (%v)", err)
		}
		return nil
	})
	must.NoError(t, s.Shutdown())
	driver.Stop()
	// Samples the driver held at the shutdown are committed after the
	// restart: compare them apart.
	want := dump(t, s.State(), stable...)
	samples, err := state.Samples(s.State().Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	plan, err := state.LatestPlan(s.State().Txn(), nil)
	must.NoError(t, err)

	cfg.HTTPAddr = s.HTTPAddr()
	cfg.RaftAddr = s.RaftAddr()
	again := TestServer(t, cfg)
	must.Eq(t, s.ID(), again.ID(), must.Sprint("the node ID is kept in the data dir"))
	leaderOf(t, again)
	agent.WaitFor(t, 10*time.Second, "state replayed", func() error {
		p, err := state.LatestPlan(again.State().Txn(), nil)
		if err != nil || p == nil || p.Index < plan.Index {
			return fmt.Errorf("plan %d not replayed yet", plan.Index)
		}
		return nil
	})
	must.Eq(t, want, dump(t, again.State(), stable...))
	samples2, err := state.Samples(again.State().Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, samples.Samples, samples2.Samples[:len(samples.Samples)], must.Sprint("no sample lost or read twice"))
}

// TestWrites_AnswerTheirIndex: a write answers the Raft index it was
// committed at in X-Caravan-Index, as Nomad's writes answer X-Nomad-Index,
// the same index as its body's.
func TestWrites_AnswerTheirIndex(t *testing.T) {
	s := leaderOf(t, TestServer(t, TestConfig(t, simDriver(t, 1))))
	base := "http://" + s.HTTPAddr()
	src, err := os.ReadFile("../examples/demo.hcl")
	must.NoError(t, err)
	body, err := json.Marshal(structs.JobRegisterRequest{JobHCL: string(src), Filename: "demo.hcl"})
	must.NoError(t, err)
	for _, w := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/jobs", string(body)},
		{http.MethodPut, "/v1/operator/scheduler/configuration", `{"Algorithm": "fifo"}`},
		{http.MethodDelete, "/v1/job/demo", ""},
	} {
		req, err := http.NewRequest(w.method, base+w.path, strings.NewReader(w.body))
		must.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		must.NoError(t, err)
		var answer struct{ Index uint64 }
		err = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		must.NoError(t, err)
		must.Eq(t, http.StatusOK, resp.StatusCode)
		must.Positive(t, answer.Index, must.Sprintf("%s %s answers no index", w.method, w.path))
		must.Eq(t, strconv.FormatUint(answer.Index, 10), resp.Header.Get("X-Caravan-Index"), must.Sprintf("%s %s", w.method, w.path))
	}

}

// TestAPI_DeclaredTooLarge: a request whose Content-Length exceeds its
// route's limit is answered 413 at once, before "100 Continue", on every
// route; a snapshot restore takes more than other routes, so a body of a
// few megabytes gets "100 Continue" there.
func TestAPI_DeclaredTooLarge(t *testing.T) {
	s := TestServer(t, TestConfig(t, simDriver(t, 1)))
	leaderOf(t, s)
	cases := []struct {
		name, method, path string
		length             int64
		want               string // the first status line answered
	}{
		{"job register", "POST", "/v1/jobs", 5_000_000_000, "HTTP/1.1 413 Request Entity Too Large"},
		{"job plan", "POST", "/v1/jobs/plan", maxBodyBytes + 1, "HTTP/1.1 413 Request Entity Too Large"},
		{"report", "POST", "/v1/report", 5_000_000_000, "HTTP/1.1 413 Request Entity Too Large"},
		{"acl bootstrap", "POST", "/v1/acl/bootstrap", 5_000_000_000, "HTTP/1.1 413 Request Entity Too Large"},
		{"snapshot restore over its limit", "PUT", "/v1/operator/snapshot", maxSnapshotBytes + 1, "HTTP/1.1 413 Request Entity Too Large"},
		{"snapshot restore within its limit", "PUT", "/v1/operator/snapshot", 4 << 20, "HTTP/1.1 100 Continue"},
		{"job register within the limit", "POST", "/v1/jobs", 1000, "HTTP/1.1 100 Continue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", s.HTTPAddr())
			must.NoError(t, err)
			defer conn.Close()
			// A bound for a server that never answers, not a measure.
			must.NoError(t, conn.SetDeadline(time.Now().Add(20*time.Second)))
			_, err = fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n",
				tc.method, tc.path, s.HTTPAddr(), tc.length)
			must.NoError(t, err)
			line, err := bufio.NewReader(conn).ReadString('\n')
			must.NoError(t, err)
			must.Eq(t, tc.want, strings.TrimSpace(line))
		})
	}
}
