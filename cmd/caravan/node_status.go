package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/structs"
)

// nodeCommand is the parent of the node subcommands.
var nodeCommand = parentCommand{
	synopsis: "Work with the cluster's client nodes",
	help: `
Usage: caravan node <subcommand> [options] [args]

  Works with the client nodes Caravan places tasks on.

  List the nodes and their resources:

      $ caravan node status

  Show one node, its devices and the tasks that run there:

      $ caravan node status <node>

  Please see the individual subcommand help for detailed usage information.`,
}

// NodeStatusCommand lists the cluster's nodes, or shows one.
type NodeStatusCommand struct {
	Meta
}

func (c *NodeStatusCommand) Synopsis() string { return "Displays the cluster's nodes" }

func (c *NodeStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan node status [options] [<node>]

  Without an argument, lists the nodes the driver reports: ID (its first 8
  characters, as Nomad's; -verbose prints it whole), name, datacenter,
  class, status, whether the scheduler may place tasks there, CPU (MHz),
  memory (MB), GPUs (healthy/total) and GPU type (the model of its GPUs,
  by which jobs on a mixed fleet are placed and profiled). With a node's
  ID, the start of one, or its name, shows the node: its resources and GPU
  type, its devices (vendor, type and model, instances and their health,
  attributes such as memory), the GPUs in use, and the tasks of each job
  that run there.

  Exits 1 on errors, among them the agent's driver failing to read the
  cluster (Nomad unreachable): the nodes the agent kept would be stale, and
  the error says since when and why.

Node Status Options:

  -verbose
    Prints full node IDs.
` + jsonOption("the nodes") + `
` + generalOptions)
}

func (c *NodeStatusCommand) Run(args []string) int {
	var asJSON, verbose bool
	flags := c.FlagSet("node status")
	flags.BoolVar(&asJSON, "json", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	client, ok := c.agentCommand(flags, args, c.Help(), optionalArgument("<node>"))
	if !ok {
		return 1
	}
	if flags.NArg() == 1 {
		id, ok := c.resolveNode(client, flags.Arg(0))
		if !ok {
			return 1
		}
		node, meta, err := client.Node(id, nil)
		if err != nil {
			c.apiError(fmt.Sprintf("reading node %q", id), err)
			return 1
		}
		if !c.driverHealthy(fmt.Sprintf("reading node %q", id), meta) {
			return 1
		}
		return c.output(asJSON, node, func() string { return formatNode(node) })
	}
	nodes, meta, err := client.Nodes(nil)
	if err != nil {
		c.apiError("listing nodes", err)
		return 1
	}
	if !c.driverHealthy("listing nodes", meta) {
		return 1
	}
	return c.output(asJSON, nodes, func() string { return formatNodes(nodes, verbose) })
}

// driverHealthy reports whether the agent's driver could read the
// cluster, by meta of an answer about nodes; when it could not, the nodes
// the agent kept are stale: it prints why and returns false.
func (m *Meta) driverHealthy(what string, meta *api.QueryMeta) bool {
	if meta == nil || meta.DriverError == "" {
		return true
	}
	m.Ui.Error(fmt.Sprintf("Error %s: the agent's driver cannot read the cluster since %s: %s\n\nThe agent keeps the nodes it last read; \"caravan events\" shows the outage.",
		what, meta.DriverErrorSince.Local().Format(time.RFC3339), meta.DriverError))
	return false
}

// formatNodes tabulates the nodes with their resources, with their full
// IDs when verbose and their first 8 characters otherwise, as Nomad's
// node status.
func formatNodes(nodes []*api.Node, verbose bool) string {
	if len(nodes) == 0 {
		return "No nodes"
	}
	rows := [][]string{{"ID", "Name", "Datacenter", "Class", "Status", "Eligible", "CPU", "Memory", "GPUs", "GPU Type"}}
	for _, n := range nodes {
		rows = append(rows, []string{nodeID(n.ID, verbose), n.Name,
			orDash(n.Datacenter), orDash(n.NodeClass), n.Status,
			strconv.FormatBool(n.Eligible), strconv.Itoa(n.CPU), strconv.Itoa(n.MemoryMB), gpus(n), orDash(n.GPUType())})
	}
	return formatList(rows)
}

// gpus is a node's healthy and total GPU instances, "healthy/total".
func gpus(n *api.Node) string {
	var healthy, total int
	for _, d := range n.Devices {
		if d.Type != "gpu" {
			continue
		}
		for _, inst := range d.Instances {
			total++
			if inst.Healthy {
				healthy++
			}
		}
	}
	return fmt.Sprintf("%d/%d", healthy, total)
}

// formatNode describes one node: its fields, devices and tasks.
func formatNode(d *api.NodeDetail) string {
	n := d.Node
	var b strings.Builder
	b.WriteString(formatKV([][2]string{
		{"ID", n.ID},
		{"Name", n.Name},
		{"Datacenter", orDash(n.Datacenter)},
		{"Class", orDash(n.NodeClass)},
		{"Node Pool", orDash(n.NodePool)},
		{"Status", n.Status},
		{"Eligible", strconv.FormatBool(n.Eligible)},
		{"CPU", fmt.Sprintf("%d MHz", n.CPU)},
		{"Memory", fmt.Sprintf("%d MB", n.MemoryMB)},
		{"GPU Type", orDash(n.GPUType())},
		{"GPUs In Use", fmt.Sprintf("%d of %d", d.GPUsUsed, d.GPUsTotal)},
	}))
	b.WriteString("\n\nDevices\n")
	if len(n.Devices) == 0 {
		b.WriteString("No devices")
	} else {
		rows := [][]string{{"Device", "Instances", "Healthy", "Attributes"}}
		for _, dev := range n.Devices {
			var attrs []string
			for _, k := range slices.Sorted(maps.Keys(dev.Attributes)) {
				attrs = append(attrs, k+"="+(*structs.Attribute)(dev.Attributes[k]).GoString())
			}
			id := structs.DeviceID{Vendor: dev.Vendor, Type: dev.Type, Name: dev.Name}
			rows = append(rows, []string{id.String(), strconv.Itoa(len(dev.Instances)), strconv.Itoa(dev.HealthyCount()), orDash(strings.Join(attrs, ", "))})
		}
		b.WriteString(formatList(rows))
	}
	b.WriteString("\n\nTasks\n")
	if len(d.Tasks) == 0 {
		b.WriteString("No tasks")
	} else {
		rows := [][]string{{"Job", "Namespace", "PS", "Workers", "GPUs"}}
		for _, t := range d.Tasks {
			rows = append(rows, []string{t.JobID, t.Namespace, strconv.Itoa(t.PS), strconv.Itoa(t.Workers), strconv.Itoa(t.GPUs)})
		}
		b.WriteString(formatList(rows))
	}
	return b.String()
}
