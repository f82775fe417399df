package main

import (
	"maps"
	"strings"

	"github.com/hashicorp/cli"
)

// commands is the registry of CLI commands, keyed by their words.
func commands(m Meta) map[string]cli.CommandFactory {
	all := map[string]cli.CommandFactory{
		"version":      func() (cli.Command, error) { return &VersionCommand{Meta: m}, nil },
		"agent":        func() (cli.Command, error) { return &AgentCommand{Meta: m}, nil },
		"collector":    func() (cli.Command, error) { return &CollectorCommand{Meta: m}, nil },
		"job":          jobCommand.factory(),
		"job validate": func() (cli.Command, error) { return &JobValidateCommand{Meta: m}, nil },
		"job convert":  func() (cli.Command, error) { return &JobConvertCommand{Meta: m}, nil },
		"sim":          func() (cli.Command, error) { return &SimCommand{Meta: m}, nil },

		// Commands that talk to an agent's HTTP API (job inspect of a
		// jobspec file does not).
		"job run":                       func() (cli.Command, error) { return &JobRunCommand{Meta: m}, nil },
		"job inspect":                   func() (cli.Command, error) { return &JobInspectCommand{Meta: m}, nil },
		"job status":                    func() (cli.Command, error) { return &JobStatusCommand{Meta: m}, nil },
		"job stop":                      func() (cli.Command, error) { return &JobStopCommand{Meta: m}, nil },
		"job plan":                      func() (cli.Command, error) { return &JobPlanCommand{Meta: m}, nil },
		"job history":                   func() (cli.Command, error) { return &JobHistoryCommand{Meta: m}, nil },
		"job versions":                  func() (cli.Command, error) { return &JobVersionsCommand{Meta: m}, nil },
		"job revert":                    func() (cli.Command, error) { return &JobRevertCommand{Meta: m}, nil },
		"job logs":                      func() (cli.Command, error) { return &JobLogsCommand{Meta: m}, nil },
		"alloc":                         allocCommand.factory(),
		"alloc status":                  func() (cli.Command, error) { return &AllocStatusCommand{Meta: m}, nil },
		"events":                        func() (cli.Command, error) { return &EventsCommand{Meta: m}, nil },
		"plugin":                        pluginCommand.factory(),
		"plugin list":                   func() (cli.Command, error) { return &PluginListCommand{Meta: m}, nil },
		"server":                        serverCommand.factory(),
		"server members":                func() (cli.Command, error) { return &ServerMembersCommand{Meta: m}, nil },
		"node":                          nodeCommand.factory(),
		"node status":                   func() (cli.Command, error) { return &NodeStatusCommand{Meta: m}, nil },
		"operator":                      operatorCommand.factory(),
		"operator raft":                 operatorRaftCommand.factory(),
		"operator raft list-peers":      func() (cli.Command, error) { return &OperatorRaftListPeersCommand{Meta: m}, nil },
		"operator raft remove-peer":     func() (cli.Command, error) { return &OperatorRaftRemovePeerCommand{Meta: m}, nil },
		"operator snapshot":             operatorSnapshotCommand.factory(),
		"operator snapshot save":        func() (cli.Command, error) { return &OperatorSnapshotSaveCommand{Meta: m}, nil },
		"operator snapshot restore":     func() (cli.Command, error) { return &OperatorSnapshotRestoreCommand{Meta: m}, nil },
		"operator scheduler":            operatorSchedulerCommand.factory(),
		"operator scheduler get-config": func() (cli.Command, error) { return &OperatorSchedulerGetConfigCommand{Meta: m}, nil },
		"operator scheduler set-config": func() (cli.Command, error) { return &OperatorSchedulerSetConfigCommand{Meta: m}, nil },

		// Certificates for mTLS, written to the current directory.
		"tls":             tlsCommand.factory(),
		"tls ca":          tlsCACommand.factory(),
		"tls ca create":   func() (cli.Command, error) { return &TLSCACreateCommand{Meta: m}, nil },
		"tls cert":        tlsCertCommand.factory(),
		"tls cert create": func() (cli.Command, error) { return &TLSCertCreateCommand{Meta: m}, nil },
	}
	maps.Copy(all, aclCommands(m))
	maps.Copy(all, queueCommands(m))
	return all
}

// parentCommand is a command that only groups subcommands, such as
// "operator raft": alone it prints its help (the CLI then exits 1).
type parentCommand struct {
	synopsis string
	// help is the usage text; surrounding white space is trimmed.
	help string
}

func (c *parentCommand) Synopsis() string { return c.synopsis }

func (c *parentCommand) Help() string { return strings.TrimSpace(c.help) }

func (c *parentCommand) Run(args []string) int { return cli.RunResultHelp }

// factory returns a factory of the command for the registry.
func (c parentCommand) factory() cli.CommandFactory {
	return func() (cli.Command, error) { return &c, nil }
}
