package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/api"
)

// OperatorRaftListPeersCommand lists the Raft peers, as Nomad's does.
type OperatorRaftListPeersCommand struct {
	Meta
}

func (c *OperatorRaftListPeersCommand) Synopsis() string { return "Displays the current Raft peer set" }

func (c *OperatorRaftListPeersCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan operator raft list-peers [options]

  Displays the servers of the Raft configuration: their name, ID, Raft
  address, state (leader or follower) and whether they vote. Useful to find
  the ID of a server to remove with "caravan operator raft remove-peer".

List Peers Options:
` + jsonOption("the peers") + `
` + generalOptions)
}

func (c *OperatorRaftListPeersCommand) Run(args []string) int {
	var asJSON bool
	flags := c.FlagSet("operator raft list-peers")
	flags.BoolVar(&asJSON, "json", false, "")
	client, ok := c.agentCommand(flags, args, c.Help(), noArguments)
	if !ok {
		return 1
	}
	conf, ok := c.raftConfiguration(client)
	if !ok {
		return 1
	}
	return c.output(asJSON, conf, func() string { return formatPeers(conf.Servers) })
}

// formatPeers tabulates the Raft peers and their state.
func formatPeers(servers []*api.RaftServer) string {
	rows := [][]string{{"Node", "ID", "Address", "State", "Voter"}}
	for _, s := range servers {
		state := "follower"
		if s.Leader {
			state = "leader"
		}
		rows = append(rows, []string{orDash(s.Name), s.ID, s.Address, state, strconv.FormatBool(s.Voter)})
	}
	return formatList(rows)
}

// OperatorRaftRemovePeerCommand removes a server from the Raft peer set.
type OperatorRaftRemovePeerCommand struct {
	Meta
}

func (c *OperatorRaftRemovePeerCommand) Synopsis() string {
	return "Removes a server from the Raft peer set"
}

func (c *OperatorRaftRemovePeerCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan operator raft remove-peer -peer-id <id> [options]

  Removes a server from the Raft configuration. Use it for a server that is
  gone for good and did not leave: while it stays a voter it counts towards
  the quorum. Find its ID with "caravan operator raft list-peers".

Remove Peer Options:

  -peer-id=<id>
    The ID of the server to remove. Required.
` + generalOptions)
}

func (c *OperatorRaftRemovePeerCommand) Run(args []string) int {
	var peerID string
	flags := c.FlagSet("operator raft remove-peer")
	flags.StringVar(&peerID, "peer-id", "", "")
	want := arguments{usage: "This command takes -peer-id and no arguments"}
	if !c.parseArgs(flags, args, c.Help(), want) {
		return 1
	}
	if peerID == "" {
		c.usageError(want.usage, c.Help())
		return 1
	}
	client, ok := c.client()
	if !ok {
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if _, err := client.Operator().RaftRemovePeer(peerID, writeOpts(ctx)); err != nil {
		c.apiError(fmt.Sprintf("removing peer %q", peerID), err)
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Removed peer with id %q", peerID))
	return 0
}
