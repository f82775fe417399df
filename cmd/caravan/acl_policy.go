package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/caravan-sched/caravan/api"
)

// ACLPolicyApplyCommand creates or replaces a policy from a file.
type ACLPolicyApplyCommand struct{ Meta }

func (c *ACLPolicyApplyCommand) Synopsis() string { return "Creates or updates an ACL policy" }
func (c *ACLPolicyApplyCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan acl policy apply [options] <name> <path>

  Creates or replaces the policy <name> with the rules in the HCL file
  <path> ("-" reads standard input). Needs a management token. The policy
  named "anonymous" applies to requests without a token.

Apply Options:

  -description=<text>
    Describes the policy.
` + generalOptions)
}

func (c *ACLPolicyApplyCommand) Run(args []string) int {
	var desc string
	flags := c.FlagSet("acl policy apply")
	flags.StringVar(&desc, "description", "", "")
	client, ok := c.agentCommand(flags, args, c.Help(), arguments{2, 2, "This command takes two arguments: <name> <path>"})
	if !ok {
		return 1
	}
	name, path := flags.Arg(0), flags.Arg(1)
	var rules []byte
	var err error
	if path == "-" {
		rules, err = io.ReadAll(os.Stdin)
	} else {
		rules, err = os.ReadFile(path)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading policy rules: %v", err))
		return 1
	}
	ctx, cancel := reqCtx()
	defer cancel()
	if _, _, err := client.ACL().ApplyPolicy(name, &api.ACLPolicyRequest{Description: desc, Rules: string(rules)}, writeOpts(ctx)); err != nil {
		c.apiError(fmt.Sprintf("applying policy %q", name), err)
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Successfully wrote %q ACL policy!", name))
	return 0
}

// ACLPolicyListCommand lists the policies.
type ACLPolicyListCommand struct{ Meta }

func (c *ACLPolicyListCommand) Synopsis() string { return "Lists ACL policies" }
func (c *ACLPolicyListCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan acl policy list [options]

  Lists the ACL policies. Needs a management token.

List Options:

  -json
    Prints the policies as JSON.
` + generalOptions)
}

func (c *ACLPolicyListCommand) Run(args []string) int {
	return showACL(&c.Meta, args, "acl policy list", c.Help(), noArguments,
		func([]string) string { return "listing ACL policies" },
		func(ctx context.Context, a *api.ACL, _ []string) ([]*api.ACLPolicy, error) {
			return value(a.Policies(queryOpts(ctx)))
		},
		func(ps []*api.ACLPolicy) string {
			if len(ps) == 0 {
				return "No policies found"
			}
			rows := [][]string{{"Name", "Description"}}
			for _, p := range ps {
				rows = append(rows, []string{p.Name, p.Description})
			}
			return formatList(rows)
		})
}

// ACLPolicyInfoCommand shows a policy.
type ACLPolicyInfoCommand struct{ Meta }

func (c *ACLPolicyInfoCommand) Synopsis() string { return "Shows an ACL policy" }
func (c *ACLPolicyInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan acl policy info [options] <name>

  Shows a policy and its rules. Needs a management token.

Info Options:

  -json
    Prints the policy as JSON.
` + generalOptions)
}

func (c *ACLPolicyInfoCommand) Run(args []string) int {
	return showACL(&c.Meta, args, "acl policy info", c.Help(), oneArgument("<name>"),
		func(args []string) string { return fmt.Sprintf("reading policy %q", args[0]) },
		func(ctx context.Context, a *api.ACL, args []string) (*api.ACLPolicy, error) {
			return value(a.Policy(args[0], queryOpts(ctx)))
		},
		formatPolicy)
}

// ACLPolicyDeleteCommand deletes a policy.
type ACLPolicyDeleteCommand struct{ Meta }

func (c *ACLPolicyDeleteCommand) Synopsis() string { return "Deletes an ACL policy" }
func (c *ACLPolicyDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan acl policy delete [options] <name>

  Deletes a policy; tokens that name it lose what it granted. Needs a
  management token.
` + generalOptions)
}

func (c *ACLPolicyDeleteCommand) Run(args []string) int {
	flags := c.FlagSet("acl policy delete")
	client, ok := c.agentCommand(flags, args, c.Help(), oneArgument("<name>"))
	if !ok {
		return 1
	}
	ctx, cancel := reqCtx()
	defer cancel()
	if _, err := client.ACL().DeletePolicy(flags.Arg(0), writeOpts(ctx)); err != nil {
		c.apiError(fmt.Sprintf("deleting policy %q", flags.Arg(0)), err)
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Successfully deleted %q ACL policy!", flags.Arg(0)))
	return 0
}
