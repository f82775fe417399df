package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// snapshotTimeout bounds saving or restoring a snapshot.
const snapshotTimeout = 10 * time.Minute

// OperatorSnapshotSaveCommand saves the cluster's state to a file.
type OperatorSnapshotSaveCommand struct {
	Meta
}

func (c *OperatorSnapshotSaveCommand) Synopsis() string {
	return "Saves a snapshot of the cluster's state"
}

func (c *OperatorSnapshotSaveCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan operator snapshot save [options] <file>

  Saves a snapshot of the cluster's replicated state (jobs, placements,
  models, configuration) to <file>. The file is written whole or not at all:
  the snapshot goes to a temporary file beside it, renamed when complete.
` + generalOptions)
}

func (c *OperatorSnapshotSaveCommand) Run(args []string) int {
	flags := c.FlagSet("operator snapshot save")
	client, ok := c.agentCommand(flags, args, c.Help(), oneArgument("<file>"))
	if !ok {
		return 1
	}
	path := flags.Arg(0)
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating snapshot file: %v", err))
		return 1
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed

	ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	if _, err := client.Operator().SnapshotSave(tmp, queryOpts(ctx)); err != nil {
		tmp.Close()
		c.apiError("saving snapshot", err)
		return 1
	}
	if err := tmp.Close(); err != nil {
		c.Ui.Error(fmt.Sprintf("Error writing snapshot file: %v", err))
		return 1
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		c.Ui.Error(fmt.Sprintf("Error writing snapshot file: %v", err))
		return 1
	}
	c.Ui.Output("State file written to " + path)
	return 0
}

// OperatorSnapshotRestoreCommand replaces the cluster's state with a
// snapshot.
type OperatorSnapshotRestoreCommand struct {
	Meta
}

func (c *OperatorSnapshotRestoreCommand) Synopsis() string {
	return "Restores the cluster's state from a snapshot"
}

func (c *OperatorSnapshotRestoreCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan operator snapshot restore [options] <file>

  Replaces the cluster's replicated state with the snapshot in <file>, saved
  by "caravan operator snapshot save". Everything registered since the
  snapshot was taken is lost.
` + generalOptions)
}

func (c *OperatorSnapshotRestoreCommand) Run(args []string) int {
	flags := c.FlagSet("operator snapshot restore")
	if !c.parseArgs(flags, args, c.Help(), oneArgument("<file>")) {
		return 1
	}
	f, err := os.Open(flags.Arg(0))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error opening snapshot file: %v", err))
		return 1
	}
	defer f.Close()
	client, ok := c.client()
	if !ok {
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	if _, err := client.Operator().SnapshotRestore(f, writeOpts(ctx)); err != nil {
		c.apiError("restoring snapshot", err)
		return 1
	}
	c.Ui.Output("Snapshot Restored")
	return 0
}
