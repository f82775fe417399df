package main

import "github.com/hashicorp/cli"

// commands is the registry of CLI commands, keyed by their words.
func commands(m Meta) map[string]cli.CommandFactory {
	return map[string]cli.CommandFactory{
		"version":      func() (cli.Command, error) { return &VersionCommand{Meta: m}, nil },
		"agent":        func() (cli.Command, error) { return &AgentCommand{Meta: m}, nil },
		"job":          func() (cli.Command, error) { return &JobCommand{Meta: m}, nil },
		"job validate": func() (cli.Command, error) { return &JobValidateCommand{Meta: m}, nil },
		"job inspect":  func() (cli.Command, error) { return &JobInspectCommand{Meta: m}, nil },
		"sim":          func() (cli.Command, error) { return &SimCommand{Meta: m}, nil },

		// Commands that talk to an agent's HTTP API.
		"job run":                       func() (cli.Command, error) { return &JobRunCommand{Meta: m}, nil },
		"job status":                    func() (cli.Command, error) { return &JobStatusCommand{Meta: m}, nil },
		"job stop":                      func() (cli.Command, error) { return &JobStopCommand{Meta: m}, nil },
		"job plan":                      func() (cli.Command, error) { return &JobPlanCommand{Meta: m}, nil },
		"job history":                   func() (cli.Command, error) { return &JobHistoryCommand{Meta: m}, nil },
		"events":                        func() (cli.Command, error) { return &EventsCommand{Meta: m}, nil },
		"server":                        func() (cli.Command, error) { return &ServerCommand{Meta: m}, nil },
		"server members":                func() (cli.Command, error) { return &ServerMembersCommand{Meta: m}, nil },
		"node":                          func() (cli.Command, error) { return &NodeCommand{Meta: m}, nil },
		"node status":                   func() (cli.Command, error) { return &NodeStatusCommand{Meta: m}, nil },
		"operator":                      func() (cli.Command, error) { return &OperatorCommand{Meta: m}, nil },
		"operator raft":                 func() (cli.Command, error) { return &OperatorRaftCommand{Meta: m}, nil },
		"operator raft list-peers":      func() (cli.Command, error) { return &OperatorRaftListPeersCommand{Meta: m}, nil },
		"operator raft remove-peer":     func() (cli.Command, error) { return &OperatorRaftRemovePeerCommand{Meta: m}, nil },
		"operator snapshot":             func() (cli.Command, error) { return &OperatorSnapshotCommand{Meta: m}, nil },
		"operator snapshot save":        func() (cli.Command, error) { return &OperatorSnapshotSaveCommand{Meta: m}, nil },
		"operator snapshot restore":     func() (cli.Command, error) { return &OperatorSnapshotRestoreCommand{Meta: m}, nil },
		"operator scheduler":            func() (cli.Command, error) { return &OperatorSchedulerCommand{Meta: m}, nil },
		"operator scheduler get-config": func() (cli.Command, error) { return &OperatorSchedulerGetConfigCommand{Meta: m}, nil },
		"operator scheduler set-config": func() (cli.Command, error) { return &OperatorSchedulerSetConfigCommand{Meta: m}, nil },
	}
}
