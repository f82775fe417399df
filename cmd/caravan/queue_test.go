package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

func testQueue(name, cohort string, namespaces ...string) *api.Queue {
	lend, borrow := 4, 2
	return &api.Queue{Name: name, Namespaces: namespaces, Cohort: cohort, Weight: 2,
		Quota: api.QueueQuota{GPU: []*api.GPUQuota{{Type: "A100", Nominal: 8, LendingLimit: &lend}, {Type: "T4", Nominal: 2, BorrowingLimit: &borrow}},
			CPU: 16000, MemoryMB: 65536}}
}

// TestFormatQueue: a queue's status lists its definition and a quota row
// per resource; borrowing and lending limits are shown only in a cohort;
// without usage (an older server) its columns are "-".
func TestFormatQueue(t *testing.T) {
	out := formatQueue(testQueue("nlp", "research", "nlp", "nlp-*"))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Namespaces\s+= nlp, nlp-\*$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Cohort\s+= research$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Weight\s+= 2$`), out)
	must.StrContains(t, out, "\n\nQuota\n")
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Resource\s+Nominal\s+Used\s+Borrowed\s+Lent\s+Pending\s+Borrowing Limit\s+Lending Limit$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^gpu/A100\s+8\s+-\s+-\s+-\s+-\s+unlimited\s+4$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^gpu/T4\s+2\s+-\s+-\s+-\s+-\s+2\s+all$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^cpu \(MHz\)\s+16000(\s+-){6}$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^memory \(MB\)\s+65536(\s+-){6}$`), out)
	must.StrNotContains(t, out, "Jobs")

	alone := formatQueue(testQueue("solo", "", "solo"))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Cohort\s+= -$`), alone)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^gpu/A100\s+8(\s+-){6}$`), alone, must.Sprint("no cohort: nothing to borrow from or lend to"))

	none := formatQueue(&api.Queue{Name: "default", Weight: 1})
	must.StrContains(t, none, "\n\nQuota\nNone: the queue does not limit its jobs")
	must.Eq(t, "No queues", formatQueueList(nil))
}

// TestFormatQueue_Usage: a queue's status shows its usage per resource,
// GPU types as nodes name them with the quota that counts them, and its
// jobs, the pending ones first with why they wait; the list shows GPUs
// used over nominal.
func TestFormatQueue_Usage(t *testing.T) {
	q := testQueue("nlp", "research", "nlp")
	q.Usage = &api.QueueUsage{
		Resources: []api.QueueResource{
			{Resource: "gpu/NVIDIA A100-SXM4-40GB", Quota: "A100", Nominal: 8, Used: 12, Borrowed: 4},
			{Resource: "gpu/T4", Quota: "T4", Nominal: 2, Lent: 1, Pending: 2},
			{Resource: "gpu/Tesla V100", Used: 1, Borrowed: 1},
			{Resource: "cpu", Nominal: 16000, Used: 13000},
			{Resource: "memory", Nominal: 65536, Used: 13312, Pending: 2048},
		},
		PendingJobs: 1,
		Jobs: []*api.QueueJob{
			{Namespace: "nlp", ID: "bert", Status: "pending", Pending: true, Reason: "no room for 2 workers"},
			{Namespace: "nlp", ID: "gpt", Status: "running", Workers: 12, Reason: "the algorithm's"},
		},
	}
	out := formatQueue(q)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^gpu/NVIDIA A100-SXM4-40GB \(A100\)\s+8\s+12\s+4\s+0\s+0\s+unlimited\s+4$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^gpu/T4\s+2\s+0\s+0\s+1\s+2\s+2\s+all$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^gpu/Tesla V100 \(no quota\)\s+0\s+1\s+1\s+0\s+0\s+unlimited\s+-$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^cpu \(MHz\)\s+16000\s+13000\s+0\s+0\s+0\s+-\s+-$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^memory \(MB\)\s+65536\s+13312\s+0\s+0\s+2048\s+-\s+-$`), out)
	jobs := out[strings.Index(out, "\n\nJobs (1 pending)\n")+2:]
	lines := strings.Split(jobs, "\n")
	must.SliceLen(t, 4, lines)
	must.RegexMatch(t, regexp.MustCompile(`^ID\s+Namespace\s+Status\s+PS\s+Workers\s+Reason$`), lines[1])
	must.RegexMatch(t, regexp.MustCompile(`^bert\s+nlp\s+pending\s+0\s+0\s+no room for 2 workers$`), lines[2])
	must.RegexMatch(t, regexp.MustCompile(`^gpt\s+nlp\s+running\s+0\s+12\s+-$`), lines[3], must.Sprint("a running job's reason is not shown"))

	list := strings.Split(formatQueueList([]*api.Queue{q, testQueue("old", "", "old")}), "\n")
	must.RegexMatch(t, regexp.MustCompile(`^nlp\s+research\s+2\s+nlp\s+A100:8,T4:2\s+13/10\s+16000\s+65536$`), list[1])
	must.RegexMatch(t, regexp.MustCompile(`^old\s+-\s+2\s+old\s+A100:8,T4:2\s+-\s+16000\s+65536$`), list[2], must.Sprint("no usage: an older server"))
}

// TestQueueCommands runs the queue commands against a server.
func TestQueueCommands(t *testing.T) {
	addr := testAgent(t)
	cli := func(t *testing.T, words []string, rest ...string) (int, string, string) {
		t.Helper()
		args := append(append(append([]string{}, words...), "-address", addr), rest...)
		return logged(t, args)(runCLI(t, args...))
	}
	c, err := api.NewClient(&api.Config{Address: addr})
	must.NoError(t, err)
	// Queue writes wait for the server to record its version.
	agent.WaitFor(t, 10*time.Second, "queues written", func() error {
		_, _, err := c.Queues().Upsert([]*api.Queue{testQueue("nlp", "research", "nlp", "nlp-*"), testQueue("cv", "research", "cv")}, nil)
		return err
	})

	t.Run("list", func(t *testing.T) {
		code, out, errOut := cli(t, []string{"queue", "list"})
		must.Eq(t, 0, code, must.Sprint(errOut))
		lines := strings.Split(out, "\n")
		must.RegexMatch(t, regexp.MustCompile(`^Name\s+Cohort\s+Weight\s+Namespaces\s+GPUs\s+GPUs Used\s+CPU\s+Memory$`), lines[0])
		must.RegexMatch(t, regexp.MustCompile(`^cv\s+research\s+2\s+cv\s+A100:8,T4:2\s+0/10\s+16000\s+65536$`), lines[1])
		must.RegexMatch(t, regexp.MustCompile(`^nlp\s+research\s+2\s+nlp,nlp-\*\s+A100:8,T4:2\s+0/10\s+16000\s+65536$`), lines[2])

		code, out, _ = cli(t, []string{"queue", "list"}, "-prefix", "n", "-json")
		must.Eq(t, 0, code)
		var qs []*api.Queue
		must.NoError(t, json.Unmarshal([]byte(out), &qs))
		must.Eq(t, []string{"nlp"}, []string{qs[0].Name})
		must.SliceLen(t, 1, qs)
	})

	t.Run("status", func(t *testing.T) {
		code, out, errOut := cli(t, []string{"queue", "status"}, "nlp")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Name\s+= nlp$`), out)
		// The simulated cluster has no A100 and no T4, and no job runs:
		// the quotas keep their nominals, with nothing used.
		must.RegexMatch(t, regexp.MustCompile(`(?m)^gpu/A100\s+8\s+0\s+0\s+0\s+0\s+unlimited\s+4$`), out)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^cpu \(MHz\)\s+16000\s+0\s+0\s+0\s+0\s+-\s+-$`), out)
		must.StrContains(t, out, "\n\nJobs\nNone")

		code, out, errOut = cli(t, []string{"queue", "status"}, "nope")
		must.Eq(t, 1, code)
		must.Eq(t, "", out)
		must.StrContains(t, errOut, `No queue named "nope"`)
	})

	t.Run("apply", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "queues.hcl")
		must.NoError(t, os.WriteFile(path, []byte(`queue "speech" {
  namespaces = ["speech"]
  cohort     = "research"
  quota {
    cpu = 4000
    gpu "A100" {
      nominal = 4
    }
  }
}
`), 0o644))
		code, out, errOut := cli(t, []string{"queue", "apply"}, path)
		if strings.Contains(errOut, "not implemented") {
			// The placeholder of package queuespec: its diagnostic is
			// printed as job run prints a jobspec's.
			must.Eq(t, 1, code)
			must.StrContains(t, errOut, "Error: not implemented")
			t.Skip("package queuespec is a placeholder in this branch")
		}
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.StrContains(t, out, `Successfully applied queue "speech"!`)
		q, _, err := c.Queues().Info("speech", nil)
		must.NoError(t, err)
		must.Eq(t, 4, q.Quota.GPU[0].Nominal)

		code, _, errOut = cli(t, []string{"queue", "apply"}, path)
		must.Eq(t, 0, code, must.Sprint("the same file again", errOut))
		again, _, err := c.Queues().Info("speech", nil)
		must.NoError(t, err)
		must.Eq(t, q.ModifyIndex, again.ModifyIndex, must.Sprint("and nothing changed"))

		// A namespace another queue gives fails the whole file.
		taken := filepath.Join(t.TempDir(), "taken.hcl")
		must.NoError(t, os.WriteFile(taken, []byte("queue \"fresh\" {\n  namespaces = [\"fresh\"]\n}\nqueue \"thief\" {\n  namespaces = [\"nlp-*\"]\n}\n"), 0o644))
		code, out, errOut = cli(t, []string{"queue", "apply"}, taken)
		must.Eq(t, 1, code)
		must.Eq(t, "", out)
		must.StrContains(t, errOut, `Error applying queues: 409 Conflict`)
		must.StrContains(t, errOut, `"nlp-*" is queue "nlp"'s already`)
		_, _, err = c.Queues().Info("fresh", nil)
		must.True(t, api.IsNotFound(err), must.Sprint("all or none"))
	})

	t.Run("apply refuses a bad file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "bad.hcl")
		must.NoError(t, os.WriteFile(path, []byte("queue \"x\" {\n  namespaces = \n}\n"), 0o644))
		code, out, errOut := cli(t, []string{"queue", "apply"}, path)
		must.Eq(t, 1, code)
		must.Eq(t, "", out)
		must.StrContains(t, errOut, "Error: ")
		_, _, err := c.Queues().Info("x", nil)
		must.True(t, api.IsNotFound(err))
	})

	t.Run("delete", func(t *testing.T) {
		code, out, errOut := cli(t, []string{"queue", "delete"}, "cv")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.StrContains(t, out, `Successfully deleted queue "cv"!`)
		code, _, errOut = cli(t, []string{"queue", "delete"}, "cv")
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, `Error deleting queue "cv"`)
		must.StrContains(t, errOut, "not found")
		qs, _, err := c.Queues().List(nil)
		must.NoError(t, err)
		must.SliceNotContainsFunc(t, qs, "cv", func(q *api.Queue, name string) bool { return q.Name == name })
		must.SliceContainsFunc(t, qs, "nlp", func(q *api.Queue, name string) bool { return q.Name == name })
	})
}

// TestAPIQueues: parsed queues reach the API client whole, limits
// included.
func TestAPIQueues(t *testing.T) {
	lend := 3
	in := []*structs.Queue{{Name: "nlp", Namespaces: []string{"nlp"}, Cohort: "research", Weight: 1.5,
		Quota: structs.QueueQuota{GPU: []*structs.GPUQuota{{Type: "A100", Nominal: 4, LendingLimit: &lend}}, CPU: 100, MemoryMB: 200}}}
	out, err := apiQueues(in)
	must.NoError(t, err)
	must.Eq(t, []*api.Queue{{Name: "nlp", Namespaces: []string{"nlp"}, Cohort: "research", Weight: 1.5,
		Quota: api.QueueQuota{GPU: []*api.GPUQuota{{Type: "A100", Nominal: 4, LendingLimit: &lend}}, CPU: 100, MemoryMB: 200}}}, out)
}
