package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/hashicorp/cli"
)

// aclCommand is the parent of the acl subcommands.
var aclCommand = parentCommand{
	synopsis: "Interacts with ACL policies and tokens",
	help: `
Usage: caravan acl <subcommand> [options] [args]

  Bootstraps the ACL system and manages its policies and tokens, as Nomad's
  acl command. The agents need acl { enabled = true }.

  Bootstrap, once per cluster:

      $ caravan acl bootstrap

  Create a policy and a token with it:

      $ caravan acl policy apply -description "ML team" ml ml.policy.hcl
      $ caravan acl token create -name alice -policy ml

  Please see the individual subcommand help for detailed usage information.`,
}

var aclPolicyCommand = parentCommand{
	synopsis: "Interacts with ACL policies",
	help: `
Usage: caravan acl policy <subcommand> [options] [args]

  Creates, lists, reads and deletes ACL policies: apply, list, info, delete.`,
}

var aclTokenCommand = parentCommand{
	synopsis: "Interacts with ACL tokens",
	help: `
Usage: caravan acl token <subcommand> [options] [args]

  Creates, lists, reads and deletes ACL tokens: create, list, info, self,
  delete.`,
}

// aclCommands are the acl commands, for commands.go.
func aclCommands(m Meta) map[string]cli.CommandFactory {
	cmd := func(c cli.Command) cli.CommandFactory { return func() (cli.Command, error) { return c, nil } }
	return map[string]cli.CommandFactory{
		"acl":               aclCommand.factory(),
		"acl bootstrap":     cmd(&ACLBootstrapCommand{Meta: m}),
		"acl policy":        aclPolicyCommand.factory(),
		"acl policy apply":  cmd(&ACLPolicyApplyCommand{Meta: m}),
		"acl policy list":   cmd(&ACLPolicyListCommand{Meta: m}),
		"acl policy info":   cmd(&ACLPolicyInfoCommand{Meta: m}),
		"acl policy delete": cmd(&ACLPolicyDeleteCommand{Meta: m}),
		"acl token":         aclTokenCommand.factory(),
		"acl token create":  cmd(&ACLTokenCreateCommand{Meta: m}),
		"acl token list":    cmd(&ACLTokenListCommand{Meta: m}),
		"acl token info":    cmd(&ACLTokenInfoCommand{Meta: m}),
		"acl token self":    cmd(&ACLTokenSelfCommand{Meta: m}),
		"acl token delete":  cmd(&ACLTokenDeleteCommand{Meta: m}),
	}
}

func formatToken(t *api.ACLToken) string {
	secret := t.SecretID
	if secret == "" {
		secret = "<hidden>"
	}
	return formatKV([][2]string{
		{"Accessor ID", t.AccessorID},
		{"Secret ID", secret},
		{"Name", t.Name},
		{"Type", t.Type},
		{"Policies", "[" + strings.Join(t.Policies, " ") + "]"},
		{"Create Time", time.Unix(0, t.CreateTime).UTC().Format(time.RFC3339)},
		{"Create Index", fmt.Sprint(t.CreateIndex)},
		{"Modify Index", fmt.Sprint(t.ModifyIndex)},
	})
}

func formatPolicy(p *api.ACLPolicy) string {
	return formatKV([][2]string{
		{"Name", p.Name},
		{"Description", p.Description},
		{"Create Index", fmt.Sprint(p.CreateIndex)},
		{"Modify Index", fmt.Sprint(p.ModifyIndex)},
	}) + "\n\nRules\n\n" + p.Rules
}

func reqCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), requestTimeout)
}

// showACL runs what the acl commands that read and show share: a -json
// flag, the agent's client, one request (get, with the command's
// arguments), and its answer printed as JSON or by format. what names the
// request in an error.
func showACL[T any](m *Meta, args []string, name, help string, want arguments, what func(args []string) string,
	get func(ctx context.Context, a *api.ACL, args []string) (T, error), format func(T) string) int {
	var asJSON bool
	flags := m.FlagSet(name)
	flags.BoolVar(&asJSON, "json", false, "")
	client, ok := m.agentCommand(flags, args, help, want)
	if !ok {
		return 1
	}
	ctx, cancel := reqCtx()
	defer cancel()
	v, err := get(ctx, client.ACL(), flags.Args())
	if err != nil {
		m.apiError(what(flags.Args()), err)
		return 1
	}
	return m.output(asJSON, v, func() string { return format(v) })
}

// ACLBootstrapCommand creates the first management token.
type ACLBootstrapCommand struct{ Meta }

func (c *ACLBootstrapCommand) Synopsis() string { return "Bootstraps the ACL system" }
func (c *ACLBootstrapCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan acl bootstrap [options]

  Creates the cluster's first management token and prints it, secret
  included. It works once per cluster; keep the secret safe.

Bootstrap Options:

  -json
    Prints the token as JSON.
` + generalOptions)
}

func (c *ACLBootstrapCommand) Run(args []string) int {
	return showACL(&c.Meta, args, "acl bootstrap", c.Help(), noArguments,
		func([]string) string { return "bootstrapping the ACL system" },
		func(ctx context.Context, a *api.ACL, _ []string) (*api.ACLToken, error) {
			return value(a.Bootstrap(writeOpts(ctx)))
		},
		formatToken)
}
