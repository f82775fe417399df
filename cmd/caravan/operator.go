package main

import (
	"strings"

	"github.com/hashicorp/cli"
)

// OperatorCommand is the parent of the operator subcommands; alone it
// prints help.
type OperatorCommand struct {
	Meta
}

func (c *OperatorCommand) Synopsis() string { return "Provides cluster-level tools for operators" }

func (c *OperatorCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan operator <subcommand> [options] [args]

  Provides cluster-level tools for Caravan operators: the Raft peer set,
  snapshots of the cluster's state, and the scheduler's configuration.

  List the Raft peers:

      $ caravan operator raft list-peers

  Save a snapshot of the state:

      $ caravan operator snapshot save backup.snap

  Switch the scheduling algorithm:

      $ caravan operator scheduler set-config -algorithm drf

  Please see the individual subcommand help for detailed usage information.`)
}

func (c *OperatorCommand) Run(args []string) int { return cli.RunResultHelp }

// OperatorRaftCommand is the parent of the operator raft subcommands.
type OperatorRaftCommand struct {
	Meta
}

func (c *OperatorRaftCommand) Synopsis() string { return "Provides access to the Raft subsystem" }

func (c *OperatorRaftCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan operator raft <subcommand> [options]

  Inspects and changes the servers of the Raft peer set.

  List the peers:

      $ caravan operator raft list-peers

  Remove a peer that is gone for good:

      $ caravan operator raft remove-peer -peer-id <id>

  Please see the individual subcommand help for detailed usage information.`)
}

func (c *OperatorRaftCommand) Run(args []string) int { return cli.RunResultHelp }

// OperatorSnapshotCommand is the parent of the operator snapshot
// subcommands.
type OperatorSnapshotCommand struct {
	Meta
}

func (c *OperatorSnapshotCommand) Synopsis() string {
	return "Saves and restores snapshots of the state"
}

func (c *OperatorSnapshotCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan operator snapshot <subcommand> [options] <file>

  Saves the cluster's replicated state to a file, and restores it.

  Save a snapshot:

      $ caravan operator snapshot save backup.snap

  Restore it:

      $ caravan operator snapshot restore backup.snap

  Please see the individual subcommand help for detailed usage information.`)
}

func (c *OperatorSnapshotCommand) Run(args []string) int { return cli.RunResultHelp }

// OperatorSchedulerCommand is the parent of the operator scheduler
// subcommands.
type OperatorSchedulerCommand struct {
	Meta
}

func (c *OperatorSchedulerCommand) Synopsis() string {
	return "Provides access to the scheduler configuration"
}

func (c *OperatorSchedulerCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan operator scheduler <subcommand> [options]

  Reads and changes the replicated scheduler configuration: which algorithm
  the leader places jobs with, and its options.

  Show the configuration:

      $ caravan operator scheduler get-config

  Switch to DRF:

      $ caravan operator scheduler set-config -algorithm drf

  Please see the individual subcommand help for detailed usage information.`)
}

func (c *OperatorSchedulerCommand) Run(args []string) int { return cli.RunResultHelp }
