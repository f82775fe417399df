package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

// syncBuffer collects a server's logs to look for secrets in them.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

const testServerToken = "0123456789abcdef-server"

// aclConfig is TestConfig with ACLs on and trace logs into logs.
func aclConfig(t *testing.T, logs *syncBuffer) Config {
	cfg := TestConfig(t, simDriver(t, 1))
	cfg.ACL = ACLConfig{Enabled: true, ServerToken: testServerToken}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Trace, Output: logs})
	return cfg
}

func tokenClient(t *testing.T, s *Server, token string) *api.Client {
	c, err := api.NewClient(&api.Config{Address: s.HTTPAddr(), Token: token})
	must.NoError(t, err)
	return c
}

// status makes a request and returns its status and body.
func status(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	must.NoError(t, err)
	if token != "" {
		req.Header.Set("X-Caravan-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(out))
}

func TestACL_Server(t *testing.T) {
	var logs syncBuffer
	s := TestServer(t, aclConfig(t, &logs))
	leaderOf(t, s)
	ctx := context.Background()
	anon := client(t, s)

	// Before bootstrap nothing but the bootstrap is allowed.
	_, _, err := anon.Jobs().List(nil)
	must.True(t, api.IsForbidden(err), must.Sprint(err))
	root, _, err := anon.ACL().Bootstrap((&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	must.Eq(t, structs.ACLManagementToken, root.Type)
	must.NotEq(t, "", root.SecretID)
	_, _, err = anon.ACL().Bootstrap((&api.WriteOptions{}).WithContext(ctx))
	must.ErrorContains(t, err, "ACL bootstrap already done")

	mgmt := tokenClient(t, s, root.SecretID)
	_, _, err = mgmt.Jobs().Register(demoJob(t, "a"), (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)

	// Policies: a reader of default, a writer of ml, a reporter.
	for name, rules := range map[string]string{
		"reader":   `namespace "default" { policy = "read" }`,
		"ml":       `namespace "ml" { policy = "write" }` + "\noperator { policy = \"read\" }",
		"reporter": `namespace "*" { capabilities = ["report"] }`,
	} {
		_, _, err := mgmt.ACL().ApplyPolicy(name, &api.ACLPolicyRequest{Rules: rules}, (&api.WriteOptions{}).WithContext(ctx))
		must.NoError(t, err)
	}
	_, _, err = mgmt.ACL().ApplyPolicy("bad", &api.ACLPolicyRequest{Rules: "namespace \"x\" {\n  policy = \"admin\"\n}"}, (&api.WriteOptions{}).WithContext(ctx))
	must.ErrorContains(t, err, `bad.hcl:1:1: Invalid namespace policy; policy "admin"`)

	mk := func(policies ...string) *api.Client {
		tok, _, err := mgmt.ACL().CreateToken(&api.ACLTokenRequest{Name: strings.Join(policies, "+"), Policies: policies}, (&api.WriteOptions{}).WithContext(ctx))
		must.NoError(t, err)
		must.Eq(t, structs.ACLClientToken, tok.Type)
		return tokenClient(t, s, tok.SecretID)
	}
	reader, ml, reporter := mk("reader"), mk("ml"), mk("reporter")
	_, _, err = mgmt.ACL().CreateToken(&api.ACLTokenRequest{Policies: []string{"nope"}}, (&api.WriteOptions{}).WithContext(ctx))
	must.ErrorContains(t, err, "ACL policy not found")

	base := "http://" + s.HTTPAddr()
	report := func(ns string) string {
		return fmt.Sprintf(`{"samples":[{"job_id":"a","namespace":%q,"step":1,"loss":1,"step_time_s":0.5}]}`, ns)
	}
	cases := []struct {
		name         string
		client       *api.Client
		method, path string
		body         string
		code         int
		msg          string
	}{
		{"reader reads", reader, "GET", "/v1/job/a", "", 200, ""},
		{"reader lists", reader, "GET", "/v1/jobs", "", 200, ""},
		{"reader cannot stop", reader, "DELETE", "/v1/job/a", "", 403, "Permission denied: token lacks stop-job in namespace default"},
		{"reader cannot register", reader, "POST", "/v1/jobs", mustJSON(t, demoJob(t, "b")), 403, "Permission denied: token lacks submit-job in any namespace"},
		{"ml cannot register in default", ml, "POST", "/v1/jobs", mustJSON(t, demoJob(t, "b")), 403, "Permission denied: token lacks submit-job in namespace default"},
		{"ml cannot read default", ml, "GET", "/v1/job/a", "", 403, "Permission denied: token lacks read-job in namespace default"},
		{"ml reads operator", ml, "GET", "/v1/operator/scheduler/configuration", "", 200, ""},
		{"ml cannot change the algorithm", ml, "PUT", "/v1/operator/scheduler/configuration", `{"Algorithm":"drf"}`, 403, "Permission denied: token lacks operator write"},
		{"reader cannot join peers", reader, "POST", "/v1/operator/raft/join", `{"ID":"x","RaftAddr":"127.0.0.1:1"}`, 403, "is for the servers of this cluster only"},
		{"reader cannot snapshot", reader, "GET", "/v1/operator/snapshot", "", 403, "Permission denied: token lacks management"},
		{"reader cannot list tokens", reader, "GET", "/v1/acl/tokens", "", 403, "Permission denied: token lacks management"},
		{"reporter reports", reporter, "POST", "/v1/report", report("default"), 200, ""},
		{"reporter cannot register", reporter, "POST", "/v1/jobs", mustJSON(t, demoJob(t, "b")), 403, "Permission denied: token lacks submit-job in any namespace"},
		{"reporter cannot read", reporter, "GET", "/v1/job/a", "", 403, "read-job in namespace default"},
		{"reader cannot report", reader, "POST", "/v1/report", report("default"), 403, "Permission denied: token lacks report in any namespace"},
		{"ml cannot report to default", ml, "POST", "/v1/report", report("default"), 403, "Permission denied: token lacks report in namespace default"},
		{"anonymous is denied", anon, "GET", "/v1/job/a", "", 403, "Permission denied: anonymous request lacks read-job in namespace default"},
		{"unknown token", tokenClient(t, s, "not-a-token"), "GET", "/v1/job/a", "", 403, "ACL token not found"},
		{"leader status stays public", anon, "GET", "/v1/status/leader", "", 200, ""},
		{"health stays public", anon, "GET", "/v1/agent/health", "", 200, ""},
	}
	tokens := map[*api.Client]string{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok := tokens[tc.client]
			if tok == "" && tc.client != anon {
				self, _, err := tc.client.ACL().Self((&api.QueryOptions{}).WithContext(ctx))
				if err == nil {
					tok = self.SecretID
				} else {
					tok = "not-a-token"
				}
				tokens[tc.client] = tok
			}
			code, body := status(t, tc.method, base+tc.path, tok, tc.body)
			must.Eq(t, tc.code, code, must.Sprint(body))
			must.StrContains(t, body, tc.msg)
		})
	}

	// Listing jobs without a namespace lists the namespaces allowed.
	jobs, _, err := ml.Jobs().List(nil)
	must.NoError(t, err)
	must.SliceEmpty(t, jobs)

	// The anonymous policy applies to requests without a token.
	_, _, err = mgmt.ACL().ApplyPolicy(structs.AnonymousPolicy, &api.ACLPolicyRequest{Rules: `namespace "default" { capabilities = ["read-job"] }`}, (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	_, _, err = anon.Jobs().Info("a", nil)
	must.NoError(t, err)
	must.NoError(t, errOf(mgmt.ACL().DeletePolicy(structs.AnonymousPolicy, (&api.WriteOptions{}).WithContext(ctx))))
	_, _, err = anon.Jobs().Info("a", nil)
	must.True(t, api.IsForbidden(err))

	// Token management: stubs without secrets, self, delete.
	toks, _, err := mgmt.ACL().Tokens((&api.QueryOptions{}).WithContext(ctx))
	must.NoError(t, err)
	must.SliceLen(t, 4, toks)
	for _, tok := range toks {
		must.Eq(t, "", tok.SecretID)
	}
	self, _, err := reader.ACL().Self((&api.QueryOptions{}).WithContext(ctx))
	must.NoError(t, err)
	must.Eq(t, []string{"reader"}, self.Policies)
	must.NoError(t, errOf(mgmt.ACL().DeleteToken(self.AccessorID, (&api.WriteOptions{}).WithContext(ctx))))
	_, _, err = reader.Jobs().Info("a", nil)
	must.ErrorContains(t, err, "ACL token not found")

	// Snapshots need a management token.
	var snap bytes.Buffer
	must.True(t, api.IsForbidden(errOf(ml.Operator().SnapshotSave(&snap, (&api.QueryOptions{}).WithContext(ctx)))))
	must.NoError(t, errOf(mgmt.Operator().SnapshotSave(&snap, (&api.QueryOptions{}).WithContext(ctx))))
	_, err = ml.Operator().SnapshotRestore(bytes.NewReader(snap.Bytes()), (&api.WriteOptions{}).WithContext(ctx))
	must.True(t, api.IsForbidden(err), must.Sprint(err))
	must.NoError(t, errOf(mgmt.Operator().SnapshotRestore(bytes.NewReader(snap.Bytes()), (&api.WriteOptions{}).WithContext(ctx))))

	// Secrets are in no answer but the token's own, and in no log line.
	code, selfBody := status(t, "GET", base+"/v1/agent/self", root.SecretID, "")
	must.Eq(t, 200, code)
	must.StrNotContains(t, selfBody, root.SecretID)
	must.StrNotContains(t, selfBody, testServerToken)
	_, events := status(t, "GET", base+"/v1/events", root.SecretID, "")
	must.StrNotContains(t, events, root.SecretID)
	must.StrNotContains(t, logs.String(), root.SecretID)
	must.StrNotContains(t, logs.String(), self.SecretID)
	must.StrContains(t, logs.String(), root.AccessorID, must.Sprint("accessors may be logged"))
}

func TestACL_Disabled(t *testing.T) {
	s := TestServer(t, TestConfig(t, simDriver(t, 1)))
	leaderOf(t, s)
	_, _, err := client(t, s).ACL().Bootstrap(nil)
	must.ErrorContains(t, err, "ACL support disabled")
}

// aclCluster starts three servers with ACLs on, logging into logs, and
// returns the leader and a follower once every server has registered its
// HTTP address, so that followers can forward to the leader.
func aclCluster(t *testing.T, logs *syncBuffer) (leader, follower *Server, servers []*Server) {
	t.Helper()
	var addrs []string
	for _, port := range agent.FreePorts(t, 3) {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	for i := range 3 {
		cfg := aclConfig(t, logs)
		cfg.NodeName = fmt.Sprintf("server-%d", i+1)
		cfg.HTTPAddr, cfg.BootstrapExpect, cfg.RetryJoin = addrs[i], 3, addrs
		servers = append(servers, TestServer(t, cfg))
	}
	leader = leaderOf(t, servers...)
	for _, s := range servers {
		if s != leader {
			follower = s
		}
	}
	agent.WaitFor(t, 10*time.Second, "every server registered", func() error {
		if _, err := follower.leaderHTTP(); err != nil {
			return err
		}
		conf, err := leader.raftConfig()
		if err != nil {
			return err
		}
		for _, sv := range conf.Servers {
			if sv.HTTPAddr == "" {
				return fmt.Errorf("server %s has not registered its address", sv.ID)
			}
		}
		return nil
	})
	return leader, follower, servers
}

// TestACL_Cluster: servers join each other with the server token; a token
// created on the leader works on a follower at once (a follower that does
// not know it yet forwards the request to the leader); a follower refuses
// a snapshot restore without a management token.
func TestACL_Cluster(t *testing.T) {
	var logs syncBuffer
	leader, follower, _ := aclCluster(t, &logs)
	ctx := context.Background()
	root, _, err := client(t, follower).ACL().Bootstrap((&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err, must.Sprint("writes are forwarded to the leader"))
	// A follower checks a jobspec only for a caller who may submit it.
	for _, token := range []string{"", "not-a-token"} {
		code, body := status(t, "POST", "http://"+follower.HTTPAddr()+"/v1/jobs", token, `{"JobHCL": "job \"x\" { training { mode = \"synch\" } }"}`)
		must.Eq(t, 403, code, must.Sprintf("token %q: %s", token, body))
		must.StrNotContains(t, body, "synch")
	}
	mgmt := tokenClient(t, leader, root.SecretID)
	_, _, err = mgmt.ACL().ApplyPolicy("reader", &api.ACLPolicyRequest{Rules: `operator { policy = "read" }`}, (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	for i := range 20 {
		tok, _, err := mgmt.ACL().CreateToken(&api.ACLTokenRequest{Name: fmt.Sprint(i), Policies: []string{"reader"}}, (&api.WriteOptions{}).WithContext(ctx))
		must.NoError(t, err)
		_, _, err = tokenClient(t, follower, tok.SecretID).Operator().SchedulerConfig(nil)
		must.NoError(t, err, must.Sprintf("token %d on a follower", i))
	}
	_, _, err = tokenClient(t, follower, "unknown").Operator().SchedulerConfig(nil)
	must.ErrorContains(t, err, "ACL token not found")

	var snap bytes.Buffer
	must.NoError(t, errOf(tokenClient(t, follower, root.SecretID).Operator().SnapshotSave(&snap, (&api.QueryOptions{}).WithContext(ctx))))
	_, err = client(t, follower).Operator().SnapshotRestore(bytes.NewReader(snap.Bytes()), (&api.WriteOptions{}).WithContext(ctx))
	must.True(t, api.IsForbidden(err), must.Sprint(err))
	must.StrNotContains(t, logs.String(), testServerToken)
	must.StrNotContains(t, logs.String(), root.SecretID)
}

// TestACL_JobReportToken: a job's report token reports for that job and
// does nothing else; a forged or altered one is not found.
func TestACL_JobReportToken(t *testing.T) {
	var logs syncBuffer
	s := TestServer(t, aclConfig(t, &logs))
	leaderOf(t, s)
	ctx := context.Background()
	must.Eq(t, "", s.JobReportToken(structs.NewJobKey("default", "a")), must.Sprint("no token before bootstrap"))
	root, _, err := client(t, s).ACL().Bootstrap((&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)
	admin := tokenClient(t, s, root.SecretID)
	for _, id := range []string{"a", "b"} {
		_, _, err := admin.Jobs().Register(demoJob(t, id), (&api.WriteOptions{}).WithContext(ctx))
		must.NoError(t, err)
	}
	tok := s.JobReportToken(structs.NewJobKey("default", "a"))
	must.StrHasPrefix(t, reportTokenPrefix, tok)
	url := "http://" + s.HTTPAddr() + "/v1/report"
	report := func(job string) string {
		return fmt.Sprintf(`{"samples":[{"job_id":%q,"step":1,"loss":1,"step_time_s":0.1,"num_ps":1,"num_workers":1}]}`, job)
	}
	code, body := status(t, "POST", url, tok, report("a"))
	must.Eq(t, 200, code, must.Sprint(body))
	code, body = status(t, "POST", url, tok, report("b"))
	must.Eq(t, 403, code)
	must.StrContains(t, body, `report token of job a lacks report for job "b"`)
	code, _ = status(t, "GET", "http://"+s.HTTPAddr()+"/v1/jobs", tok, "")
	must.Eq(t, 403, code, must.Sprint("a report token reads nothing"))
	_, _, err = tokenClient(t, s, tok).Jobs().Register(demoJob(t, "c"), (&api.WriteOptions{}).WithContext(ctx))
	must.True(t, api.IsForbidden(err), must.Sprint(err))
	forged := strings.TrimSuffix(tok, tok[len(tok)-4:]) + "AAAA"
	code, body = status(t, "POST", url, forged, report("a"))
	must.Eq(t, 403, code)
	must.StrContains(t, body, "ACL token not found")
	must.StrNotContains(t, logs.String(), tok, must.Sprint("the token is never logged"))
}

// TestACL_BearerScheme: the Authorization scheme is case-insensitive, as
// RFC 9110 says; other schemes give no token.
func TestACL_BearerScheme(t *testing.T) {
	var logs syncBuffer
	s := TestServer(t, aclConfig(t, &logs))
	leaderOf(t, s)
	root, _, err := client(t, s).ACL().Bootstrap((&api.WriteOptions{}).WithContext(context.Background()))
	must.NoError(t, err)
	cases := []struct {
		name, header string
		code         int
	}{
		{"Bearer", "Bearer " + root.SecretID, http.StatusOK},
		{"lower case", "bearer " + root.SecretID, http.StatusOK},
		{"upper case", "BEARER " + root.SecretID, http.StatusOK},
		{"extra spaces", "  Bearer   " + root.SecretID + " ", http.StatusOK},
		{"another scheme", "Basic " + root.SecretID, http.StatusForbidden},
		{"no scheme", root.SecretID, http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", "http://"+s.HTTPAddr()+"/v1/acl/tokens", nil)
			must.NoError(t, err)
			req.Header.Set("Authorization", tc.header)
			resp, err := http.DefaultClient.Do(req)
			must.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			must.Eq(t, tc.code, resp.StatusCode, must.Sprint(string(body)))
		})
	}
}
