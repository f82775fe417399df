package server

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/shoenig/test/must"
)

// TestLeader_QueuesReclaimByShrinking runs two queues of one cohort with
// 8 GPUs each on 16 simulated GPUs: queue a's job borrows b's idle
// quota and runs 16 workers; when b's job arrives, a's shrinks to its
// quota (a JobPreempted event says why) and b's runs on its own,
// where fifo alone would keep it waiting.
func TestLeader_QueuesReclaimByShrinking(t *testing.T) {
	cfg := TestConfig(t, simDriver(t, 500))
	cfg.Algorithm = "fifo" // which alone would keep b waiting behind a
	s := TestServer(t, cfg)
	leaderOf(t, s)
	c := client(t, s)
	waitCommittedNodes(t, c, 4)
	quota := func(name string) *api.Queue {
		return &api.Queue{Name: name, Namespaces: []string{"team-" + name}, Cohort: "lab",
			Quota: api.QueueQuota{GPU: []*api.GPUQuota{{Type: "*", Nominal: 8}}}}
	}
	_, _, err := c.Queues().Upsert([]*api.Queue{quota("a"), quota("b")}, nil)
	must.NoError(t, err)

	workers := func(ns, id string) func() (int, error) {
		return func() (int, error) {
			sum, _, err := c.Jobs().Summary(id, &api.QueryOptions{Namespace: ns})
			if err != nil || sum.Placement == nil || sum.Placement.Placement == nil {
				return 0, err
			}
			return sum.Placement.Placement.NumWorkers, nil
		}
	}
	waitWorkers := func(ns, id string, want func(int) bool, what string) {
		agent.WaitFor(t, 20*time.Second, what, func() error {
			n, err := workers(ns, id)()
			if err != nil {
				return err
			}
			if !want(n) {
				return fmt.Errorf("%s/%s is decided %d workers", ns, id, n)
			}
			return nil
		})
	}
	_, _, err = c.Jobs().Register(TestQueueJob("big", "team-a", 1, 16), &api.WriteOptions{Namespace: "team-a"})
	must.NoError(t, err)
	waitWorkers("team-a", "big", func(n int) bool { return n == 16 }, "queue a's job borrowing b's idle GPUs")

	_, _, err = c.Jobs().Register(TestQueueJob("small", "team-b", 4, 8), &api.WriteOptions{Namespace: "team-b"})
	must.NoError(t, err)
	waitWorkers("team-b", "small", func(n int) bool { return n == 8 }, "queue b's job running on its quota")
	waitWorkers("team-a", "big", func(n int) bool { return n == 8 }, "queue a's job shrunk to its quota")
	// Later rounds keep both at their quotas: fifo alone would give big
	// its 16 or nothing, and a queue below its nominal gets it back.
	plan := func() uint64 {
		p, _, err := c.LatestPlan(nil)
		must.NoError(t, err)
		return p.Index
	}
	since := plan()
	agent.WaitFor(t, 20*time.Second, "two more decisions", func() error {
		if n, _ := workers("team-a", "big")(); n != 8 {
			t.Fatalf("big was decided %d workers after the shrink", n)
		}
		if p := plan(); p < since+2 {
			return fmt.Errorf("decided at %d, %d before", p, since)
		}
		return nil
	})
	sum, _, err := c.Jobs().Summary("big", &api.QueryOptions{Namespace: "team-a"})
	must.NoError(t, err)
	must.Eq(t, "a", sum.Queue)

	var pre []*api.Event
	agent.WaitFor(t, 10*time.Second, "a JobPreempted event of big", func() error {
		all, _, err := c.Events("big", &api.QueryOptions{Namespace: "team-a"})
		if err != nil {
			return err
		}
		pre = nil
		for _, ev := range all {
			if ev.Type == api.EventJobPreempted {
				pre = append(pre, ev)
			}
		}
		if len(pre) == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	t.Logf("%s: %s (%v)", pre[0].Type, pre[0].Message, pre[0].Details)
	must.Eq(t, "a", pre[0].Details["Queue"])
	must.StrContains(t, pre[0].Message, `queue "a"`)
}

// TestServer_RefusesJobOverItsQueue: a job whose minimum takes more GPUs
// than its queue's nominal plus borrowing limit is refused at job run
// with a 422 that names the queue and its bound, and is not committed.
func TestServer_RefusesJobOverItsQueue(t *testing.T) {
	s := TestServer(t, TestConfig(t, simDriver(t, 500)))
	leaderOf(t, s)
	c := client(t, s)
	waitCommittedNodes(t, c, 4)
	_, _, err := c.Queues().Upsert([]*api.Queue{{Name: "a", Namespaces: []string{"team-a"},
		Quota: api.QueueQuota{GPU: []*api.GPUQuota{{Type: "*", Nominal: 4, BorrowingLimit: new(2)}}}}}, nil)
	must.NoError(t, err)

	_, _, err = c.Jobs().Register(TestQueueJob("big", "team-a", 7, 8), &api.WriteOptions{Namespace: "team-a"})
	var apiErr *api.Error
	must.True(t, errors.As(err, &apiErr), must.Sprintf("error %v", err))
	must.Eq(t, http.StatusUnprocessableEntity, apiErr.StatusCode)
	must.StrContains(t, apiErr.Message, `job "big": its minimum takes 7 GPUs, more than queue "a" may ever hold of any GPU type: at most 6 of `)
	_, _, err = c.Jobs().Info("big", &api.QueryOptions{Namespace: "team-a"})
	must.True(t, api.IsNotFound(err), must.Sprintf("the refused job is not committed: %v", err))
	_, _, err = c.Jobs().Register(TestQueueJob("fits", "team-a", 6, 8), &api.WriteOptions{Namespace: "team-a"})
	must.NoError(t, err)
}
