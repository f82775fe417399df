package ui_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server"
	"github.com/chromedp/chromedp"
	"github.com/shoenig/test/must"
)

// cells is JavaScript reading the text of each cell of each row that
// selector matches.
func cells(selector string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%q)].map((r) => [...r.cells].map((c) => c.innerText.trim()))`, selector)
}

// TestBrowser_Queues: two queues of one cohort with 8 of the 16 GPUs
// each, under fifo. Queue a's job borrows b's idle quota; b's jobs
// reclaim it, a's job is preempted, and a second job of b waits. The
// queue list's rows and a queue's resources table are what /v1/queues
// answers, the waiting job is listed first with its reason, the
// preemption is listed on a's page, the usage chart carries samples, and
// the job page links its queue.
func TestBrowser_Queues(t *testing.T) {
	s, c := startServer(t, 100, func(cfg *server.Config) { cfg.Algorithm = "fifo" })
	base := "http://" + s.HTTPAddr()
	quota := func(name string) *api.Queue {
		return &api.Queue{Name: name, Namespaces: []string{"team-" + name}, Cohort: "lab",
			Quota: api.QueueQuota{GPU: []*api.GPUQuota{{Type: "*", Nominal: 8}}}}
	}
	_, _, err := c.Queues().Upsert([]*api.Queue{quota("a"), quota("b")}, nil)
	must.NoError(t, err)

	workers := func(ns, id string, want func(int) bool, what string) {
		t.Helper()
		agent.WaitFor(t, 60*time.Second, what, func() error {
			sum, _, err := c.Jobs().Summary(id, &api.QueryOptions{Namespace: ns})
			if err != nil {
				return err
			}
			n := 0
			if sum.Placement != nil && sum.Placement.Placement != nil {
				n = sum.Placement.Placement.NumWorkers
			}
			if !want(n) {
				return fmt.Errorf("%s/%s is decided %d workers", ns, id, n)
			}
			return nil
		})
	}
	_, _, err = c.Jobs().Register(server.TestQueueJob("big", "team-a", 1, 16), &api.WriteOptions{Namespace: "team-a"})
	must.NoError(t, err)
	workers("team-a", "big", func(n int) bool { return n == 16 }, "queue a's job borrowing b's idle GPUs")

	b := newBrowser(t)
	must.NoError(t, b.do(chromedp.Navigate(base+"/ui/queues")))
	checkQueueList(t, b, c)
	// The page samples the usage while a borrows all of b's quota.
	b.waitNumber(t, "queue a's row", `document.querySelectorAll('tr[data-queue="a"]').length`, 1)

	_, _, err = c.Jobs().Register(server.TestQueueJob("small", "team-b", 4, 8), &api.WriteOptions{Namespace: "team-b"})
	must.NoError(t, err)
	workers("team-b", "small", func(n int) bool { return n >= 4 }, "queue b's job running on its quota")
	workers("team-a", "big", func(n int) bool { return n <= 8 }, "queue a's job shrunk to its quota")
	// Its minimum is more than b's quota, and a holds all of its own.
	_, _, err = c.Jobs().Register(server.TestQueueJob("wait", "team-b", 16, 16), &api.WriteOptions{Namespace: "team-b"})
	must.NoError(t, err)
	checkQueueList(t, b, c)
	b.screenshot(t, "queues")

	t.Run("pending", func(t *testing.T) {
		must.NoError(t, b.do(chromedp.Click(chromedp.CSS(`tr[data-queue="b"] a`))))
		b.waitNumber(t, "queue b's page", `document.querySelectorAll('[data-page="queue"]').length`, 1)
		checkResources(t, b, c, "b")
		var want *api.QueueJob
		agent.WaitFor(t, 60*time.Second, "queue b's waiting job listed first with its reason", func() error {
			q, _, err := c.Queues().Info("b", nil)
			if err != nil {
				return err
			}
			if q.Usage == nil || len(q.Usage.Jobs) == 0 || !q.Usage.Jobs[0].Pending {
				return errors.New("the API lists no pending job of b yet")
			}
			want = q.Usage.Jobs[0]
			rows, err := eval[[][]string](b, cells(`table.queue-jobs tbody tr`))
			if err != nil {
				return err
			}
			if len(rows) == 0 || len(rows[0]) != 5 {
				return fmt.Errorf("the page lists %q", rows)
			}
			first, err := eval[string](b, `document.querySelector('table.queue-jobs tbody tr').dataset.job + "/" + document.querySelector('table.queue-jobs tbody tr').dataset.pending`)
			if err != nil {
				return err
			}
			if first != want.ID+"/true" || rows[0][3] != "pending" || rows[0][4] != want.Reason {
				return fmt.Errorf("the page's first job is %s %q, the API's %s pending, %q", first, rows[0], want.ID, want.Reason)
			}
			return nil
		})
		must.EqOp(t, "wait", want.ID)
		must.NotEq(t, "", want.Reason)
	})

	t.Run("preempted", func(t *testing.T) {
		var pre *api.Event
		agent.WaitFor(t, 60*time.Second, "a JobPreempted event of big", func() error {
			all, _, err := c.Events("big", &api.QueryOptions{Namespace: "team-a"})
			if err != nil {
				return err
			}
			for _, ev := range all {
				if ev.Type == api.EventJobPreempted {
					pre = ev
					return nil
				}
			}
			return errors.New("none yet")
		})
		// Through the list, in the page: the usage sampled since the list
		// was opened stays on the chart.
		must.NoError(t, b.do(chromedp.Click(chromedp.CSS(`nav a[href="/ui/queues"]`))))
		b.waitNumber(t, "the queue list", `document.querySelectorAll('tr[data-queue="a"] a').length`, 1)
		must.NoError(t, b.do(chromedp.Click(chromedp.CSS(`tr[data-queue="a"] a`))))
		b.waitNumber(t, "queue a's page", `location.pathname === "/ui/queues/a" ? 1 : 0`, 1)
		checkResources(t, b, c, "a")
		b.waitNumber(t, "big's preemption", attr(`table.preemptions`, "data-rows"), 1)
		rows, err := eval[[][]string](b, cells(`table.preemptions tr[data-job="big"]`))
		must.NoError(t, err)
		must.SliceNotEmpty(t, rows)
		last := rows[len(rows)-1] // the oldest listed, the first preemption
		must.Eq(t, []string{"big @team-a", pre.Details["From"], pre.Details["To"], pre.Message}, last[1:])
		// Preemptions of b's jobs, if any, are not a's.
		others, err := eval[float64](b, `document.querySelectorAll('table.preemptions tbody tr:not([data-job="big"])').length`)
		must.NoError(t, err)
		must.EqOp(t, 0, others)
		samples := 2.0
		if os.Getenv("CARAVAN_UI_SCREENSHOTS") != "" {
			samples = 15 // a longer history for the README
		}
		b.waitNumber(t, "usage samples on the chart", attr(`[data-chart="queue-usage"]`, "data-points"), samples)
		b.screenshot(t, "queue")
	})

	t.Run("job", func(t *testing.T) {
		must.NoError(t, b.do(chromedp.Navigate(base+"/ui/jobs/big?namespace=team-a")))
		b.waitNumber(t, "the job's queue", `document.querySelectorAll('dd[data-queue="a"] a').length`, 1)
		must.NoError(t, b.do(chromedp.Click(chromedp.CSS(`dd[data-queue="a"] a`))))
		b.waitNumber(t, "queue a's page", `location.pathname === "/ui/queues/a" && document.querySelectorAll('[data-page="queue"]').length === 1 ? 1 : 0`, 1)
	})

	b.checkClean(t)
}

// gpuTotals sums a queue's GPU resources as the list shows them.
func gpuTotals(q *api.Queue) (used, nominal, borrowed, lent, pending int) {
	for _, r := range q.Usage.Resources {
		if r.IsGPU() {
			used += r.Used
			nominal += r.Nominal
			borrowed += r.Borrowed
			lent += r.Lent
			pending += r.Pending
		}
	}
	return
}

// checkQueueList waits until the queue list's rows are what /v1/queues
// answers.
func checkQueueList(t *testing.T, b *browser, c *api.Client) {
	t.Helper()
	agent.WaitFor(t, 60*time.Second, "the queue list to be the API's", func() error {
		qs, _, err := c.Queues().List(nil)
		if err != nil {
			return err
		}
		var want [][]string
		for _, q := range qs {
			if q.Usage == nil {
				return fmt.Errorf("queue %s has no usage yet", q.Name)
			}
			used, nominal, borrowed, lent, pending := gpuTotals(q)
			want = append(want, []string{q.Name, q.Cohort, strconv.FormatFloat(q.Weight, 'g', -1, 64),
				fmt.Sprintf("%d / %d", used, nominal), strconv.Itoa(borrowed), strconv.Itoa(lent), strconv.Itoa(pending), strconv.Itoa(q.Usage.PendingJobs)})
		}
		got, err := eval[[][]string](b, cells(`table.queues tbody tr`))
		if err != nil {
			return err
		}
		if len(want) != 2 || !slices.EqualFunc(got, want, slices.Equal) {
			return fmt.Errorf("the page lists %q, the API %q", got, want)
		}
		return nil
	})
}

// checkResources waits until the resources table of the queue's page is
// what /v1/queues answers for the queue, with its quota's limits.
func checkResources(t *testing.T, b *browser, c *api.Client, name string) {
	t.Helper()
	agent.WaitFor(t, 60*time.Second, "queue "+name+"'s resources to be the API's", func() error {
		qs, _, err := c.Queues().List(&api.QueryOptions{Prefix: name})
		if err != nil {
			return err
		}
		i := slices.IndexFunc(qs, func(q *api.Queue) bool { return q.Name == name })
		if i < 0 || qs[i].Usage == nil {
			return fmt.Errorf("the API has no usage of queue %s", name)
		}
		var want [][]string
		for _, r := range qs[i].Usage.Resources {
			if !r.IsGPU() {
				continue
			}
			// Each GPU quota of the test is "*", with no limits.
			want = append(want, []string{r.Resource + " GPUs", r.Quota, strconv.Itoa(r.Nominal), strconv.Itoa(r.Used), strconv.Itoa(r.Borrowed),
				strconv.Itoa(r.Lent), strconv.Itoa(r.Pending), "no cap", "all"})
		}
		got, err := eval[[][]string](b, cells(`table.resources tbody tr[data-resource^="gpu/"]`))
		if err != nil {
			return err
		}
		if len(want) == 0 || !slices.EqualFunc(got, want, slices.Equal) {
			return fmt.Errorf("the page lists %q, the API %q", got, want)
		}
		return nil
	})
}
