package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestCLI_PrefixesAndNamespace: commands take the start of a job's or a
// node's ID, as Nomad's; an ambiguous one lists the matches and exits 1;
// CARAVAN_NAMESPACE scopes the search and the list.
func TestCLI_PrefixesAndNamespace(t *testing.T) {
	addr := testAgent(t)
	cli := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		return logged(t, args)(runCLI(t, append(args[:len(args):len(args)], "-address", addr)...))
	}
	for _, id := range []string{"alpha-1", "alpha-2", "beta"} {
		code, _, errOut := runCLI(t, "job", "run", "-address", addr, "-detach", longJobFile(t, id))
		must.Eq(t, 0, code, must.Sprint(errOut))
	}

	code, out, errOut := runCLI(t, "job", "status", "-address", addr, "be")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^ID\s+= beta$`), out)

	code, _, errOut = runCLI(t, "job", "status", "-address", addr, "alpha")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `Prefix "alpha" matched multiple jobs`)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^alpha-1\s+default\s+\S+$`), errOut)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^alpha-2\s+default\s+\S+$`), errOut)

	code, out, errOut = runCLI(t, "job", "versions", "-address", addr, "alpha-2")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "first version")

	t.Setenv("CARAVAN_NAMESPACE", "other")
	code, out, _ = cli(t, "job", "status")
	must.Eq(t, 0, code)
	must.Eq(t, "No jobs\n", out)
	code, _, errOut = runCLI(t, "job", "status", "-address", addr, "be")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "404")
	code, out, errOut = runCLI(t, "job", "status", "-address", addr, "-namespace", "default", "be")
	must.Eq(t, 0, code, must.Sprint("-namespace overrides CARAVAN_NAMESPACE: ", errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^ID\s+= beta$`), out)

	code, out, errOut = runCLI(t, "node", "status", "-address", addr, "node-0")
	must.Eq(t, 1, code, must.Sprint(out))
	must.StrContains(t, errOut, `Prefix "node-0" matched multiple nodes`)
	code, out, errOut = runCLI(t, "node", "status", "-address", addr, "node-01")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^ID\s+= node-01$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^GPUs In Use\s+= \d of 4$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^nvidia/gpu/Tesla V100-SXM2-16GB\s+4\s+4\s+memory=16 GiB$`), out)
	code, _, errOut = runCLI(t, "node", "status", "-address", addr, "nope")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `No node with ID or name "nope"`)
}

// TestEvents_FollowReconnects: events -follow survives its agent going
// away and answering 503, and goes on after the last event it printed.
func TestEvents_FollowReconnects(t *testing.T) {
	var calls atomic.Int32
	var indexes []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		indexes = append(indexes, r.URL.Query().Get("index"))
		switch n {
		case 2: // the agent dies mid-request
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		case 3:
			http.Error(w, "no cluster leader", http.StatusServiceUnavailable)
			return
		}
		ev := &structs.Event{Seq: 1, Index: 5, Type: structs.EventJobRegistered, Namespace: "default", JobID: "x", Message: "registered"}
		if n > 3 {
			ev = &structs.Event{Seq: 2, Index: 7, Type: structs.EventJobCompleted, Namespace: "default", JobID: "x", Message: "converged"}
		}
		w.Header().Set("X-Caravan-Index", "5")
		if n > 3 {
			w.Header().Set("X-Caravan-Index", "7")
		}
		json.NewEncoder(w).Encode([]*structs.Event{ev})
	}))
	defer srv.Close()

	code, out, errOut := runCLI(t, "events", "-address", srv.URL, "-follow", "-until-done", "x", "-timeout", "20s")
	must.Eq(t, 0, code, must.Sprint(out, errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Time\s+Namespace\s+Job\s+Type\s+Message$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d\s+default\s+x\s+JobRegistered\s+registered$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d\s+default\s+x\s+JobCompleted\s+converged$`), out)
	must.StrContains(t, errOut, "trying again in")
	must.Eq(t, []string{"", "5", "5", "5"}, indexes, must.Sprint("each retry waits past the last event printed"))
}
