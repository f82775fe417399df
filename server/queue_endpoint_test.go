package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/shoenig/test/must"
)

func apiQueue(name string, namespaces ...string) *api.Queue {
	lend := 4
	return &api.Queue{Name: name, Namespaces: namespaces, Cohort: "research",
		Quota: api.QueueQuota{GPU: []*api.GPUQuota{{Type: "A100", Nominal: 8, LendingLimit: &lend}}, CPU: 8000, MemoryMB: 32768}}
}

// queuesWritable waits until every server of s's cluster has recorded a
// version that applies queue entries (its member record is written just
// after it leads).
func queuesWritable(t *testing.T, s *Server) {
	t.Helper()
	agent.WaitFor(t, 10*time.Second, "queue writes supported", func() error { return s.supportsErr(fsm.QueueUpsertType) })
}

func queueNames(qs []*api.Queue) []string {
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.Name
	}
	return names
}

// TestQueues_API: queues are created, listed (by name, with ?prefix=),
// read, replaced and deleted; a blocking list wakes up on a change; the
// same queues again change nothing.
func TestQueues_API(t *testing.T) {
	s := TestServer(t, TestConfig(t, simDriver(t, 1)))
	leaderOf(t, s)
	queuesWritable(t, s)
	c := client(t, s)
	ctx := context.Background()
	wo := (&api.WriteOptions{}).WithContext(ctx)

	resp, wm, err := c.Queues().Upsert([]*api.Queue{apiQueue("nlp", "nlp", "nlp-*"), apiQueue("cv", "cv")}, wo)
	must.NoError(t, err)
	must.Eq(t, []string{"nlp", "cv"}, queueNames(resp.Queues), must.Sprint("as stored, in the request's order"))
	must.Eq(t, 1.0, resp.Queues[0].Weight, must.Sprint("canonical"))
	must.Eq(t, resp.Index, resp.Queues[0].ModifyIndex)
	must.Eq(t, resp.Index, wm.LastIndex, must.Sprint("the index in X-Caravan-Index"))

	list, qm, err := c.Queues().List(nil)
	must.NoError(t, err)
	must.Eq(t, []string{"cv", "nlp"}, queueNames(list))
	must.Eq(t, resp.Index, qm.LastIndex)
	list, _, err = c.Queues().List(&api.QueryOptions{Prefix: "n"})
	must.NoError(t, err)
	must.Eq(t, []string{"nlp"}, queueNames(list))

	nlp, _, err := c.Queues().Info("nlp", nil)
	must.NoError(t, err)
	must.Eq(t, []string{"nlp", "nlp-*"}, nlp.Namespaces)
	must.Eq(t, 4, *nlp.Quota.GPU[0].LendingLimit)
	_, _, err = c.Queues().Info("nope", nil)
	must.True(t, api.IsNotFound(err), must.Sprint(err))

	// The same queues again: nothing changes, the queues' index stays.
	_, _, err = c.Queues().Upsert([]*api.Queue{apiQueue("nlp", "nlp", "nlp-*")}, wo)
	must.NoError(t, err)
	must.Eq(t, resp.Index, s.State().Index(state.TableQueues))

	// A blocking list waits for the next change.
	woke := make(chan []*api.Queue, 1)
	go func() {
		qs, _, err := c.Queues().List(&api.QueryOptions{WaitIndex: qm.LastIndex, WaitTime: time.Minute})
		if err != nil {
			t.Error(err)
		}
		woke <- qs
	}()
	bigger := apiQueue("cv", "cv")
	bigger.Quota.GPU[0].Nominal = 16
	_, _, err = c.Queues().Upsert([]*api.Queue{bigger}, wo)
	must.NoError(t, err)
	select {
	case qs := <-woke:
		must.Eq(t, 16, qs[0].Quota.GPU[0].Nominal)
		must.Eq(t, list[0].CreateIndex, qs[0].CreateIndex, must.Sprint("a replaced queue keeps its CreateIndex"))
	case <-time.After(30 * time.Second):
		t.Fatal("the blocking list did not wake up")
	}

	_, err = c.Queues().Delete("cv", wo)
	must.NoError(t, err)
	list, _, err = c.Queues().List(nil)
	must.NoError(t, err)
	must.Eq(t, []string{"nlp"}, queueNames(list))
	_, err = c.Queues().Delete("cv", wo)
	must.True(t, api.IsNotFound(err), must.Sprint(err))
}

// TestQueues_BadInput: hostile and invalid bodies are answered with what
// is wrong (the field's path) and leave the queues, and the Raft log, as
// they were.
func TestQueues_BadInput(t *testing.T) {
	driver := simDriver(t, 1)
	s := TestServer(t, TestConfig(t, driver))
	leaderOf(t, s)
	queuesWritable(t, s)
	c := client(t, s)
	_, _, err := c.Queues().Upsert([]*api.Queue{apiQueue("nlp", "nlp", "nlp-*")}, nil)
	must.NoError(t, err)
	before := dump(t, s.State(), state.TableQueues)
	index := s.State().Index(state.TableQueues)

	var many strings.Builder
	many.WriteString(`{"Queues": [`)
	for i := range 257 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `{"Name": "q%d", "Namespaces": ["ns%d"]}`, i, i)
	}
	many.WriteString(`]}`)
	cases := []struct {
		name, method, path, body string
		code                     int
		msg                      string
	}{
		{"huge", "PUT", "/v1/queues", `{"Queues": [{"Name": "x", "Namespaces": ["` + strings.Repeat("a", maxBodyBytes) + `"]}]}`, 413, "larger than"},
		{"wrong types", "PUT", "/v1/queues", `{"Queues": [{"Name": 7, "Namespaces": "x"}]}`, 400, "not valid JSON"},
		{"unknown field", "POST", "/v1/queues", `{"Queues": [{"Nme": "x"}]}`, 400, "unknown field"},
		{"deep", "PUT", "/v1/queues", strings.Repeat("[", 200) + strings.Repeat("]", 200), 400, "nests"},
		{"no queues", "PUT", "/v1/queues", `{}`, 400, "no Queues"},
		{"null queue", "PUT", "/v1/queues", `{"Queues": [null]}`, 400, "queue[0]: is required"},
		{"invalid field", "PUT", "/v1/queues", `{"Queues": [{"Name": "ok", "Namespaces": ["ok"]}, {"Name": "bad", "Namespaces": ["b"], "Quota": {"GPU": [{"Type": "A100", "Nominal": 2, "LendingLimit": 3}]}}]}`,
			400, "queue[1].quota.gpu[0].lending_limit: 3 is more than the nominal 2"},
		{"every problem", "PUT", "/v1/queues", `{"Queues": [{"Weight": -1, "Namespaces": ["["]}]}`, 400, "queue[0].name: is required\nqueue[0].namespaces[0]: \"[\" is not a namespace"},
		{"namespace of another queue", "PUT", "/v1/queues", `{"Queues": [{"Name": "ok", "Namespaces": ["ok"]}, {"Name": "cv", "Namespaces": ["cv", "nlp-*"]}]}`, 409, `"nlp-*" is queue "nlp"'s already`},
		{"conflict within the request", "PUT", "/v1/queues", `{"Queues": [{"Name": "a", "Namespaces": ["x"]}, {"Name": "b", "Namespaces": ["x"]}]}`, 409, `"x" is queue "a"'s already`},
		{"too many", "PUT", "/v1/queues", many.String(), 400, "257 queues in one request"},
		{"too many namespaces", "PUT", "/v1/queues", `{"Queues": [{"Name": "wide", "Namespaces": [` + strings.Repeat(`"n",`, state.MaxQueueNamespaces) + `"n"]}]}`, 400, "queue[0].namespaces: 257 namespaces"},
		{"unknown queue", "GET", "/v1/queue/nope", "", 404, `queue "nope" not found`},
		{"delete unknown queue", "DELETE", "/v1/queue/nope", "", 404, `queue "nope" not found`},
		{"wrong method on the list", "DELETE", "/v1/queues", "", 405, "use GET or PUT or POST"},
		{"wrong method on a queue", "PUT", "/v1/queue/nlp", "", 405, "use GET or DELETE"},
		{"bad index", "GET", "/v1/queues?index=x", "", 400, "index"},
		{"bad filter", "GET", "/v1/queues?filter=Name+%3D%3D", "", 400, "is not a valid expression"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := status(t, tc.method, "http://"+s.HTTPAddr()+tc.path, "", tc.body)
			must.Eq(t, tc.code, code, must.Sprint(body))
			must.StrContains(t, body, tc.msg)
		})
	}
	must.Eq(t, before, dump(t, s.State(), state.TableQueues), must.Sprint("no bad request changed the queues"))
	must.Eq(t, index, s.State().Index(state.TableQueues))
}

// TestQueues_ACL: a queue rule governs the queues; a token without it, or
// with read only, is refused with 403 before its body is read, and
// changes nothing.
func TestQueues_ACL(t *testing.T) {
	var logs syncBuffer
	s := TestServer(t, aclConfig(t, &logs))
	leaderOf(t, s)
	queuesWritable(t, s)
	ctx := context.Background()
	wo := (&api.WriteOptions{}).WithContext(ctx)
	root, _, err := client(t, s).ACL().Bootstrap(wo)
	must.NoError(t, err)
	mgmt := tokenClient(t, s, root.SecretID)
	tokens := map[string]string{}
	for name, rules := range map[string]string{
		"qread":  `queue { policy = "read" }`,
		"qwrite": `queue { policy = "write" }`,
		"ns":     `namespace "*" { policy = "write" }` + "\noperator { policy = \"write\" }",
	} {
		_, _, err := mgmt.ACL().ApplyPolicy(name, &api.ACLPolicyRequest{Rules: rules}, wo)
		must.NoError(t, err)
		tok, _, err := mgmt.ACL().CreateToken(&api.ACLTokenRequest{Name: name, Policies: []string{name}}, wo)
		must.NoError(t, err)
		tokens[name] = tok.SecretID
	}
	_, _, err = tokenClient(t, s, tokens["qwrite"]).Queues().Upsert([]*api.Queue{apiQueue("nlp", "nlp")}, wo)
	must.NoError(t, err)
	before := dump(t, s.State(), state.TableQueues)

	url := "http://" + s.HTTPAddr()
	body := `{"Queues": [{"Name": "cv", "Namespaces": ["cv"]}]}`
	hostile := `{"Queues": [{"Name": 7}]}`
	cases := []struct {
		name, token, method, path, body string
		code                            int
	}{
		{"anonymous list", "", "GET", "/v1/queues", "", 403},
		{"namespace writer list", tokens["ns"], "GET", "/v1/queues", "", 403},
		{"namespace writer upsert", tokens["ns"], "PUT", "/v1/queues", body, 403},
		{"reader list", tokens["qread"], "GET", "/v1/queues", "", 200},
		{"reader info", tokens["qread"], "GET", "/v1/queue/nlp", "", 200},
		{"reader upsert", tokens["qread"], "PUT", "/v1/queues", body, 403},
		{"reader hostile upsert", tokens["qread"], "PUT", "/v1/queues", hostile, 403},
		{"reader delete", tokens["qread"], "DELETE", "/v1/queue/nlp", "", 403},
		{"unknown token", "nope", "PUT", "/v1/queues", body, 403},
		{"writer hostile upsert", tokens["qwrite"], "PUT", "/v1/queues", hostile, 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out := status(t, tc.method, url+tc.path, tc.token, tc.body)
			must.Eq(t, tc.code, code, must.Sprint(out))
			if tc.code == http.StatusForbidden && tc.token != "nope" {
				must.StrContains(t, out, "Permission denied")
			}
		})
	}
	must.Eq(t, before, dump(t, s.State(), state.TableQueues), must.Sprint("no refused request changed the queues"))

	_, err = tokenClient(t, s, tokens["qwrite"]).Queues().Delete("nlp", wo)
	must.NoError(t, err)
	_, _, err = mgmt.Queues().Upsert([]*api.Queue{apiQueue("cv", "cv")}, wo)
	must.NoError(t, err, must.Sprint("management may do everything"))
}

// TestQueues_ThroughFollower: a follower forwards queue writes to the
// leader, and every server applies them: a stale read on the follower
// that blocks on the write's index answers the queue from its own state.
func TestQueues_ThroughFollower(t *testing.T) {
	servers := cluster(t, 3, simDriver(t, 1))
	leader := leaderOf(t, servers...)
	var follower *Server
	for _, s := range servers {
		if s != leader {
			follower = s
			break
		}
	}
	queuesWritable(t, leader)
	c := client(t, follower)
	resp, _, err := c.Queues().Upsert([]*api.Queue{apiQueue("nlp", "nlp-*")}, nil)
	must.NoError(t, err)
	qs, qm, err := c.Queues().List(&api.QueryOptions{AllowStale: true, WaitIndex: resp.Index - 1, WaitTime: 30 * time.Second})
	must.NoError(t, err)
	must.Eq(t, []string{"nlp"}, queueNames(qs))
	must.GreaterEq(t, resp.Index, qm.LastIndex)
	_, err = c.Queues().Delete("nlp", nil)
	must.NoError(t, err)
	for _, s := range servers {
		agent.WaitFor(t, 10*time.Second, "the delete replicated", func() error {
			if q, _ := state.QueueByName(s.State().Txn(), nil, "nlp"); q != nil {
				return fmt.Errorf("%s still holds queue nlp", s.cfg.NodeName)
			}
			return nil
		})
	}
}
