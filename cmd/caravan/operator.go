package main

// operatorCommand is the parent of the operator subcommands.
var operatorCommand = parentCommand{
	synopsis: "Provides cluster-level tools for operators",
	help: `
Usage: caravan operator <subcommand> [options] [args]

  Provides cluster-level tools for Caravan operators: the Raft peer set,
  snapshots of the cluster's state, and the scheduler's configuration.

  List the Raft peers:

      $ caravan operator raft list-peers

  Save a snapshot of the state:

      $ caravan operator snapshot save backup.snap

  Switch the scheduling algorithm:

      $ caravan operator scheduler set-config -algorithm drf

  Please see the individual subcommand help for detailed usage information.`,
}

// operatorRaftCommand is the parent of the operator raft subcommands.
var operatorRaftCommand = parentCommand{
	synopsis: "Provides access to the Raft subsystem",
	help: `
Usage: caravan operator raft <subcommand> [options]

  Inspects and changes the servers of the Raft peer set.

  List the peers:

      $ caravan operator raft list-peers

  Remove a peer that is gone for good:

      $ caravan operator raft remove-peer -peer-id <id>

  Please see the individual subcommand help for detailed usage information.`,
}

// operatorSnapshotCommand is the parent of the operator snapshot
// subcommands.
var operatorSnapshotCommand = parentCommand{
	synopsis: "Saves and restores snapshots of the state",
	help: `
Usage: caravan operator snapshot <subcommand> [options] <file>

  Saves the cluster's replicated state to a file, and restores it.

  Save a snapshot:

      $ caravan operator snapshot save backup.snap

  Restore it:

      $ caravan operator snapshot restore backup.snap

  Please see the individual subcommand help for detailed usage information.`,
}

// operatorSchedulerCommand is the parent of the operator scheduler
// subcommands.
var operatorSchedulerCommand = parentCommand{
	synopsis: "Provides access to the scheduler configuration",
	help: `
Usage: caravan operator scheduler <subcommand> [options]

  Reads and changes the replicated scheduler configuration: which algorithm
  the leader places jobs with, and its options.

  Show the configuration:

      $ caravan operator scheduler get-config

  Switch to DRF:

      $ caravan operator scheduler set-config -algorithm drf

  Please see the individual subcommand help for detailed usage information.`,
}
