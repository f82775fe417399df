package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caravan-sched/caravan/api"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// fakeNomadAgent serves what job logs reads, as a Caravan agent (job
// "train", whose agent runs jobs in a Nomad cluster at the same address)
// and as that Nomad cluster (one running worker allocation), with logs
// the Nomad logs endpoint answers. It returns the address.
func fakeNomadAgent(t *testing.T, logs http.HandlerFunc) string {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	reply := func(v any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			must.NoError(t, json.NewEncoder(w).Encode(v))
		}
	}
	const allocID = "5a7c1f0e-0000-4000-8000-000000000001"
	mux.HandleFunc("GET /v1/jobs", reply([]*api.JobListStub{{ID: "train", Namespace: "default", Status: "running"}}))
	mux.HandleFunc("GET /v1/job/train/summary", reply(&api.JobSummary{Job: &api.Job{ID: "train", Namespace: "default", Status: "running"}}))
	mux.HandleFunc("GET /v1/agent/self", reply(&api.AgentSelf{Nomad: &api.NomadCluster{Address: srv.URL}}))
	mux.HandleFunc("GET /v1/job/caravan-train/allocations", reply([]*nomadapi.AllocationListStub{
		{ID: allocID, TaskGroup: "worker-n1", ClientStatus: "running", CreateTime: 1},
	}))
	mux.HandleFunc("GET /v1/allocation/"+allocID, reply(&nomadapi.Allocation{
		ID: allocID, TaskGroup: "worker-n1", TaskStates: map[string]*nomadapi.TaskState{"worker": {State: "running"}},
	}))
	mux.HandleFunc("GET /v1/client/fs/logs/"+allocID, logs)
	return srv.URL
}

// TestJobLogs_ExitCodes: job logs prints the task's logs and exits 0, and
// exits 1 whenever it prints an error reading them, whether Nomad refuses
// the request or the stream breaks after some logs (which it prints
// first).
func TestJobLogs_ExitCodes(t *testing.T) {
	t.Setenv("NOMAD_ADDR", "")
	frame := func(s string) string {
		b, err := json.Marshal(&nomadapi.StreamFrame{Data: []byte(s)})
		must.NoError(t, err)
		return string(b)
	}
	cases := []struct {
		name    string
		logs    http.HandlerFunc
		code    int
		out     string
		errPart string
	}{
		{"logs", func(w http.ResponseWriter, r *http.Request) {
			must.Eq(t, "worker", r.URL.Query().Get("task"))
			w.Write([]byte(frame("step 1\n") + frame("step 2\n")))
		}, 0, "step 1\nstep 2\n", ""},
		{"Nomad refuses", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "task \"worker\" not started yet", http.StatusBadRequest)
		}, 1, "", `Error reading the stdout of task "worker" in allocation 5a7c1f0e: `},
		{"stream breaks", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(frame("step 1\n") + `rpc error: EOF`))
		}, 1, "step 1\n", `Error reading the stdout of task "worker" in allocation 5a7c1f0e: failed to decode log endpoint response as JSON`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := fakeNomadAgent(t, tc.logs)
			code, out, errOut := runCLI(t, "job", "logs", "-address", addr, "train")
			must.Eq(t, tc.code, code, must.Sprint(errOut))
			must.Eq(t, tc.out, out)
			if tc.errPart == "" {
				must.Eq(t, "", errOut)
			} else {
				must.StrContains(t, errOut, tc.errPart)
			}
		})
	}
}
