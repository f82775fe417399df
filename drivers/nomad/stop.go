package nomad

import (
	"context"
	"fmt"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
)

// metaPlacementDrained is the placement fingerprint of a version drain
// wrote: it matches no placement, so that any plan that names the job
// submits it again.
const metaPlacementDrained = "drained"

// drain sets every group of a Nomad job to count 0 before the job is
// stopped, at the version it reads (Nomad's check-index), and does
// nothing to a job already stopped or at count 0. It costs the job one
// more version. It runs on the job's worker.
func (d *Driver) drain(ctx context.Context, id namespacedID) error {
	info, err := d.readJob(ctx, id)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.Stop != nil && *info.Stop {
		return nil
	}
	return d.zero(ctx, id, info)
}

// zero registers a version of a Nomad job read as info, at its check
// index, with every group at count 0 and the job not stopped, and waits
// until Nomad evaluated it (awaitEval): only then may the job be stopped.
// Nomad v1.11.0 evaluates a stopped job with a reconciler that stops the
// allocations of one task group only (the stops of each group overwrite
// the last's: hashicorp/nomad#27175, fixed after v1.11.0), and that
// applies to every evaluation of the job scheduled once the stop is in,
// the count-0 version's too; the evaluation of a job at count 0 that is
// not stopped stops every allocation. A job not stopped and already at
// count 0 is left as it is.
func (d *Driver) zero(ctx context.Context, id namespacedID, info *api.Job) error {
	stopped := info.Stop != nil && *info.Stop
	zero := true
	for _, tg := range info.TaskGroups {
		if tg.Count != nil && *tg.Count > 0 {
			zero = false
			tg.Count = new(0)
		}
	}
	if zero && !stopped || info.JobModifyIndex == nil {
		return nil
	}
	info.Stop = new(false)
	if info.Meta[metaJobID] != "" {
		info.Meta[metaPlacement] = metaPlacementDrained
	}
	wctx, cancel := d.callContext(ctx)
	defer cancel()
	resp, _, err := d.client.Jobs().EnforceRegister(info, *info.JobModifyIndex, (&api.WriteOptions{Namespace: id.Namespace}).WithContext(wctx))
	if err != nil {
		return fmt.Errorf("scale Nomad job %s to 0 before stopping it: %w", id.ID, err)
	}
	return d.awaitEval(ctx, id.Namespace, resp.EvalID)
}

// evalWait bounds how long zero waits for Nomad to evaluate a job's
// version at count 0.
const evalWait = 10 * time.Second

// awaitEval waits, with blocking queries, until an evaluation is no
// longer pending, at most evalWait.
func (d *Driver) awaitEval(ctx context.Context, namespace, evalID string) error {
	if evalID == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, evalWait)
	defer cancel()
	var index uint64
	for {
		q := (&api.QueryOptions{Namespace: namespace, WaitIndex: index, WaitTime: evalWait}).WithContext(ctx)
		ev, meta, err := d.client.Evaluations().Info(evalID, q)
		if err != nil {
			return fmt.Errorf("wait for Nomad's evaluation %s: %w", evalID, err)
		}
		if ev.Status != api.EvalStatusPending {
			return nil
		}
		index = meta.LastIndex
	}
}

// deregister stops a Nomad job, keeping it (and its metadata) in Nomad;
// it scales the job to 0 first (drain).
func (d *Driver) deregister(ctx context.Context, nj *nomadJob) error {
	return d.deregisterID(ctx, nj.id())
}

func (d *Driver) deregisterID(ctx context.Context, id namespacedID) error {
	if err := d.drain(ctx, id); err != nil {
		d.log.Warn("stopping a Nomad job without scaling it to 0 first", "nomad_job", id.ID, "error", err)
	}
	if err := d.stopJob(ctx, id); err != nil {
		return err
	}
	d.log.Info("stopped Nomad job", "nomad_job", id.ID)
	return nil
}

// stopJob asks Nomad to stop a job; a job Nomad does not have is stopped.
func (d *Driver) stopJob(ctx context.Context, id namespacedID) error {
	ctx, cancel := d.callContext(ctx)
	defer cancel()
	if _, _, err := d.client.Jobs().Deregister(id.ID, false, (&api.WriteOptions{Namespace: id.Namespace}).WithContext(ctx)); err != nil && !isNotFound(err) {
		return fmt.Errorf("stop Nomad job %s: %w", id.ID, err)
	}
	return nil
}

// lingerGrace is how long the allocations of a stopped Nomad job may
// still be to run before the driver stops the job again: Nomad's
// evaluation of a stop normally takes well under a second.
const lingerGrace = 15 * time.Second

// stopLingering stops again a Nomad job of Caravan's that is stopped but
// has live allocations (to run, and pending or running) lingerGrace after
// Status first saw it so, as a stop Nomad evaluated before the job's
// count-0 version leaves them (see zero); they hold their nodes' devices
// meanwhile. It is tried every lingerGrace while any allocation is live.
// Status calls it for every stopped Nomad job it lists, at each call.
func (d *Driver) stopLingering(key structs.JobKey, nj *nomadJob, live int, now time.Time) {
	d.mu.Lock()
	since, seen := d.lingering[key]
	again := live > 0 && seen && now.Sub(since) >= lingerGrace
	switch {
	case live == 0:
		delete(d.lingering, key)
	case !seen || again:
		d.lingering[key] = now
	}
	d.mu.Unlock()
	if !again {
		return
	}
	d.log.Warn("allocations of a stopped Nomad job still run; stopping it again",
		"nomad_job", nj.stub.ID, "namespace", nj.namespace(), "live", live, "since", now.Sub(since).Round(time.Second))
	id := nj.id()
	d.enqueue(key, func(ctx context.Context) { d.stopAgain(ctx, id) })
}

// stopAgain registers a stopped Nomad job again at count 0 (zero) and
// stops it once Nomad evaluated that; a job a worker submitted since
// Status saw it stopped is left alone.
func (d *Driver) stopAgain(ctx context.Context, id namespacedID) {
	info, err := d.readJob(ctx, id)
	if err != nil {
		if !isNotFound(err) {
			d.log.Warn("cannot stop a Nomad job again", "nomad_job", id.ID, "error", err)
		}
		return
	}
	if info.Stop == nil || !*info.Stop {
		return
	}
	if err := d.zero(ctx, id, info); err != nil {
		d.log.Warn("stopping a Nomad job again without scaling it to 0 first", "nomad_job", id.ID, "error", err)
	}
	if err := d.stopJob(ctx, id); err != nil {
		d.log.Warn("cannot stop a Nomad job again", "nomad_job", id.ID, "error", err)
	}
}
