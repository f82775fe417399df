package main

import (
	"context"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/api"
)

// serverCommand is the parent of the server subcommands.
var serverCommand = parentCommand{
	synopsis: "Work with Caravan servers",
	help: `
Usage: caravan server <subcommand> [options] [args]

  Works with the Caravan servers of the cluster.

  List the servers and which one leads:

      $ caravan server members

  Please see the individual subcommand help for detailed usage information.`,
}

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
` + jsonOption("the servers") + `
` + generalOptions)
}

func (c *ServerMembersCommand) Run(args []string) int {
	var asJSON bool
	flags := c.FlagSet("server members")
	flags.BoolVar(&asJSON, "json", false, "")
	client, ok := c.agentCommand(flags, args, c.Help(), noArguments)
	if !ok {
		return 1
	}
	conf, ok := c.raftConfiguration(client)
	if !ok {
		return 1
	}
	return c.output(asJSON, conf.Servers, func() string { return formatMembers(conf.Servers) })
}

// formatMembers tabulates the servers of the Raft configuration.
func formatMembers(servers []*api.RaftServer) string {
	rows := [][]string{{"Name", "ID", "Raft Address", "HTTP Address", "Build", "Leader", "Voter"}}
	for _, s := range servers {
		rows = append(rows, []string{orDash(s.Name), s.ID, s.Address, orDash(s.HTTPAddr), orDash(s.Version), strconv.FormatBool(s.Leader), strconv.FormatBool(s.Voter)})
	}
	return formatList(rows)
}

// raftConfiguration reads the Raft configuration, printing any error.
func (m *Meta) raftConfiguration(client *api.Client) (*api.RaftConfiguration, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	conf, _, err := client.Operator().RaftConfiguration(queryOpts(ctx))
	if err != nil {
		m.apiError("reading the raft configuration", err)
		return nil, false
	}
	return conf, true
}
