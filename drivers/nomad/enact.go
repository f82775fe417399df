package nomad

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
)

// change is what Enact does to one job.
type change struct {
	key       [2]string
	job       *structs.Job
	placement *structs.Placement
	// existing is the job's Nomad job, nil if there is none.
	existing *nomadJob
	// checkpoint says whether tasks run whose progress a checkpoint must
	// save first.
	checkpoint bool
	// restart says the change starts failed tasks again.
	restart bool
}

// Enact makes Nomad run plan. For each job whose Nomad job does not run
// the placement's fingerprint it submits the next generation of the
// Nomad job; a job whose tasks run is first checkpointed (the rescale
// protocol of DESIGN.md §3):
//
//  1. send the job's checkpoint signal to its running allocations,
//  2. wait until a sample committed after the request reports a newer
//     checkpoint step, at most the job's checkpoint timeout,
//  3. submit the new generation, whose tasks resume from the checkpoint.
//
// A rescale whose checkpoint is not confirmed is not applied: the job
// keeps running as it was, a RescaleAborted event says why, and the same
// placement is not tried again for AbortBackoff. A paused placement
// checkpoints and stops the Nomad job; a job the plan does not name is
// stopped. Jobs are changed concurrently. Enacting a plan Nomad already
// runs changes nothing, which is how a new leader adopts the Nomad jobs
// of the last.
func (d *Driver) Enact(ctx context.Context, plan *structs.Plan, jobs []*structs.Job) error {
	existing, err := d.list(ctx)
	if err != nil {
		return err
	}
	specs := make(map[[2]string]*structs.Job, len(jobs))
	for _, j := range jobs {
		specs[[2]string{j.Namespace, j.ID}] = j
	}
	var changes []*change
	planned := map[[2]string]bool{}
	for _, p := range plan.Placements {
		key := [2]string{p.Namespace, p.JobID}
		planned[key] = true
		job := specs[key]
		if job == nil {
			return fmt.Errorf("plan %d names job %q without its spec", plan.Index, p.JobID)
		}
		if c := d.changeFor(key, job, p, existing[key]); c != nil {
			changes = append(changes, c)
		}
	}
	var errs []error
	for key, nj := range existing {
		if !planned[key] && nj.running() {
			errs = append(errs, d.deregister(ctx, nj))
		}
	}
	d.mu.Lock()
	for key := range d.jobs {
		if !planned[key] {
			delete(d.jobs, key)
		}
	}
	d.mu.Unlock()
	results := make([]error, len(changes))
	var wg sync.WaitGroup
	for i, c := range changes {
		wg.Go(func() { results[i] = d.apply(ctx, plan, c) })
	}
	wg.Wait()
	return errors.Join(append(errs, results...)...)
}

// changeFor decides what to do to one job; nil means nothing.
func (d *Driver) changeFor(key [2]string, job *structs.Job, p *structs.Placement, nj *nomadJob) *change {
	js := d.state(key)
	c := &change{key: key, job: job, placement: p, existing: nj, checkpoint: nj.running()}
	if js.lost {
		c.restart, c.checkpoint = true, false
		return c
	}
	if p.Paused() {
		if !nj.running() {
			return nil
		}
		return c
	}
	fp := Fingerprint(job, p)
	switch {
	case nj.running() && nj.stub.Meta[metaPlacement] == fp:
		return nil // already runs it
	case nj != nil && !nj.stub.Stop && nj.stub.Meta[metaPlacement] == fp:
		return nil // finished; Status reports how
	case js.aborted == fp && time.Since(js.abortedAt) < d.cfg.AbortBackoff:
		return nil
	}
	return c
}

// apply carries out one change: checkpoint if tasks run, then submit the
// next generation or, for a paused placement, stop the Nomad job.
func (d *Driver) apply(ctx context.Context, plan *structs.Plan, c *change) error {
	js := d.state(c.key)
	since := time.Now()
	if c.checkpoint {
		step, err := d.checkpoint(ctx, c)
		if err != nil {
			js.aborted, js.abortedAt = Fingerprint(c.job, c.placement), time.Now()
			d.event(ctx, c.job, structs.EventRescaleAborted, "rescale not applied, the job keeps running as it was: "+err.Error(), nil)
			return nil
		}
		if step >= 0 {
			d.event(ctx, c.job, structs.EventCheckpointConfirmed, fmt.Sprintf("checkpoint at step %d confirmed", step), map[string]string{"step": strconv.FormatInt(step, 10)})
		}
	}
	if c.placement.Paused() {
		js.lost = false // a paused job has no tasks to lose
		return d.deregister(ctx, c.existing)
	}
	gen := 1
	if c.existing != nil {
		gen = c.existing.generation + 1
	}
	if c.restart {
		js.restarts++
		d.event(ctx, c.job, structs.EventJobRestarted, fmt.Sprintf("starting generation %d from the last checkpoint (restart %d of %d): %s", gen, js.restarts, d.cfg.MaxRestarts, js.lostMsg), nil)
	}
	nj := Translate(c.job, c.placement, Submission{
		Namespace: d.cfg.Namespace, CheckpointDir: d.cfg.CheckpointDir,
		ReportAddrs: d.cfg.ReportAddrs, Generation: gen, PlanIndex: plan.Index, Collector: d.cfg.Collector,
	})
	if _, _, err := d.client.Jobs().Register(nj, (&api.WriteOptions{Namespace: *nj.Namespace}).WithContext(ctx)); err != nil {
		return fmt.Errorf("submit Nomad job %s: %w", *nj.ID, err)
	}
	js.lost = false
	js.starting = &start{generation: gen, since: since, rescale: c.checkpoint}
	d.log.Info("submitted Nomad job", "job_id", c.job.ID, "nomad_job", *nj.ID, "generation", gen, "ps", c.placement.NumPS, "workers", c.placement.NumWorkers)
	return nil
}

// errNothingRuns means no allocation of the job runs, so no progress can
// be lost and no checkpoint is needed.
var errNothingRuns = errors.New("no task runs")

// checkpoint asks the job's running tasks to checkpoint and waits for a
// committed sample to confirm it; it returns the checkpoint's step, or -1
// when no task ran that could have made progress.
func (d *Driver) checkpoint(ctx context.Context, c *change) (int64, error) {
	d.mu.Lock()
	host := d.host
	d.mu.Unlock()
	if host == nil {
		return 0, errors.New("the driver has no server to confirm checkpoints")
	}
	signal, timeout := structs.DefaultCheckpointSignal, structs.DefaultCheckpointTimeout
	if e := c.job.Elastic; e != nil && e.Checkpoint != nil {
		signal, timeout = e.Checkpoint.Signal, e.Checkpoint.Timeout
	}
	before, _ := host.LastSample(c.key[0], c.key[1])
	err := d.signal(ctx, c.existing, signal)
	if errors.Is(err, errNothingRuns) {
		return -1, nil
	} else if err != nil {
		return 0, err
	}
	d.event(ctx, c.job, structs.EventCheckpointRequested, fmt.Sprintf("sent %s to checkpoint (last checkpoint step %d), waiting up to %s", signal, before.CheckpointStep, timeout), nil)
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(d.cfg.ConfirmPoll)
	defer tick.Stop()
	for {
		if last, ok := host.LastSample(c.key[0], c.key[1]); ok && last.CheckpointStep > before.CheckpointStep {
			return last.CheckpointStep, nil
		}
		select {
		case <-wait.Done():
			return 0, fmt.Errorf("no checkpoint newer than step %d was reported within %s of %s", before.CheckpointStep, timeout, signal)
		case <-tick.C:
		}
	}
}

// signal sends sig to every running allocation of the Nomad job.
func (d *Driver) signal(ctx context.Context, nj *nomadJob, sig string) error {
	_, allocs, err := d.current(ctx, nj)
	if err != nil {
		return err
	}
	sent := 0
	var errs []error
	for _, a := range allocs {
		if a.ClientStatus != api.AllocClientStatusRunning {
			continue
		}
		q := (&api.QueryOptions{Namespace: nj.namespace()}).WithContext(ctx)
		if err := d.client.Allocations().Signal(&api.Allocation{ID: a.ID, Namespace: a.Namespace}, q, "", sig); err != nil {
			errs = append(errs, fmt.Errorf("signal allocation %s: %w", a.ID, err))
			continue
		}
		sent++
	}
	if sent == 0 && len(errs) == 0 {
		return errNothingRuns
	}
	if sent == 0 {
		return errors.Join(errs...)
	}
	return nil
}

// deregister stops a Nomad job, keeping it (and its metadata) in Nomad.
func (d *Driver) deregister(ctx context.Context, nj *nomadJob) error {
	if _, _, err := d.client.Jobs().Deregister(nj.stub.ID, false, (&api.WriteOptions{Namespace: nj.namespace()}).WithContext(ctx)); err != nil && !isNotFound(err) {
		return fmt.Errorf("stop Nomad job %s: %w", nj.stub.ID, err)
	}
	d.log.Info("stopped Nomad job", "nomad_job", nj.stub.ID)
	return nil
}
