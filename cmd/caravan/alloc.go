package main

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/drivers/nomad"
	"github.com/caravan-sched/caravan/structs"
	nomadapi "github.com/hashicorp/nomad/api"
)

// allocCommand is the parent of the alloc subcommands.
var allocCommand = parentCommand{
	synopsis: "Look at the Nomad allocations of Caravan's jobs",
	help: `
Usage: caravan alloc <subcommand> [options] [args]

  Shows the Nomad allocations that run a Caravan job, read from the Nomad
  cluster the agent runs jobs in, so that there is no need to switch to
  the nomad CLI and to know the Nomad job's ID.

  List a job's allocations, or show one allocation's tasks:

      $ caravan alloc status <job>
      $ caravan alloc status <alloc>

  Please see the individual subcommand help for detailed usage information.`,
}

// nomadHelp documents how the CLI reaches Nomad.
const nomadHelp = `
  The CLI asks the agent (GET /v1/agent/self) for the address, region and
  namespace of its Nomad cluster; NOMAD_ADDR overrides the address, and
  NOMAD_TOKEN, NOMAD_CACERT and Nomad's other variables apply as for the
  nomad CLI. A job on the simulated cluster has no allocations.`

// nomadJob is a Caravan job's Nomad job, and a client of its cluster.
type nomadJob struct {
	client *nomadapi.Client
	// ID is the Nomad job's ID (nomad.NomadJobID).
	ID string
}

// nomadClient returns a client of the Nomad cluster the agent runs jobs
// in, in namespace ns unless the agent names one (its nomad.namespace,
// also returned); it prints what is wrong and returns nil on errors.
func (m *Meta) nomadClient(client *api.Client, ns string) (*nomadapi.Client, string) {
	self, _, err := client.Agent().Self(nil)
	if err != nil {
		m.apiError("reading the agent's configuration", err)
		return nil, ""
	}
	if self.Nomad == nil {
		m.Ui.Error("The agent runs the simulated cluster: its jobs have no Nomad allocations")
		return nil, ""
	}
	cfg := nomadapi.DefaultConfig()
	if os.Getenv("NOMAD_ADDR") == "" {
		cfg.Address = self.Nomad.Address
	}
	cfg.Region = cmp.Or(os.Getenv("NOMAD_REGION"), self.Nomad.Region)
	cfg.Namespace = cmp.Or(self.Nomad.Namespace, ns)
	nc, err := nomadapi.NewClient(cfg)
	if err != nil {
		m.Ui.Error("Error creating the Nomad client: " + err.Error())
		return nil, ""
	}
	return nc, self.Nomad.Namespace
}

// nomadJobOf finds the Nomad job of the Caravan job ref names.
func (m *Meta) nomadJobOf(client *api.Client, ref jobRef) (*nomadJob, bool) {
	sum, _, err := client.Jobs().Summary(ref.ID, ref.query())
	if err != nil {
		m.apiError(fmt.Sprintf("reading job %q", ref.ID), err)
		return nil, false
	}
	nc, nomadNamespace := m.nomadClient(client, sum.Job.Namespace)
	if nc == nil {
		return nil, false
	}
	job := &structs.Job{Namespace: sum.Job.Namespace, ID: sum.Job.ID}
	if sum.Job.Nomad != nil {
		job.Nomad = &structs.NomadSource{}
	}
	return &nomadJob{client: nc, ID: nomad.NomadJobID(job, nomadNamespace)}, true
}

// jobAllocations resolves the job id names and reads the allocations of
// its Nomad job; it prints what is wrong and returns false on errors.
func (m *Meta) jobAllocations(client *api.Client, id string) (jobRef, *nomadJob, []*nomadapi.AllocationListStub, bool) {
	ref, ok := m.resolveJob(client, id)
	if !ok {
		return ref, nil, nil, false
	}
	nj, ok := m.nomadJobOf(client, ref)
	if !ok {
		return ref, nil, nil, false
	}
	allocs, _, err := nj.client.Jobs().Allocations(nj.ID, false, nil)
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error reading the allocations of Nomad job %q: %v", nj.ID, err))
		return ref, nil, nil, false
	}
	return ref, nj, allocs, true
}

// AllocStatusCommand lists a job's Nomad allocations, or shows one.
type AllocStatusCommand struct {
	Meta
}

func (c *AllocStatusCommand) Synopsis() string { return "Displays the Nomad allocations of a job" }

func (c *AllocStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan alloc status [options] <job or alloc>

  With a Caravan job's ID (or its start), lists the allocations of the Nomad
  job that runs it: ID, task group (role and node), node, desired and
  client status, and when it was created. With an allocation's ID (or its
  start), shows its tasks: state, whether it failed, restarts and the last
  event.
` + nomadHelp + `

Alloc Status Options:
` + jsonOption("the allocations, or the allocation,") + `
` + generalOptions)
}

func (c *AllocStatusCommand) Run(args []string) int {
	var asJSON bool
	flags := c.FlagSet("alloc status")
	flags.BoolVar(&asJSON, "json", false, "")
	client, ok := c.agentCommand(flags, args, c.Help(), oneArgument("<job or alloc>"))
	if !ok {
		return 1
	}
	arg := flags.Arg(0)
	jobs, _, err := client.Jobs().List(&api.QueryOptions{Namespace: c.namespace, Prefix: arg})
	if err != nil {
		c.apiError("listing jobs", err)
		return 1
	}
	if len(jobs) == 0 {
		// Not a job: an allocation.
		nc, _ := c.nomadClient(client, c.namespace)
		if nc == nil {
			return 1
		}
		stubs, _, err := nc.Allocations().PrefixList(arg)
		if err != nil || len(stubs) != 1 {
			c.Ui.Error(fmt.Sprintf("No job, and no single Nomad allocation, with an ID that starts with %q (%d allocations; error: %v)", arg, len(stubs), err))
			return 1
		}
		alloc, _, err := nc.Allocations().Info(stubs[0].ID, nil)
		if err != nil {
			c.Ui.Error("Error reading allocation: " + err.Error())
			return 1
		}
		return c.output(asJSON, alloc, func() string { return formatAlloc(alloc) })
	}
	_, nj, allocs, ok := c.jobAllocations(client, arg)
	if !ok {
		return 1
	}
	return c.output(asJSON, allocs, func() string { return formatAllocs(nj.ID, allocs) })
}

// shortID is the first 8 characters of an ID, as Nomad's CLI shows them.
func shortID(id string) string { return id[:min(8, len(id))] }

// formatAllocs tabulates a Nomad job's allocations, newest first.
func formatAllocs(job string, allocs []*nomadapi.AllocationListStub) string {
	if len(allocs) == 0 {
		return fmt.Sprintf("No allocations of Nomad job %q", job)
	}
	slices.SortFunc(allocs, func(a, b *nomadapi.AllocationListStub) int { return cmp.Compare(b.CreateTime, a.CreateTime) })
	rows := [][]string{{"ID", "Task Group", "Node ID", "Desired", "Status", "Created"}}
	for _, a := range allocs {
		rows = append(rows, []string{shortID(a.ID), a.TaskGroup, shortID(a.NodeID), a.DesiredStatus, a.ClientStatus, formatTime(a.CreateTime)})
	}
	return fmt.Sprintf("Nomad job %q\n\n%s", job, formatList(rows))
}

// formatAlloc describes one allocation and its tasks.
func formatAlloc(a *nomadapi.Allocation) string {
	kv := formatKV([][2]string{
		{"ID", a.ID},
		{"Job", a.JobID},
		{"Task Group", a.TaskGroup},
		{"Node ID", a.NodeID},
		{"Node Name", a.NodeName},
		{"Desired", a.DesiredStatus},
		{"Status", a.ClientStatus},
		{"Description", orDash(a.ClientDescription)},
		{"Created", formatTime(a.CreateTime)},
	})
	rows := [][]string{{"Task", "State", "Failed", "Restarts", "Last Event"}}
	for _, name := range slices.Sorted(maps.Keys(a.TaskStates)) {
		ts := a.TaskStates[name]
		last := "-"
		if n := len(ts.Events); n > 0 {
			e := ts.Events[n-1]
			last = fmt.Sprintf("%s: %s (%s)", e.Type, orDash(e.DisplayMessage), time.Unix(0, e.Time).Local().Format(time.RFC3339))
		}
		rows = append(rows, []string{name, ts.State, fmt.Sprint(ts.Failed), fmt.Sprint(ts.Restarts), last})
	}
	return kv + "\n\nTasks\n" + formatList(rows)
}

// JobLogsCommand prints a task's logs from Nomad.
type JobLogsCommand struct {
	Meta
}

func (c *JobLogsCommand) Synopsis() string { return "Prints the logs of a job's task" }

func (c *JobLogsCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan job logs [options] <job>

  Prints the logs of one task of a Caravan job that runs in Nomad, as nomad
  alloc logs does: by default the stdout of the first running worker.
` + nomadHelp + `

Logs Options:

  -role=<role>    The task's role, worker (default) or ps.
  -alloc=<id>     The allocation (or the start of its ID) instead.
  -task=<name>    The task in the allocation; default the role's task.
  -stderr         Prints standard error instead of standard output.
` + generalOptions)
}

func (c *JobLogsCommand) Run(args []string) int {
	var role, allocID, task string
	var stderr bool
	flags := c.FlagSet("job logs")
	flags.StringVar(&role, "role", "worker", "")
	flags.StringVar(&allocID, "alloc", "", "")
	flags.StringVar(&task, "task", "", "")
	flags.BoolVar(&stderr, "stderr", false, "")
	client, ok := c.agentCommand(flags, args, c.Help(), oneArgument("<job>"))
	if !ok {
		return 1
	}
	ref, nj, allocs, ok := c.jobAllocations(client, flags.Arg(0))
	if !ok {
		return 1
	}
	stub := pickAlloc(allocs, role, allocID)
	if stub == nil {
		c.Ui.Error(fmt.Sprintf("Nomad job %q has no running allocation of role %q (caravan alloc status %s lists them)", nj.ID, role, ref.ID))
		return 1
	}
	alloc, _, err := nj.client.Allocations().Info(stub.ID, nil)
	if err != nil {
		c.Ui.Error("Error reading allocation: " + err.Error())
		return 1
	}
	if task == "" {
		task = defaultTask(alloc, role)
	}
	logType := "stdout"
	if stderr {
		logType = "stderr"
	}
	cancel := make(chan struct{})
	defer close(cancel)
	frames, errs := nj.client.AllocFS().Logs(alloc, false, task, logType, nomadapi.OriginStart, 0, cancel, nil)
	var out strings.Builder
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				c.Ui.Output(strings.TrimRight(out.String(), "\n"))
				return 0
			}
			out.Write(f.Data)
		case err := <-errs:
			// What was read before the stream broke is printed, as Nomad's
			// alloc logs prints each frame as it comes.
			if out.Len() > 0 {
				c.Ui.Output(strings.TrimRight(out.String(), "\n"))
			}
			c.Ui.Error(fmt.Sprintf("Error reading the %s of task %q in allocation %s: %v", logType, task, shortID(alloc.ID), err))
			return 1
		}
	}
}

// pickAlloc returns the allocation whose ID starts with id, or, without
// one, the oldest running allocation of role's groups (named
// <role>-<node>), else the newest of them; nil when none.
func pickAlloc(allocs []*nomadapi.AllocationListStub, role, id string) *nomadapi.AllocationListStub {
	slices.SortFunc(allocs, func(a, b *nomadapi.AllocationListStub) int { return cmp.Compare(a.CreateTime, b.CreateTime) })
	var last *nomadapi.AllocationListStub
	for _, a := range allocs {
		switch {
		case id != "":
			if strings.HasPrefix(a.ID, id) {
				return a
			}
		case strings.HasPrefix(a.TaskGroup, role+"-"):
			if a.ClientStatus == nomadapi.AllocClientStatusRunning {
				return a
			}
			last = a
		}
	}
	return last
}

// defaultTask is the task named role in alloc, else its first task other
// than the collector sidecar.
func defaultTask(alloc *nomadapi.Allocation, role string) string {
	if _, ok := alloc.TaskStates[role]; ok {
		return role
	}
	for _, name := range slices.Sorted(maps.Keys(alloc.TaskStates)) {
		if name != "collector" {
			return name
		}
	}
	return role
}
