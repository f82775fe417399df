package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/cenkalti/backoff/v4"
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
  printing them as they happen, using blocking queries; when the agent
  goes away it tries again, waiting longer each time (up to 30s), and goes
  on from the last event it printed once the agent, or another one at the
  same address, answers.

Events Options:

  -job=<id>          Only the events of this job (in -namespace, when set).
  -filter=<expr>     Only the events this go-bexpr expression selects, such
                     as 'Type == "JobRescaled"'.
  -follow            Keep printing new events.
  -until-done=<id>   With -follow: stop when this job completes, fails or is
                     stopped (exit 0 if it completed, 1 otherwise).
  -timeout=<d>       With -follow: give up after d (exit 1). Default 0: never.
  -json              One JSON object per event.
` + generalOptions)
}

func (c *EventsCommand) Run(args []string) int {
	var (
		job, until, filter string
		follow, asJSON     bool
		timeout            time.Duration
	)
	flags := c.FlagSet("events")
	flags.StringVar(&job, "job", "", "")
	flags.StringVar(&filter, "filter", "", "")
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
	timedOut := func() int {
		c.Ui.Error(fmt.Sprintf("Timed out after %v", timeout))
		return 1
	}
	retry := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(250*time.Millisecond),
		backoff.WithMaxInterval(30*time.Second),
		backoff.WithMaxElapsedTime(0))
	header := !asJSON
	var after uint64
	for {
		q := (&api.QueryOptions{Namespace: c.namespace, Filter: filter}).WithContext(ctx)
		if after > 0 {
			q.WaitIndex, q.WaitTime = after, time.Minute
		}
		events, meta, err := client.Events(job, q)
		switch {
		case ctx.Err() != nil:
			return timedOut()
		case err != nil && (!follow || !retryable(err)):
			c.apiError("reading events", err)
			return 1
		case err != nil:
			wait := retry.NextBackOff()
			c.Ui.Warn(fmt.Sprintf("Error reading events: %v; trying again in %v", err, wait.Round(time.Millisecond)))
			select {
			case <-ctx.Done():
				return timedOut()
			case <-time.After(wait):
			}
			continue
		}
		retry.Reset()
		if header && len(events) > 0 {
			c.Ui.Output(fmt.Sprintf(eventFormat, "Time", "Namespace", "Job", "Type", "Message"))
			header = false
		}
		for _, e := range events {
			c.print(e, asJSON)
			if e.JobID == until && until != "" {
				switch e.Type {
				case api.EventJobCompleted:
					return 0
				case api.EventJobFailed, api.EventJobStopped:
					return 1
				}
			}
		}
		if !follow {
			return 0
		}
		if meta.LastIndex < after {
			// The agent's state starts lower than what was printed: a
			// new cluster (a dev agent restarted) answers at this address.
			c.Ui.Warn(fmt.Sprintf("The agent's events start over (index %d, after %d): following from its first event", meta.LastIndex, after))
			after = 0
			continue
		}
		after = meta.LastIndex
		if after == 0 {
			// A blocking query needs an index to wait past: until the
			// cluster records its first event, ask again each second.
			select {
			case <-ctx.Done():
				return timedOut()
			case <-time.After(time.Second):
			}
		}
	}
}

// retryable reports whether a failed read may succeed later: the agent
// did not answer, or answered that it has no leader (5xx), rather than
// refusing the request.
func retryable(err error) bool {
	var e *api.Error
	if errors.As(err, &e) {
		return e.StatusCode >= 500
	}
	return true
}

// eventFormat aligns the events table with fixed widths, since events
// print as they come.
const eventFormat = "%-8s  %-10s  %-14s  %-17s  %s"

func (c *EventsCommand) print(e *api.Event, asJSON bool) {
	if asJSON {
		buf, _ := json.Marshal(e)
		c.Ui.Output(string(buf))
		return
	}
	c.Ui.Output(fmt.Sprintf(eventFormat, time.Unix(0, e.Time).Format("15:04:05"), orDash(e.Namespace), orDash(e.JobID), e.Type, e.Message))
}
