package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestAPI_Lists: the list endpoints take prefix, filter (go-bexpr),
// per_page and next_token as Nomad's, a job's stub says what runs of it
// and on which GPU types, GET /v1/node/<id> what runs on a node, and the
// events' index is a Raft index.
func TestAPI_Lists(t *testing.T) {
	driver := simDriver(t, 1)
	s := TestServer(t, TestConfig(t, driver))
	leaderOf(t, s)
	c := client(t, s)
	ctx := context.Background()
	var last *api.JobRegisterResponse
	for _, id := range []string{"a1", "a2", "b"} {
		resp, _, err := c.Jobs().Register(gpuJob(t, id), (&api.WriteOptions{}).WithContext(ctx))
		must.NoError(t, err)
		last = resp
	}
	agent.WaitFor(t, 20*time.Second, "job placed", jobStatus(t, c, "b", structs.JobStatusRunning))

	ids := func(stubs []*api.JobListStub) []string {
		out := []string{}
		for _, s := range stubs {
			out = append(out, s.ID)
		}
		return out
	}
	jobs, _, err := c.Jobs().List(&api.QueryOptions{Prefix: "a"})
	must.NoError(t, err)
	must.Eq(t, []string{"a1", "a2"}, ids(jobs))

	jobs, meta, err := c.Jobs().List(&api.QueryOptions{PerPage: 2})
	must.NoError(t, err)
	must.Eq(t, []string{"a1", "a2"}, ids(jobs))
	must.Eq(t, "default.b", meta.NextToken)
	jobs, meta, err = c.Jobs().List(&api.QueryOptions{PerPage: 2, NextToken: meta.NextToken})
	must.NoError(t, err)
	must.Eq(t, []string{"b"}, ids(jobs))
	must.Eq(t, "", meta.NextToken)
	jobs, _, err = c.Jobs().List(&api.QueryOptions{Reverse: true})
	must.NoError(t, err)
	must.Eq(t, []string{"b", "a2", "a1"}, ids(jobs))

	// Newest first, a page at a time, by submit time.
	newest := &api.QueryOptions{Sort: "submit_time", Reverse: true, PerPage: 2}
	jobs, meta, err = c.Jobs().List(newest)
	must.NoError(t, err)
	must.Eq(t, []string{"b", "a2"}, ids(jobs))
	a1, _, err := c.Jobs().Info("a1", nil)
	must.NoError(t, err)
	must.Eq(t, fmt.Sprintf("%020d.default.a1", a1.SubmitTime), meta.NextToken)
	newest.NextToken = meta.NextToken
	jobs, meta, err = c.Jobs().List(newest)
	must.NoError(t, err)
	must.Eq(t, []string{"a1"}, ids(jobs))
	must.Eq(t, "", meta.NextToken)
	_, _, err = c.Jobs().List(&api.QueryOptions{Sort: "size"})
	must.ErrorContains(t, err, `sort="size" is not an order of jobs`)

	jobs, _, err = c.Jobs().List(&api.QueryOptions{Filter: `ID == "b" and Status == "running"`})
	must.NoError(t, err)
	must.SliceLen(t, 1, jobs)
	b := jobs[0]
	must.Eq(t, "b", b.ID)
	must.Positive(t, b.NumWorkers)
	must.Positive(t, b.Nodes)
	must.Eq(t, b.NumWorkers+b.NumPS, b.GPUs, must.Sprint("each task asks for a GPU, the ps does not run", b))
	must.Eq(t, []string{sim.DefaultGPUModel.Name}, b.GPUTypes, must.Sprint("the type of the simulated nodes"))

	// The node detail counts the GPUs the tasks there use.
	nodes, _, err := c.Nodes(&api.QueryOptions{Prefix: "node-0", PerPage: 1})
	must.NoError(t, err)
	must.SliceLen(t, 1, nodes)
	must.Eq(t, "node-00", nodes[0].ID)
	var used int
	all, _, err := c.Nodes(nil)
	must.NoError(t, err)
	for _, n := range all {
		d, _, err := c.Node(n.ID, nil)
		must.NoError(t, err)
		must.Eq(t, 4, d.GPUsTotal)
		for _, tk := range d.Tasks {
			must.Positive(t, tk.PS+tk.Workers)
		}
		used += d.GPUsUsed
	}
	must.Positive(t, used)
	_, _, err = c.Node("nope", nil)
	must.True(t, api.IsNotFound(err))

	// ?index= of the events is a Raft index: the events after the last
	// registration are those of later applies only.
	evs, meta, err := c.Events("", nil)
	must.NoError(t, err)
	must.SliceNotEmpty(t, evs)
	must.Eq(t, evs[len(evs)-1].Index, meta.LastIndex)
	after, _, err := c.Events("", &api.QueryOptions{WaitIndex: last.Index, WaitTime: time.Millisecond})
	must.NoError(t, err)
	for _, e := range after {
		must.Greater(t, last.Index, e.Index)
	}
	regs, _, err := c.Events("", &api.QueryOptions{Filter: `Type == "JobRegistered"`})
	must.NoError(t, err)
	must.SliceLen(t, 3, regs)
	other, _, err := c.Events("b", &api.QueryOptions{Namespace: "other"})
	must.NoError(t, err)
	must.SliceEmpty(t, other)

	// /v1/metrics has a series per job, with help text.
	resp, err := http.Get("http://" + s.HTTPAddr() + "/v1/metrics")
	must.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	must.NoError(t, err)
	must.StrContains(t, string(body), "# HELP caravan_job_gpus GPU instances the job's running tasks request.")
	must.RegexMatch(t, regexp.MustCompile(`(?m)^caravan_job_gpus\{job="b",namespace="default"\} [1-9]`), string(body))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^caravan_job_workers\{job="a1",namespace="default"\} \d`), string(body))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^caravan_job_rescales\{job="b",namespace="default"\} \d`), string(body))
	// go-metrics' series have help text; Raft's share the sink, and every
	// request is measured by its route's pattern.
	must.StrContains(t, string(body), "# HELP caravan_http_request Time to answer an HTTP API request")
	must.RegexMatch(t, regexp.MustCompile(`(?m)^caravan_http_request_count\{code="200",method="GET",route="GET /v1/jobs"\} [1-9]`), string(body))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^caravan_raft_\w+`), string(body))
	must.StrContains(t, string(body), "# HELP caravan_leader_plan Time the algorithm in force")
	must.RegexMatch(t, regexp.MustCompile(`(?m)^caravan_leader_plan_count\{algorithm="\w+"\} [1-9]`), string(body))
}

// TestAPI_MethodNotAllowed: a path served by other methods answers 405
// with Allow, as Nomad's.
func TestAPI_MethodNotAllowed(t *testing.T) {
	s := TestServer(t, TestConfig(t, simDriver(t, 1)))
	leaderOf(t, s)
	req, err := http.NewRequest(http.MethodPatch, "http://"+s.HTTPAddr()+"/v1/jobs", nil)
	must.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusMethodNotAllowed, resp.StatusCode)
	must.Eq(t, "GET, POST", resp.Header.Get("Allow"))
}

// gpuJob is demoJob with tasks that ask for a GPU each.
func gpuJob(t *testing.T, id string) *api.JobRegisterRequest {
	req := demoJob(t, id)
	must.StrContains(t, req.JobHCL, "memory = 64")
	req.JobHCL = strings.Replace(req.JobHCL, "memory = 64", "memory = 64\n      device \"nvidia/gpu\" { count = 1 }", 1)
	return req
}
