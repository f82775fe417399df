package main

import (
	"context"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/api"
	"github.com/hashicorp/cli"
)

// ServerCommand is the parent of the server subcommands; alone it prints
// help.
type ServerCommand struct {
	Meta
}

func (c *ServerCommand) Synopsis() string { return "Work with Caravan servers" }

func (c *ServerCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan server <subcommand> [options] [args]

  Works with the Caravan servers of the cluster.

  List the servers and which one leads:

      $ caravan server members

  Please see the individual subcommand help for detailed usage information.`)
}

func (c *ServerCommand) Run(args []string) int { return cli.RunResultHelp }

// ServerMembersCommand lists the servers of the Raft configuration.
type ServerMembersCommand struct {
	Meta
}

func (c *ServerMembersCommand) Synopsis() string { return "Displays the known servers" }

func (c *ServerMembersCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan server members [options]

  Lists the servers of the cluster's Raft configuration: their ID and name,
  Raft and HTTP addresses, which one is the leader and which ones vote.

Members Options:

  -json
    Prints the servers as JSON.
` + generalOptions)
}

func (c *ServerMembersCommand) Run(args []string) int {
	var asJSON bool
	flags := c.FlagSet("server members")
	flags.BoolVar(&asJSON, "json", false, "")
	if err := flags.Parse(args); err != nil {
		c.Ui.Error(err.Error() + "\n\n" + c.Help())
		return 1
	}
	if flags.NArg() != 0 {
		c.Ui.Error("This command takes no arguments\n\n" + c.Help())
		return 1
	}
	conf, ok := c.raftConfiguration()
	if !ok {
		return 1
	}
	if asJSON {
		return c.outputJSON(conf.Servers)
	}
	rows := [][]string{{"Name", "ID", "Raft Address", "HTTP Address", "Leader", "Voter"}}
	for _, s := range conf.Servers {
		rows = append(rows, []string{orDash(s.Name), s.ID, s.Address, orDash(s.HTTPAddr), strconv.FormatBool(s.Leader), strconv.FormatBool(s.Voter)})
	}
	c.Ui.Output(formatList(rows))
	return 0
}

// raftConfiguration reads the Raft configuration, printing any error.
func (m *Meta) raftConfiguration() (*api.RaftConfiguration, bool) {
	client, err := m.client()
	if err != nil {
		m.Ui.Error(err.Error())
		return nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	conf, err := client.Operator().RaftConfiguration(ctx)
	if err != nil {
		m.apiError("reading the raft configuration", err)
		return nil, false
	}
	return conf, true
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
