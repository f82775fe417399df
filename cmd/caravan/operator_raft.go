package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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

  -json
    Prints the peers as JSON.
` + generalOptions)
}

func (c *OperatorRaftListPeersCommand) Run(args []string) int {
	var asJSON bool
	flags := c.FlagSet("operator raft list-peers")
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
		return c.outputJSON(conf)
	}
	rows := [][]string{{"Node", "ID", "Address", "State", "Voter"}}
	for _, s := range conf.Servers {
		state := "follower"
		if s.Leader {
			state = "leader"
		}
		rows = append(rows, []string{orDash(s.Name), s.ID, s.Address, state, strconv.FormatBool(s.Voter)})
	}
	c.Ui.Output(formatList(rows))
	return 0
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
	if err := flags.Parse(args); err != nil {
		c.Ui.Error(err.Error() + "\n\n" + c.Help())
		return 1
	}
	if flags.NArg() != 0 || peerID == "" {
		c.Ui.Error("This command takes -peer-id and no arguments\n\n" + c.Help())
		return 1
	}
	client, err := c.client()
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if err := client.Operator().RaftRemovePeer(ctx, peerID); err != nil {
		c.apiError(fmt.Sprintf("removing peer %q", peerID), err)
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Removed peer with id %q", peerID))
	return 0
}
