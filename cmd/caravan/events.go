package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/structs"
)

// EventsCommand prints the cluster's events.
type EventsCommand struct {
	Meta
}

func (c *EventsCommand) Synopsis() string { return "Show or follow the cluster's events" }

func (c *EventsCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan events [options]

  Prints the events the cluster recorded (jobs registered, placed, rescaled,
  completed, algorithm changes), oldest first. With -follow it keeps
  printing them as they happen, using blocking queries.

Events Options:

  -job=<id>          Only the events of this job.
  -follow            Keep printing new events.
  -until-done=<id>   With -follow: stop when this job completes, fails or is
                     stopped (exit 0 if it completed, 1 otherwise).
  -timeout=<d>       With -follow: give up after d (exit 1). Default 0: never.
  -json              One JSON object per event.
` + generalOptions)
}

func (c *EventsCommand) Run(args []string) int {
	var (
		job, until     string
		follow, asJSON bool
		timeout        time.Duration
	)
	flags := c.FlagSet("events")
	flags.StringVar(&job, "job", "", "")
	flags.StringVar(&until, "until-done", "", "")
	flags.BoolVar(&follow, "follow", false, "")
	flags.BoolVar(&asJSON, "json", false, "")
	flags.DurationVar(&timeout, "timeout", 0, "")
	want := arguments{usage: "This command takes no arguments, and -until-done needs -follow"}
	if !c.parseArgs(flags, args, c.Help(), want) {
		return 1
	}
	if until != "" && !follow {
		c.usageError(want.usage, c.Help())
		return 1
	}
	client, ok := c.client()
	if !ok {
		return 1
	}
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var after uint64
	for {
		q := &api.QueryOptions{Context: ctx}
		if after > 0 {
			q.WaitIndex, q.WaitTime = after, time.Minute
		}
		events, _, err := client.Events(after, job, q)
		if err != nil {
			if ctx.Err() != nil {
				c.Ui.Error(fmt.Sprintf("Timed out after %v", timeout))
			} else {
				c.apiError("reading events", err)
			}
			return 1
		}
		for _, e := range events {
			after = max(after, e.Seq)
			c.print(e, asJSON)
			if e.JobID == until && until != "" {
				switch e.Type {
				case structs.EventJobCompleted:
					return 0
				case structs.EventJobFailed, structs.EventJobStopped:
					return 1
				}
			}
		}
		if !follow {
			return 0
		}
		if after == 0 {
			// A blocking query needs an index to wait past: until the
			// cluster records its first event, ask again each second.
			select {
			case <-ctx.Done():
				c.Ui.Error(fmt.Sprintf("Timed out after %v", timeout))
				return 1
			case <-time.After(time.Second):
			}
		}
	}
}

func (c *EventsCommand) print(e *structs.Event, asJSON bool) {
	if asJSON {
		buf, _ := json.Marshal(e)
		c.Ui.Output(string(buf))
		return
	}
	job := e.JobID
	if job == "" {
		job = "-"
	}
	c.Ui.Output(fmt.Sprintf("%s  %-14s %-17s %s", time.Unix(0, e.Time).Format("15:04:05"), job, e.Type, e.Message))
}
