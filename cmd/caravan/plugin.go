package main

import (
	"context"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/api"
)

// pluginCommand is the parent of the plugin subcommands.
var pluginCommand = parentCommand{
	synopsis: "Work with algorithm plugins",
	help: `
Usage: caravan plugin <subcommand> [options] [args]

  Works with the scheduling algorithms an agent can run: the built-ins and
  the external plugins its configuration declares.

  List them with their version and health:

      $ caravan plugin list

  Please see the individual subcommand help for detailed usage information.`,
}

// PluginListCommand lists the algorithms of an agent.
type PluginListCommand struct {
	Meta
}

func (c *PluginListCommand) Synopsis() string { return "Lists the algorithms an agent can run" }

func (c *PluginListCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan plugin list [options]

  Lists the scheduling algorithms the agent at -address can run: name,
  version, origin (builtin, or the external plugin's binary), contract
  version, health, and for external plugins how often they failed and how
  long their last start took. Each agent runs its own plugin processes.

List Options:
` + jsonOption("the algorithms") + `
` + generalOptions)
}

func (c *PluginListCommand) Run(args []string) int {
	var asJSON bool
	flags := c.FlagSet("plugin list")
	flags.BoolVar(&asJSON, "json", false, "")
	client, ok := c.agentCommand(flags, args, c.Help(), noArguments)
	if !ok {
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	plugins, _, err := client.Plugins(queryOpts(ctx))
	if err != nil {
		c.apiError("listing the plugins", err)
		return 1
	}
	return c.output(asJSON, plugins, func() string { return formatPlugins(plugins) })
}

// formatPlugins tabulates the algorithms.
func formatPlugins(plugins []*api.PluginStatus) string {
	rows := [][]string{{"Name", "Version", "Origin", "API", "Health", "Restarts", "Start", "Error"}}
	for _, p := range plugins {
		origin, start := p.Origin, "-"
		if p.Path != "" {
			origin = p.Path
		}
		if p.StartSeconds > 0 {
			start = strconv.FormatFloat(p.StartSeconds*1000, 'f', 0, 64) + "ms"
		}
		rows = append(rows, []string{p.Name, orDash(p.Version), origin, orDash(p.APIVersion), p.Health, strconv.Itoa(p.Restarts), start, orDash(p.Error)})
	}
	return formatList(rows)
}
