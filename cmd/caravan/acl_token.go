package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/caravan-sched/caravan/api"
)

// ACLTokenCreateCommand creates a token.
type ACLTokenCreateCommand struct{ Meta }

func (c *ACLTokenCreateCommand) Synopsis() string { return "Creates an ACL token" }
func (c *ACLTokenCreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan acl token create [options]

  Creates a token and prints it, secret included. Needs a management token.

Create Options:

  -name=<name>
    Names the token.

  -type=<client|management>
    The token's type. Default: client.

  -policy=<name>
    A policy of a client token; repeat for more.

  -json
    Prints the token as JSON.
` + generalOptions)
}

func (c *ACLTokenCreateCommand) Run(args []string) int {
	var name, typ string
	var policies stringsFlag
	var asJSON bool
	flags := c.FlagSet("acl token create")
	flags.StringVar(&name, "name", "", "")
	flags.StringVar(&typ, "type", api.ACLClientToken, "")
	flags.Var(&policies, "policy", "")
	flags.BoolVar(&asJSON, "json", false, "")
	client, ok := c.agentCommand(flags, args, c.Help(), noArguments)
	if !ok {
		return 1
	}
	ctx, cancel := reqCtx()
	defer cancel()
	tok, _, err := client.ACL().CreateToken(&api.ACLTokenRequest{Name: name, Type: typ, Policies: policies}, writeOpts(ctx))
	if err != nil {
		c.apiError("creating ACL token", err)
		return 1
	}
	return c.output(asJSON, tok, func() string { return formatToken(tok) })
}

// ACLTokenListCommand lists the tokens.
type ACLTokenListCommand struct{ Meta }

func (c *ACLTokenListCommand) Synopsis() string { return "Lists ACL tokens" }
func (c *ACLTokenListCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan acl token list [options]

  Lists the tokens, without their secrets. Needs a management token.

List Options:

  -json
    Prints the tokens as JSON.
` + generalOptions)
}

func (c *ACLTokenListCommand) Run(args []string) int {
	return showACL(&c.Meta, args, "acl token list", c.Help(), noArguments,
		func([]string) string { return "listing ACL tokens" },
		func(ctx context.Context, a *api.ACL, _ []string) ([]*api.ACLToken, error) {
			return value(a.Tokens(queryOpts(ctx)))
		},
		func(toks []*api.ACLToken) string {
			if len(toks) == 0 {
				return "No tokens found"
			}
			rows := [][]string{{"Name", "Type", "Accessor ID", "Policies"}}
			for _, t := range toks {
				rows = append(rows, []string{t.Name, t.Type, t.AccessorID, strings.Join(t.Policies, ",")})
			}
			return formatList(rows)
		})
}

// ACLTokenInfoCommand shows a token by accessor.
type ACLTokenInfoCommand struct{ Meta }

func (c *ACLTokenInfoCommand) Synopsis() string { return "Shows an ACL token" }
func (c *ACLTokenInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan acl token info [options] <accessor_id>

  Shows a token, secret included. Needs a management token.

Info Options:

  -json
    Prints the token as JSON.
` + generalOptions)
}

func (c *ACLTokenInfoCommand) Run(args []string) int {
	return showACL(&c.Meta, args, "acl token info", c.Help(), oneArgument("<accessor_id>"),
		func(args []string) string { return fmt.Sprintf("reading token %q", args[0]) },
		func(ctx context.Context, a *api.ACL, args []string) (*api.ACLToken, error) {
			return value(a.Token(args[0], queryOpts(ctx)))
		},
		formatToken)
}

// ACLTokenSelfCommand shows the token the CLI sends.
type ACLTokenSelfCommand struct{ Meta }

func (c *ACLTokenSelfCommand) Synopsis() string { return "Shows the token in use" }
func (c *ACLTokenSelfCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan acl token self [options]

  Shows the token given by -token or CARAVAN_TOKEN.

Self Options:

  -json
    Prints the token as JSON.
` + generalOptions)
}

func (c *ACLTokenSelfCommand) Run(args []string) int {
	return showACL(&c.Meta, args, "acl token self", c.Help(), noArguments,
		func([]string) string { return "reading the token in use" },
		func(ctx context.Context, a *api.ACL, _ []string) (*api.ACLToken, error) {
			return value(a.Self(queryOpts(ctx)))
		},
		formatToken)
}

// ACLTokenDeleteCommand deletes a token by accessor.
type ACLTokenDeleteCommand struct{ Meta }

func (c *ACLTokenDeleteCommand) Synopsis() string { return "Deletes an ACL token" }
func (c *ACLTokenDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan acl token delete [options] <accessor_id>

  Deletes a token. Needs a management token.
` + generalOptions)
}

func (c *ACLTokenDeleteCommand) Run(args []string) int {
	flags := c.FlagSet("acl token delete")
	client, ok := c.agentCommand(flags, args, c.Help(), oneArgument("<accessor_id>"))
	if !ok {
		return 1
	}
	ctx, cancel := reqCtx()
	defer cancel()
	if _, err := client.ACL().DeleteToken(flags.Arg(0), writeOpts(ctx)); err != nil {
		c.apiError(fmt.Sprintf("deleting token %q", flags.Arg(0)), err)
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Token %s successfully deleted", flags.Arg(0)))
	return 0
}
