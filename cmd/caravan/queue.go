package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/queuespec"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/cli"
	"github.com/hashicorp/hcl/v2"
)

// queueCommand is the parent of the queue subcommands.
var queueCommand = parentCommand{
	synopsis: "Work with the queues teams share the cluster through",
	help: `
Usage: caravan queue <subcommand> [options] [args]

  Works with queues: each gives the jobs of its namespaces a nominal quota
  of GPUs per type, CPU and memory, which they may use at any time, and
  lets them borrow the idle quota of the queues of its cohort.

  Create or change the queues of a file:

      $ caravan queue apply queues.hcl

  List the queues, and show one:

      $ caravan queue list
      $ caravan queue status nlp

  Delete a queue:

      $ caravan queue delete nlp

  Please see the individual subcommand help for detailed usage information.`,
}

// queueCommands are the queue commands, for commands.go.
func queueCommands(m Meta) map[string]cli.CommandFactory {
	cmd := func(c cli.Command) cli.CommandFactory { return func() (cli.Command, error) { return c, nil } }
	return map[string]cli.CommandFactory{
		"queue":        queueCommand.factory(),
		"queue apply":  cmd(&QueueApplyCommand{Meta: m}),
		"queue list":   cmd(&QueueListCommand{Meta: m}),
		"queue status": cmd(&QueueStatusCommand{Meta: m}),
		"queue delete": cmd(&QueueDeleteCommand{Meta: m}),
	}
}

// QueueApplyCommand creates or replaces the queues of a queue file.
type QueueApplyCommand struct{ Meta }

func (c *QueueApplyCommand) Synopsis() string { return "Creates or updates the queues of a file" }

func (c *QueueApplyCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan queue apply [options] <path>

  Parses the queue file at <path> and creates or replaces each of its
  queues, all or none: a queue that is not valid, or that gives a namespace
  another queue gives, fails the whole file and changes nothing. Queues the
  file does not name are left as they are; "caravan queue delete" deletes
  one. Applying the same file again changes nothing.

  Needs a token with queue { policy = "write" }. Exits 1 on errors.
` + generalOptions)
}

func (c *QueueApplyCommand) Run(args []string) int {
	flags := c.FlagSet("queue apply")
	client, ok := c.agentCommand(flags, args, c.Help(), oneArgument("<path>"))
	if !ok {
		return 1
	}
	path := flags.Arg(0)
	queues, diags := queuespec.ParseFile(path)
	files := map[string]*hcl.File{}
	if len(diags) > 0 {
		// The source, for the diagnostics' snippets.
		if src, err := os.ReadFile(path); err == nil {
			files[path] = &hcl.File{Bytes: src}
		}
	}
	c.printDiagnostics(files, diags)
	if diags.HasErrors() {
		return 1
	}
	if len(queues) == 0 {
		c.Ui.Error(fmt.Sprintf("Error: %s defines no queue", path))
		return 1
	}
	out, err := apiQueues(queues)
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	ctx, cancel := reqCtx()
	defer cancel()
	if _, _, err := client.Queues().Upsert(out, writeOpts(ctx)); err != nil {
		c.apiError("applying queues", err)
		return 1
	}
	for _, q := range out {
		c.Ui.Output(fmt.Sprintf("Successfully applied queue %q!", q.Name))
	}
	return 0
}

// apiQueues re-encodes parsed queues as the API client's; the two encode
// alike (package api's tests check it).
func apiQueues(queues []*structs.Queue) ([]*api.Queue, error) {
	var out []*api.Queue
	b, err := json.Marshal(queues)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		return nil, fmt.Errorf("encode queues: %w", err)
	}
	return out, nil
}

// QueueListCommand lists the queues.
type QueueListCommand struct{ Meta }

func (c *QueueListCommand) Synopsis() string { return "Lists the queues" }

func (c *QueueListCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan queue list [options]

  Lists the queues by name: their cohort, weight, namespaces, nominal
  quota of GPUs per type, the GPUs their jobs use over their nominal GPUs
  (all types together, under the latest decision), and nominal CPU (MHz)
  and memory (MB), "-" where the queue does not limit a resource.

  Needs a token with queue { policy = "read" }. Exits 1 on errors.

List Options:

  -prefix=<name>
    Lists only the queues whose name starts with it.
` + jsonOption("the queues") + `
` + generalOptions)
}

func (c *QueueListCommand) Run(args []string) int {
	var asJSON bool
	var prefix string
	flags := c.FlagSet("queue list")
	flags.BoolVar(&asJSON, "json", false, "")
	flags.StringVar(&prefix, "prefix", "", "")
	client, ok := c.agentCommand(flags, args, c.Help(), noArguments)
	if !ok {
		return 1
	}
	ctx, cancel := reqCtx()
	defer cancel()
	q := queryOpts(ctx)
	q.Prefix = prefix
	queues, _, err := client.Queues().List(q)
	if err != nil {
		c.apiError("listing queues", err)
		return 1
	}
	return c.output(asJSON, queues, func() string { return formatQueueList(queues) })
}

func formatQueueList(queues []*api.Queue) string {
	if len(queues) == 0 {
		return "No queues"
	}
	rows := [][]string{{"Name", "Cohort", "Weight", "Namespaces", "GPUs", "GPUs Used", "CPU", "Memory"}}
	for _, q := range queues {
		var gpus []string
		for _, g := range q.Quota.GPU {
			gpus = append(gpus, fmt.Sprintf("%s:%d", g.Type, g.Nominal))
		}
		rows = append(rows, []string{q.Name, orDash(q.Cohort), formatWeight(q.Weight), orDash(strings.Join(q.Namespaces, ",")),
			orDash(strings.Join(gpus, ",")), gpusUsed(q), limit(q.Quota.CPU), limit(q.Quota.MemoryMB)})
	}
	return formatList(rows)
}

func formatWeight(w float64) string { return strconv.FormatFloat(w, 'g', -1, 64) }

// limit renders a quota of CPU or memory, "-" for 0 (not limited).
func limit(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// QueueStatusCommand shows a queue.
type QueueStatusCommand struct{ Meta }

func (c *QueueStatusCommand) Synopsis() string { return "Displays a queue" }

func (c *QueueStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan queue status [options] <name>

  Shows a queue: its namespaces, cohort and weight; its quota and usage
  under the latest decision, a row per resource (GPUs per type as nodes
  report it, with the quota that counts it in parentheses when named
  otherwise; CPU in MHz and memory in MB when the queue limits them):
  the nominal quota, what its jobs use (Used), the part of it beyond the
  nominal (Borrowed), the part of its idle nominal that queues of its
  cohort borrow (Lent), what its paused jobs lack to run at their minimum
  (Pending) and, in a cohort, how many GPUs beyond its nominal the queue
  may borrow (Borrowing Limit: "unlimited" without a cap) and how many of
  its idle GPUs it lends (Lending Limit: "all" without a cap); then its
  jobs, the pending ones first with the reason they wait.

  Needs a token with queue { policy = "read" }. Exits 1 on errors, a queue
  that does not exist among them.
` + jsonOption("the queue") + `
` + generalOptions)
}

func (c *QueueStatusCommand) Run(args []string) int {
	var asJSON bool
	flags := c.FlagSet("queue status")
	flags.BoolVar(&asJSON, "json", false, "")
	client, ok := c.agentCommand(flags, args, c.Help(), oneArgument("<name>"))
	if !ok {
		return 1
	}
	name := flags.Arg(0)
	ctx, cancel := reqCtx()
	defer cancel()
	q, _, err := client.Queues().Info(name, queryOpts(ctx))
	if api.IsNotFound(err) {
		c.Ui.Error(fmt.Sprintf("No queue named %q", name))
		return 1
	}
	if err != nil {
		c.apiError(fmt.Sprintf("reading queue %q", name), err)
		return 1
	}
	return c.output(asJSON, q, func() string { return formatQueue(q) })
}

// formatQueue renders a queue: its fields, then its quota and usage, a
// row per resource, then its jobs, the pending ones first.
func formatQueue(q *api.Queue) string {
	out := formatKV([][2]string{
		{"Name", q.Name},
		{"Namespaces", orDash(strings.Join(q.Namespaces, ", "))},
		{"Cohort", orDash(q.Cohort)},
		{"Weight", formatWeight(q.Weight)},
		{"Create Index", fmt.Sprint(q.CreateIndex)},
		{"Modify Index", fmt.Sprint(q.ModifyIndex)},
	})
	rows := [][]string{{"Resource", "Nominal", "Used", "Borrowed", "Lent", "Pending", "Borrowing Limit", "Lending Limit"}}
	if q.Usage == nil {
		// A server that does not report usage: the quota alone.
		for _, g := range q.Quota.GPU {
			rows = append(rows, append([]string{"gpu/" + g.Type, strconv.Itoa(g.Nominal), "-", "-", "-", "-"}, gpuLimits(q, g)...))
		}
		if q.Quota.CPU > 0 {
			rows = append(rows, []string{"cpu (MHz)", strconv.Itoa(q.Quota.CPU), "-", "-", "-", "-", "-", "-"})
		}
		if q.Quota.MemoryMB > 0 {
			rows = append(rows, []string{"memory (MB)", strconv.Itoa(q.Quota.MemoryMB), "-", "-", "-", "-", "-", "-"})
		}
	} else {
		for _, r := range q.Usage.Resources {
			row := []string{resourceLabel(r), strconv.Itoa(r.Nominal), strconv.Itoa(r.Used), strconv.Itoa(r.Borrowed), strconv.Itoa(r.Lent), strconv.Itoa(r.Pending)}
			limits := []string{"-", "-"}
			if r.IsGPU() {
				limits = gpuLimits(q, nil)
				for _, g := range q.Quota.GPU {
					if g.Type == r.Quota {
						limits = gpuLimits(q, g)
					}
				}
			}
			rows = append(rows, append(row, limits...))
		}
	}
	if len(rows) == 1 {
		out += "\n\nQuota\nNone: the queue does not limit its jobs"
	} else {
		out += "\n\nQuota\n" + formatList(rows)
	}
	if q.Usage == nil {
		return out
	}
	if len(q.Usage.Jobs) == 0 {
		return out + "\n\nJobs\nNone"
	}
	jobs := [][]string{{"ID", "Namespace", "Status", "PS", "Workers", "Reason"}}
	for _, j := range q.Usage.Jobs {
		reason := "-"
		if j.Pending {
			reason = orDash(j.Reason)
		}
		jobs = append(jobs, []string{j.ID, j.Namespace, orDash(j.Status), strconv.Itoa(j.PS), strconv.Itoa(j.Workers), reason})
	}
	return out + fmt.Sprintf("\n\nJobs (%d pending)\n", q.Usage.PendingJobs) + formatList(jobs)
}

// gpuLimits renders the borrowing and lending limits of a queue's GPU
// quota g (nil for a type no quota names, which the queue only borrows):
// "-" outside a cohort, where the queue neither borrows nor lends.
func gpuLimits(q *api.Queue, g *api.GPUQuota) []string {
	if q.Cohort == "" {
		return []string{"-", "-"}
	}
	borrow, lend := "unlimited", "all"
	if g == nil {
		return []string{borrow, "-"}
	}
	if g.BorrowingLimit != nil {
		borrow = strconv.Itoa(*g.BorrowingLimit)
	}
	if g.LendingLimit != nil {
		lend = strconv.Itoa(*g.LendingLimit)
	}
	return []string{borrow, lend}
}

// resourceLabel names a usage row: its resource with its unit, and for a
// GPU type the quota that counts it when that is not named as the type.
func resourceLabel(r api.QueueResource) string {
	switch {
	case r.Resource == "cpu":
		return "cpu (MHz)"
	case r.Resource == "memory":
		return "memory (MB)"
	case r.Quota == "":
		return r.Resource + " (no quota)"
	case r.Resource != "gpu/"+r.Quota:
		return r.Resource + " (" + r.Quota + ")"
	}
	return r.Resource
}

// gpusUsed renders a queue's GPUs used over its nominal GPUs, all types
// together ("12/8"); "-" when the server does not report usage.
func gpusUsed(q *api.Queue) string {
	if q.Usage == nil {
		return "-"
	}
	used, nominal := 0, 0
	for _, r := range q.Usage.Resources {
		if r.IsGPU() {
			used, nominal = used+r.Used, nominal+r.Nominal
		}
	}
	return fmt.Sprintf("%d/%d", used, nominal)
}

// QueueDeleteCommand deletes a queue.
type QueueDeleteCommand struct{ Meta }

func (c *QueueDeleteCommand) Synopsis() string { return "Deletes a queue" }

func (c *QueueDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan queue delete [options] <name>

  Deletes a queue. The jobs of its namespaces fall to the queue another
  pattern gives them, or to the "default" queue.

  Needs a token with queue { policy = "write" }. Exits 1 on errors, a
  queue that does not exist among them.
` + generalOptions)
}

func (c *QueueDeleteCommand) Run(args []string) int {
	flags := c.FlagSet("queue delete")
	client, ok := c.agentCommand(flags, args, c.Help(), oneArgument("<name>"))
	if !ok {
		return 1
	}
	name := flags.Arg(0)
	ctx, cancel := reqCtx()
	defer cancel()
	if _, err := client.Queues().Delete(name, writeOpts(ctx)); err != nil {
		c.apiError(fmt.Sprintf("deleting queue %q", name), err)
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Successfully deleted queue %q!", name))
	return 0
}
