package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/shoenig/test/must"
)

// gpuRow returns the one GPU row of a queue's usage.
func gpuRow(t *testing.T, q *api.Queue) api.QueueResource {
	t.Helper()
	must.NotNil(t, q.Usage, must.Sprintf("queue %q has no usage", q.Name))
	var rows []api.QueueResource
	for _, r := range q.Usage.Resources {
		if r.IsGPU() {
			rows = append(rows, r)
		}
	}
	must.SliceLen(t, 1, rows, must.Sprintf("queue %q: %+v", q.Name, q.Usage.Resources))
	return rows[0]
}

// TestQueueUsage_BorrowLendPending runs queues a and b of one cohort with
// 8 GPUs each on 16 simulated GPUs, and c, outside it, with none: a's
// job borrows b's 8 idle GPUs, which b lends, and c's job waits for the
// 2 GPUs of its minimum. The queue reads answer that usage, and
// /v1/metrics has it per queue and resource.
func TestQueueUsage_BorrowLendPending(t *testing.T) {
	cfg := TestConfig(t, simDriver(t, 500))
	cfg.Algorithm = "fifo"
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)
	waitCommittedNodes(t, c, 4)
	queue := func(name, cohort string, nominal int) *api.Queue {
		return &api.Queue{Name: name, Namespaces: []string{"team-" + name}, Cohort: cohort,
			Quota: api.QueueQuota{GPU: []*api.GPUQuota{{Type: "*", Nominal: nominal}}}}
	}
	given := queue("c", "", 0)
	given.Usage = &api.QueueUsage{PendingJobs: 7} // an answer's, applied back
	_, _, err := c.Queues().Upsert([]*api.Queue{queue("a", "lab", 8), queue("b", "lab", 8), given}, nil)
	must.NoError(t, err)
	stored, err := state.QueueByName(s.State().Txn(), nil, "c")
	must.NoError(t, err)
	must.Nil(t, stored.Usage, must.Sprint("usage is never stored"))
	_, _, err = c.Jobs().Register(TestQueueJob("big", "team-a", 1, 16), &api.WriteOptions{Namespace: "team-a"})
	must.NoError(t, err)
	_, _, err = c.Jobs().Register(TestQueueJob("waiting", "team-c", 2, 4), &api.WriteOptions{Namespace: "team-c"})
	must.NoError(t, err)

	var a *api.Queue
	agent.WaitFor(t, 20*time.Second, "queue a's job on 16 GPUs, c's decided", func() error {
		var err error
		if a, _, err = c.Queues().Info("a", nil); err != nil {
			return err
		}
		cq, _, err := c.Queues().Info("c", nil)
		if err != nil {
			return err
		}
		if a.Usage == nil || len(a.Usage.Resources) == 0 || a.Usage.Resources[0].Used != 16 ||
			len(cq.Usage.Jobs) == 0 || cq.Usage.Jobs[0].Reason == "" {
			return fmt.Errorf("queue a: %+v; c: %+v", a.Usage, cq.Usage)
		}
		return nil
	})
	row := gpuRow(t, a)
	must.Eq(t, "*", row.Quota)
	must.Eq(t, api.QueueResource{Resource: row.Resource, Quota: "*", Nominal: 8, Used: 16, Borrowed: 8}, row)
	must.Eq(t, 0, a.Usage.PendingJobs)
	must.SliceLen(t, 1, a.Usage.Jobs)
	must.Eq(t, api.QueueJob{Namespace: "team-a", ID: "big", Status: a.Usage.Jobs[0].Status, Workers: 16, Reason: a.Usage.Jobs[0].Reason}, *a.Usage.Jobs[0])

	b, _, err := c.Queues().Info("b", nil)
	must.NoError(t, err)
	must.Eq(t, api.QueueResource{Resource: row.Resource, Quota: "*", Nominal: 8, Lent: 8}, gpuRow(t, b))
	must.SliceEmpty(t, b.Usage.Jobs)

	cq, _, err := c.Queues().Info("c", nil)
	must.NoError(t, err)
	must.Eq(t, api.QueueResource{Resource: row.Resource, Quota: "*", Pending: 2}, gpuRow(t, cq))
	must.Eq(t, 1, cq.Usage.PendingJobs)
	must.SliceLen(t, 1, cq.Usage.Jobs)
	must.True(t, cq.Usage.Jobs[0].Pending)
	must.Eq(t, 0, cq.Usage.Jobs[0].Workers)
	t.Logf("c's job waits: %s", cq.Usage.Jobs[0].Reason)

	list, _, err := c.Queues().List(nil)
	must.NoError(t, err)
	must.SliceLen(t, 3, list)
	for _, q := range list {
		must.SliceEmpty(t, q.Usage.Jobs, must.Sprint("the list does not list jobs"))
	}
	must.Eq(t, row, gpuRow(t, list[0]))
	must.Eq(t, 8, gpuRow(t, list[1]).Lent)
	must.Eq(t, 2, gpuRow(t, list[2]).Pending)

	// /v1/metrics has the same usage, a series per queue and resource.
	resp, err := http.Get("http://" + s.HTTPAddr() + "/v1/metrics")
	must.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	must.NoError(t, err)
	must.StrContains(t, string(body), "# HELP caravan_queue_lent The part of the queue's idle nominal quota")
	for _, want := range []struct {
		series, queue string
		value         int
	}{
		{"nominal", "a", 8}, {"used", "a", 16}, {"borrowed", "a", 8}, {"lent", "a", 0}, {"pending", "a", 0},
		{"nominal", "b", 8}, {"used", "b", 0}, {"lent", "b", 8},
		{"nominal", "c", 0}, {"pending", "c", 2},
	} {
		line := fmt.Sprintf(`caravan_queue_%s{queue=%q,resource=%q} %d`, want.series, want.queue, row.Resource, want.value)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(line)+`$`), string(body))
	}
}

// TestQueueUsage_ACL: a queue reader sees a queue's totals, and of its
// jobs only those of the namespaces it may list jobs of.
func TestQueueUsage_ACL(t *testing.T) {
	var logs syncBuffer
	s := TestServer(t, aclConfig(t, &logs))
	leaderOf(t, s)
	queuesWritable(t, s)
	wo := (&api.WriteOptions{}).WithContext(context.Background())
	root, _, err := client(t, s).ACL().Bootstrap(wo)
	must.NoError(t, err)
	mgmt := tokenClient(t, s, root.SecretID)
	tokens := map[string]string{}
	for name, rules := range map[string]string{
		"qread":     `queue { policy = "read" }`,
		"qread-nlp": `queue { policy = "read" }` + "\n" + `namespace "nlp" { policy = "read" }`,
	} {
		_, _, err := mgmt.ACL().ApplyPolicy(name, &api.ACLPolicyRequest{Rules: rules}, wo)
		must.NoError(t, err)
		tok, _, err := mgmt.ACL().CreateToken(&api.ACLTokenRequest{Name: name, Policies: []string{name}}, wo)
		must.NoError(t, err)
		tokens[name] = tok.SecretID
	}
	_, _, err = mgmt.Queues().Upsert([]*api.Queue{apiQueue("lab", "nlp", "cv")}, wo)
	must.NoError(t, err)
	for _, ns := range []string{"nlp", "cv"} {
		_, _, err := mgmt.Jobs().Register(TestQueueJob("j-"+ns, ns, 1, 2), &api.WriteOptions{Namespace: ns})
		must.NoError(t, err)
	}
	jobs := func(token string) (int, []string) {
		q, _, err := tokenClient(t, s, token).Queues().Info("lab", nil)
		must.NoError(t, err)
		must.NotNil(t, q.Usage)
		var ids []string
		for _, j := range q.Usage.Jobs {
			ids = append(ids, j.ID)
		}
		slices.Sort(ids) // pending first: whether placed yet or not
		return len(q.Usage.Resources), ids
	}
	rows, all := jobs(root.SecretID)
	must.Eq(t, []string{"j-cv", "j-nlp"}, all)
	readerRows, none := jobs(tokens["qread"])
	must.SliceEmpty(t, none)
	must.Eq(t, rows, readerRows, must.Sprint("the totals, whatever the namespaces"))
	_, nlp := jobs(tokens["qread-nlp"])
	must.Eq(t, []string{"j-nlp"}, nlp)
}
