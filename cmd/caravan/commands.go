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
	}
}
