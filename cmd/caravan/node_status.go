package main

import (
	"fmt"
	"strconv"
	"strings"

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

  Please see the individual subcommand help for detailed usage information.`,
}

// NodeStatusCommand lists the cluster's nodes.
type NodeStatusCommand struct {
	Meta
}

func (c *NodeStatusCommand) Synopsis() string { return "Displays the cluster's nodes" }

func (c *NodeStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan node status [options]

  Lists the nodes the driver reports: ID, name, datacenter, class, status,
  whether the scheduler may place tasks there, CPU (MHz), memory (MB) and
  GPUs (healthy/total).

Node Status Options:
` + jsonOption("the nodes") + `
` + generalOptions)
}

func (c *NodeStatusCommand) Run(args []string) int {
	var asJSON bool
	flags := c.FlagSet("node status")
	flags.BoolVar(&asJSON, "json", false, "")
	client, ok := c.agentCommand(flags, args, c.Help(), noArguments)
	if !ok {
		return 1
	}
	nodes, _, err := client.Nodes(nil)
	if err != nil {
		c.apiError("listing nodes", err)
		return 1
	}
	return c.output(asJSON, nodes, func() string { return formatNodes(nodes) })
}

// formatNodes tabulates the nodes with their resources.
func formatNodes(nodes []*structs.Node) string {
	if len(nodes) == 0 {
		return "No nodes"
	}
	rows := [][]string{{"ID", "Name", "Datacenter", "Class", "Status", "Eligible", "CPU", "Memory", "GPUs"}}
	for _, n := range nodes {
		rows = append(rows, []string{n.ID, n.Name, orDash(n.Datacenter), orDash(n.NodeClass), n.Status,
			strconv.FormatBool(n.Eligible), strconv.Itoa(n.CPU), strconv.Itoa(n.MemoryMB), gpus(n)})
	}
	return formatList(rows)
}

// gpus is a node's healthy and total GPU instances, "healthy/total".
func gpus(n *structs.Node) string {
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
