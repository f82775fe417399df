package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/api"
)

// OperatorSchedulerGetConfigCommand shows the scheduler configuration.
type OperatorSchedulerGetConfigCommand struct {
	Meta
}

func (c *OperatorSchedulerGetConfigCommand) Synopsis() string {
	return "Displays the current scheduler configuration"
}

func (c *OperatorSchedulerGetConfigCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan operator scheduler get-config [options]

  Displays the replicated scheduler configuration: the algorithm the leader
  places jobs with, its options, and the Raft index of the last change.

Get Config Options:
` + jsonOption("the configuration") + `
` + generalOptions)
}

func (c *OperatorSchedulerGetConfigCommand) Run(args []string) int {
	var asJSON bool
	flags := c.FlagSet("operator scheduler get-config")
	flags.BoolVar(&asJSON, "json", false, "")
	client, ok := c.agentCommand(flags, args, c.Help(), noArguments)
	if !ok {
		return 1
	}
	cfg, _, err := client.Operator().SchedulerConfig(nil)
	if err != nil {
		c.apiError("reading the scheduler configuration", err)
		return 1
	}
	return c.output(asJSON, cfg, func() string { return formatSchedulerConfig(cfg) })
}

// formatSchedulerConfig describes the scheduler configuration, its options
// sorted by name.
func formatSchedulerConfig(cfg *api.SchedulerConfig) string {
	kv := [][2]string{
		{"Algorithm", cfg.Algorithm},
		{"Modify Index", strconv.FormatUint(cfg.ModifyIndex, 10)},
	}
	out := formatKV(kv)
	if len(cfg.Options) > 0 {
		var opts [][2]string
		for _, k := range slices.Sorted(maps.Keys(cfg.Options)) {
			opts = append(opts, [2]string{k, cfg.Options[k]})
		}
		out += "\n\nOptions\n" + formatKV(opts)
	}
	return out
}

// OperatorSchedulerSetConfigCommand changes the scheduler configuration.
type OperatorSchedulerSetConfigCommand struct {
	Meta
}

func (c *OperatorSchedulerSetConfigCommand) Synopsis() string {
	return "Modifies the current scheduler configuration"
}

func (c *OperatorSchedulerSetConfigCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan operator scheduler set-config [options]

  Changes the replicated scheduler configuration; the leader switches at its
  next scheduling round. As in Nomad, what is not given is kept: without
  -algorithm the current algorithm stays, and -option values are added to
  its current options. Switching algorithms starts from no options. The
  server checks the algorithm and its options and refuses unknown ones.

Set Config Options:

  -algorithm=<name>
    The scheduling algorithm, such as optimus, drf, tetris or fifo.

  -option 'key=value'
    Sets an option of the algorithm. Repeatable; an empty value removes the
    option.
` + generalOptions)
}

func (c *OperatorSchedulerSetConfigCommand) Run(args []string) int {
	var algorithm string
	var options stringsFlag
	flags := c.FlagSet("operator scheduler set-config")
	flags.StringVar(&algorithm, "algorithm", "", "")
	flags.Var(&options, "option", "")
	if !c.parseArgs(flags, args, c.Help(), noArguments) {
		return 1
	}
	if algorithm == "" && len(options) == 0 {
		c.usageError("Give -algorithm, -option or both", c.Help())
		return 1
	}
	set := map[string]string{}
	for _, o := range options {
		k, v, ok := strings.Cut(o, "=")
		if !ok || k == "" {
			c.Ui.Error(fmt.Sprintf("Error: -option %q is not key=value", o))
			return 1
		}
		set[k] = v
	}
	client, ok := c.client()
	if !ok {
		return 1
	}
	cur, _, err := client.Operator().SchedulerConfig(nil)
	if err != nil {
		c.apiError("reading the scheduler configuration", err)
		return 1
	}
	req := &api.SchedulerConfigRequest{Algorithm: algorithm, Options: map[string]string{}}
	if algorithm == "" || algorithm == cur.Algorithm {
		req.Algorithm = cur.Algorithm
		maps.Copy(req.Options, cur.Options)
	}
	for k, v := range set {
		if v == "" {
			delete(req.Options, k)
		} else {
			req.Options[k] = v
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if _, err := client.Operator().SetSchedulerConfig(req, writeOpts(ctx)); err != nil {
		c.apiError("updating the scheduler configuration", err)
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Scheduler configuration updated: algorithm %q", req.Algorithm))
	return 0
}
