package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/jobspec"
)

// defaultRunTimeout bounds how long job run follows a job to its placement.
const defaultRunTimeout = 5 * time.Minute

// followWait is the wait of each blocking query while following a job.
const followWait = 30 * time.Second

// exitPlacementFailure is job run's exit code when the job's first
// placement is paused (registered, but nothing runs), or when the server
// refuses the job because no node could ever run it.
const exitPlacementFailure = 2

// neverFits reports whether err is the server's refusal of a job that no
// node could run even empty: a 422 (server.checkFits).
func neverFits(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.StatusCode == http.StatusUnprocessableEntity
}

// JobRunCommand registers a job and follows it to its first placement.
// It exits 0 when the job is placed (or complete), 2 when its first
// placement is paused or the server refused it as one no node could ever
// run, as Nomad's job run exits 2 on placement failures, and 1 on errors.
type JobRunCommand struct {
	Meta
}

func (c *JobRunCommand) Synopsis() string { return "Registers a job and waits for its placement" }

func (c *JobRunCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan job run [options] <path>

  Parses the ML jobspec at <path> ("-" reads standard input), as "caravan job
  validate" does, and registers the job with the Caravan agent. Unless
  -detach is given, it then follows the job until the scheduler places it
  (or it ends), prints its placement per node, and exits 0.

  It exits 2 without registering the job when no node could ever run one
  of its tasks, even with nothing else on it: the error says why in
  Nomad's words ("missing devices", "missing drivers", a constraint that
  filtered every node, a dimension exhausted on every node).

  It exits 2 if the scheduler's first placement of the job runs nothing:
  it prints the Placement Failure (nodes evaluated, how many each constraint
  filtered, on how many each resource was exhausted), and the job stays
  registered and pending until there is room ("caravan job status" shows
  why it waits). It exits 1 if the job cannot be registered, fails, or is
  not placed within -timeout.

  A Nomad job file whose groups carry a caravan scaling policy (which
  "caravan job validate" and "caravan job plan" take) is refused: such a
  job is submitted to Nomad with "nomad job run", and Caravan takes it
  over from Nomad; "caravan job convert" turns it into an ML jobspec.

  As Nomad's job run, it is declarative: the jobspec of a job that is already
  registered and active is its new version ("caravan job plan" shows the
  difference first), and an unchanged jobspec changes nothing; the job's
  current placement is printed. A job that has ended runs again as a new
  version.

Run Options:

  -detach
    Returns as soon as the job is registered, printing its version and the
    index of the registration.

  -update
    Accepted for compatibility: every run of an active job's jobspec updates
    it.

  -timeout=<duration>
    How long to wait for a placement. Default: 5m.
` + jsonOption("the registration (and the placement, unless -detach)") + `
` + jobspecOptions + `
` + generalOptions)
}

func (c *JobRunCommand) Run(args []string) int {
	var detach, asJSON bool
	var timeout time.Duration
	job, format := c.jobspecCommand("job run", args, c.Help(), func(f *flag.FlagSet) {
		f.BoolVar(&detach, "detach", false, "")
		f.Bool("update", false, "")
		f.BoolVar(&asJSON, "json", false, "")
		f.DurationVar(&timeout, "timeout", defaultRunTimeout, "")
	})
	if job == nil {
		return 1
	}
	if format == jobspec.FormatNomad {
		c.Ui.Error(nomadRunRefused(args[len(args)-1]))
		return 1
	}
	client, ok := c.client()
	if !ok {
		return 1
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, _, err := client.Jobs().Update(job.ID, &api.JobRegisterRequest{Job: job}, writeOpts(ctx))
	if err != nil {
		c.apiError(fmt.Sprintf("registering job %q", job.ID), err)
		if neverFits(err) {
			return exitPlacementFailure
		}
		return 1
	}
	registered := fmt.Sprintf("Job registered: %s (version %d, index %d)", resp.JobID, resp.Version, resp.Index)
	if resp.Unchanged {
		registered = fmt.Sprintf("Job unchanged: %s (version %d)", resp.JobID, resp.Version)
	}
	if detach {
		return c.output(asJSON, resp, func() string { return registered })
	}
	if !asJSON {
		c.Ui.Output("==> " + registered)
	}
	sum, since, err := c.follow(ctx, client, job.Namespace, resp, !asJSON)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			c.Ui.Error(fmt.Sprintf("Error: timed out after %v waiting for a placement of job %q; it stays registered (see \"caravan job status %s\")",
				timeout, resp.JobID, resp.JobID))
			return 1
		}
		c.apiError(fmt.Sprintf("following job %q", resp.JobID), err)
		return 1
	}
	p := decidedSince(sum, since)
	status := sum.Job.Status
	failed := p != nil && p.Placement.Paused() && !api.Terminal(status)
	if asJSON {
		code := c.outputJSON(struct {
			Registration *api.JobRegisterResponse
			Summary      *api.JobSummary
		}{resp, sum})
		if code == 0 && failed {
			return exitPlacementFailure
		}
		return code
	}
	if p != nil && !p.Placement.Paused() {
		c.Ui.Output(fmt.Sprintf("==> Job %q placed at plan index %d by %s: %s", resp.JobID, p.PlanIndex, p.Algorithm, placementCounts(p.Placement)))
		c.Ui.Output(indent(formatPlacement(p.Placement, false)))
		return 0
	}
	if failed {
		c.Ui.Output(fmt.Sprintf("==> Job %q: Placement Failure at plan index %d by %s", resp.JobID, p.PlanIndex, p.Algorithm))
		c.Ui.Output(indent(formatPlacementFailure(p.Placement)))
		c.Ui.Output(fmt.Sprintf("==> Job %q stays registered and %s until there is room; \"caravan job status %s\" shows why it waits", resp.JobID, status, resp.JobID))
		return exitPlacementFailure
	}
	desc := ""
	if sum.Job.StatusDescription != "" {
		desc = ": " + sum.Job.StatusDescription
	}
	if status == api.JobStatusComplete {
		c.Ui.Output(fmt.Sprintf("==> Job %q is complete%s", resp.JobID, desc))
		return 0
	}
	c.Ui.Error(fmt.Sprintf("==> Job %q is %s%s", resp.JobID, status, desc))
	return 1
}

// nomadRunRefused says why job run does not register the Nomad job file
// at path, and what does: a job declared in Nomad is Nomad's, and Caravan
// takes it over from Nomad's job list (the agent refuses a job that says
// it comes from Nomad).
func nomadRunRefused(path string) string {
	return fmt.Sprintf(`Error: %s is a Nomad job file: submit it to Nomad with "nomad job run %s", and Caravan's leader takes the job over from Nomad (on the nomad driver). "caravan job plan %s" shows what Caravan would place; "caravan job convert %s" turns it into a jobspec that "caravan job run" registers.`,
		path, path, path, path)
}

// follow waits for what the registration resp leads to, and returns the
// job's summary then and the plan index after which its placement counts:
//   - a job an unchanged registration left placed or ended: at once, with
//     the placement it has;
//   - a new version of a job that is placed: after the scheduler's next
//     round, with the placement that round gave it, new or not;
//   - a job registered anew, or still waiting: after a placement by a plan
//     committed after the registration, or when it ends.
//
// With progress it says which wait it is in.
func (c *JobRunCommand) follow(ctx context.Context, client *api.Client, namespace string, resp *api.JobRegisterResponse, progress bool) (*api.JobSummary, uint64, error) {
	say := func(msg string) {
		if progress {
			c.Ui.Output(msg)
		}
	}
	cur, _, err := client.Jobs().Summary(resp.JobID, (&api.QueryOptions{Namespace: namespace}).WithContext(ctx))
	if err != nil {
		return nil, 0, err
	}
	// A registration that restarted an ended job set its CreateIndex; its
	// placements are of the run before.
	updated := cur.Job.CreateIndex < resp.Index && cur.Placement != nil
	switch {
	case resp.Unchanged && api.Terminal(cur.Job.Status):
		return cur, 0, nil
	case resp.Unchanged && updated:
		// The placement it has, once the driver took it up.
		sum, err := followToPlacement(ctx, client, namespace, resp.JobID, 0)
		return sum, 0, err
	case updated:
		say("==> Waiting for the scheduler's next round...")
		if err := followToNextRound(ctx, client, resp); err != nil {
			return nil, 0, err
		}
		sum, err := followToPlacement(ctx, client, namespace, resp.JobID, 0)
		return sum, 0, err
	}
	say("==> Waiting for a placement...")
	sum, err := followToPlacement(ctx, client, namespace, resp.JobID, resp.Index)
	return sum, resp.Index, err
}

// followToNextRound waits with blocking queries until the leader commits a
// decision after the registration resp. It returns ctx's error when ctx
// ends first.
func followToNextRound(ctx context.Context, client *api.Client, resp *api.JobRegisterResponse) error {
	q := (&api.QueryOptions{WaitIndex: resp.Index, WaitTime: followWait}).WithContext(ctx)
	for {
		plan, meta, err := client.LatestPlan(q)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if plan.Index > resp.Index {
			return nil
		}
		q.WaitIndex = max(q.WaitIndex, meta.LastIndex)
	}
}

// decidedSince returns the job's desired placement if a decision
// committed after index gave it one: a paused one, or one the driver has
// taken up (it runs, or a change toward it began). Nil otherwise.
func decidedSince(sum *api.JobSummary, index uint64) *api.JobPlacement {
	p := sum.Placement
	if p == nil || p.Placement == nil || p.PlanIndex <= index {
		return nil
	}
	if p.Placement.Paused() {
		return p
	}
	if o := sum.Observed; o != nil && (o.Placement.SameTasks(p.Placement) || o.Change != nil && o.Change.PlanIndex >= p.PlanIndex) {
		return p
	}
	return nil
}

// followToPlacement waits with blocking queries until a decision after
// index gives job id a placement (see decidedSince) or the job reaches a
// terminal status, and returns its summary then. It returns ctx's error
// when ctx ends first.
func followToPlacement(ctx context.Context, client *api.Client, namespace, id string, index uint64) (*api.JobSummary, error) {
	q := (&api.QueryOptions{Namespace: namespace, WaitIndex: index, WaitTime: followWait}).WithContext(ctx)
	for {
		sum, meta, err := client.Jobs().Summary(id, q)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if decidedSince(sum, index) != nil || api.Terminal(sum.Job.Status) {
			return sum, nil
		}
		if meta.LastIndex > q.WaitIndex {
			q.WaitIndex = meta.LastIndex
		}
	}
}
