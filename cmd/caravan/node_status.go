package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/cli"
)

// NodeCommand is the parent of the node subcommands; alone it prints help.
type NodeCommand struct {
	Meta
}

func (c *NodeCommand) Synopsis() string { return "Work with the cluster's client nodes" }

func (c *NodeCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan node <subcommand> [options] [args]

  Works with the client nodes Caravan places tasks on.

  List the nodes and their resources:

      $ caravan node status

  Please see the individual subcommand help for detailed usage information.`)
}

func (c *NodeCommand) Run(args []string) int { return cli.RunResultHelp }

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

  -json
    Prints the nodes as JSON.
` + generalOptions)
}

func (c *NodeStatusCommand) Run(args []string) int {
	var asJSON bool
	flags := c.FlagSet("node status")
	flags.BoolVar(&asJSON, "json", false, "")
	if err := flags.Parse(args); err != nil {
		c.Ui.Error(err.Error() + "\n\n" + c.Help())
		return 1
	}
	if flags.NArg() != 0 {
		c.Ui.Error("This command takes no arguments\n\n" + c.Help())
		return 1
	}
	client, err := c.client()
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	nodes, _, err := client.Nodes(nil)
	if err != nil {
		c.apiError("listing nodes", err)
		return 1
	}
	if asJSON {
		return c.outputJSON(nodes)
	}
	if len(nodes) == 0 {
		c.Ui.Output("No nodes")
		return 0
	}
	rows := [][]string{{"ID", "Name", "Datacenter", "Class", "Status", "Eligible", "CPU", "Memory", "GPUs"}}
	for _, n := range nodes {
		rows = append(rows, []string{n.ID, n.Name, orDash(n.Datacenter), orDash(n.NodeClass), n.Status,
			strconv.FormatBool(n.Eligible), strconv.Itoa(n.CPU), strconv.Itoa(n.MemoryMB), gpus(n)})
	}
	c.Ui.Output(formatList(rows))
	return 0
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
