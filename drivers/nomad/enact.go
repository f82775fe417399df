package nomad

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
)

// change is what Enact does to one job.
type change struct {
	key       structs.JobKey
	job       *structs.Job
	placement *structs.Placement
	planIndex uint64
	// existing is the job's Nomad job, nil if there is none.
	existing *nomadJob
	// checkpoint says whether tasks run whose progress a checkpoint must
	// save first.
	checkpoint bool
	// restart says the change starts failed tasks again.
	restart bool
}

// flight is a change under way, or the last one that ended: its state as
// the leader sees it (structs.Change), and what advancing it needs.
type flight struct {
	*change
	state structs.Change
	// before is the checkpoint step reported before the checkpoint was
	// requested; deadline is when an unconfirmed checkpoint aborts the
	// change.
	before   int64
	signal   string
	deadline time.Time
	// began is when the change began: the checkpoint request of a
	// rescale, the submission otherwise. generation is the Nomad job's
	// generation submitted.
	began      time.Time
	generation int
}

// Enact starts making Nomad run plan and returns without waiting for any
// change to finish. For each job whose Nomad job does not run the
// placement's fingerprint it starts a change, the rescale protocol of
// DESIGN.md §3, which Status advances:
//
//  1. a job whose tasks run is sent its checkpoint signal (phase
//     checkpointing);
//  2. once a sample committed after the request reports a newer
//     checkpoint step, the next generation of the Nomad job is submitted
//     (phase starting); a job with nothing running is submitted at once;
//  3. once every task of that generation runs, the change is done.
//
// A rescale whose checkpoint is not confirmed within the job's checkpoint
// timeout is not applied: the job keeps running as it was, the change is
// aborted, a RescaleAborted event says why, and the same placement is not
// tried again for AbortBackoff. A job whose change is in flight gets no
// second change until it ends. A paused placement checkpoints and stops
// the Nomad job; a job the plan does not name is stopped. Enacting a plan
// Nomad already runs changes nothing, which is how a new leader adopts
// the Nomad jobs of the last. It reports every job the plan names.
func (d *Driver) Enact(ctx context.Context, plan *structs.Plan, jobs []*structs.Job) ([]*structs.JobReport, error) {
	existing, err := d.list(ctx)
	if err != nil {
		return nil, err
	}
	specs := make(map[structs.JobKey]*structs.Job, len(jobs))
	for _, j := range jobs {
		specs[j.Key()] = j
	}
	var changes []*change
	planned := map[structs.JobKey]bool{}
	for _, p := range plan.Placements {
		key := p.Key()
		planned[key] = true
		job := specs[key]
		if job == nil {
			return nil, fmt.Errorf("plan %d names job %q without its spec", plan.Index, p.JobID)
		}
		if c := d.changeFor(key, job, p, existing[key]); c != nil {
			c.planIndex = plan.Index
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
	for _, c := range changes {
		errs = append(errs, d.begin(ctx, c))
	}
	reports := make([]*structs.JobReport, 0, len(plan.Placements))
	for _, p := range plan.Placements {
		reports = append(reports, d.report(p.Key()))
	}
	return reports, errors.Join(errs...)
}

// changeFor decides what to do to one job; nil means nothing.
func (d *Driver) changeFor(key structs.JobKey, job *structs.Job, p *structs.Placement, nj *nomadJob) *change {
	js := d.state(key)
	c := &change{key: key, job: job, placement: p, existing: nj, checkpoint: nj.running()}
	if js.lost && nj != nil && nj.generation == js.lostGeneration {
		c.restart, c.checkpoint = true, false
		return c
	}
	if js.flight != nil && js.flight.state.InFlight() {
		return nil // it finishes the change it is making first
	}
	fp := Fingerprint(job, p)
	switch {
	case js.aborted == fp && time.Since(js.abortedAt) < d.cfg.AbortBackoff:
		return nil
	case p.Paused() && job.Nomad != nil && nj == nil:
		return c // the user's version runs as written: take it over, paused
	case p.Paused():
		if !nj.running() {
			return nil
		}
		return c
	case nj.running() && nj.stub.Meta[metaPlacement] == fp && !d.batchMoved(job, nj, p.Batch):
		return nil // already runs it, at a batch near enough
	case nj != nil && !nj.stub.Stop && !nj.running() && nj.stub.Meta[metaPlacement] == fp:
		return nil // finished; Status reports how
	}
	return c
}

// batchMoved reports whether want, the batch decided for a job whose
// Nomad job nj runs its placement, is far enough from the batch nj's
// tasks were started with (its metadata, else the job's fixed global
// batch) to restart them for it: BatchRestartRatio or more apart. A nil
// want keeps what runs.
func (d *Driver) batchMoved(job *structs.Job, nj *nomadJob, want *structs.Batch) bool {
	if want == nil || job.Training == nil {
		return false
	}
	have := job.Training.GlobalBatchSize
	if b := parseBatch(nj.stub.Meta[metaBatch]); b != nil {
		have = b.Global
	}
	if have == want.Global {
		return false
	}
	lo, hi := float64(min(have, want.Global)), float64(max(have, want.Global))
	return lo <= 0 || hi/lo >= d.cfg.BatchRestartRatio
}

// begin starts a change: it sends the checkpoint signal when tasks run,
// and otherwise submits the new placement at once.
func (d *Driver) begin(ctx context.Context, c *change) error {
	js := d.state(c.key)
	f := &flight{change: c, began: time.Now()}
	f.state = structs.Change{Target: c.placement.Copy(), PlanIndex: c.planIndex, Since: f.began.UnixNano()}
	js.flight = f
	if c.checkpoint {
		host := d.hostOf()
		if host == nil {
			d.abort(ctx, f, "the driver has no server to confirm checkpoints")
			return nil
		}
		f.signal, f.deadline = structs.DefaultCheckpointSignal, f.began.Add(structs.DefaultCheckpointTimeout)
		if e := c.job.Elastic; e != nil && e.Checkpoint != nil {
			f.signal, f.deadline = e.Checkpoint.Signal, f.began.Add(e.Checkpoint.Timeout)
		}
		before, _ := host.LastSample(c.key)
		f.before = before.CheckpointStep
		switch err := d.signal(ctx, c.existing, f.signal); {
		case errors.Is(err, errNothingRuns):
			// No task runs that could have made progress.
		case err != nil:
			d.abort(ctx, f, "cannot send the checkpoint signal: "+err.Error())
			return nil
		default:
			msg := fmt.Sprintf("sent %s to checkpoint (last checkpoint step %d), waiting up to %s", f.signal, f.before, f.deadline.Sub(f.began))
			f.state.Phase, f.state.Message = structs.ChangeCheckpointing, "waiting for a checkpoint newer than step "+strconv.FormatInt(f.before, 10)
			d.event(ctx, c.job, structs.EventCheckpointRequested, msg, nil)
			return nil
		}
	}
	return d.submit(ctx, f)
}

// advance moves a change in flight on: a confirmed checkpoint submits the
// new placement, a deadline passed aborts it. A change that is starting
// is done when Status sees all its tasks run, and failed after
// StartTimeout.
func (d *Driver) advance(ctx context.Context, f *flight) {
	if f.state.Phase == structs.ChangeStarting {
		if since := time.Since(time.Unix(0, f.state.Since)); since > d.cfg.StartTimeout {
			// Nomad keeps placing what it could not; the leader may plan
			// the job again meanwhile.
			f.state.Phase, f.state.Since = structs.ChangeFailed, time.Now().UnixNano()
			f.state.Message = fmt.Sprintf("generation %d submitted; not all its tasks run after %s", f.generation, since.Round(time.Second))
		}
		return
	}
	if f.state.Phase != structs.ChangeCheckpointing {
		return
	}
	if last, ok := d.hostOf().LastSample(f.key); ok && last.CheckpointStep > f.before {
		d.event(ctx, f.job, structs.EventCheckpointConfirmed, fmt.Sprintf("checkpoint at step %d confirmed", last.CheckpointStep),
			map[string]string{"Step": strconv.FormatInt(last.CheckpointStep, 10)})
		if err := d.submit(ctx, f); err != nil {
			d.log.Warn("failed to submit a rescale", "job_id", f.key.ID, "error", err)
		}
		return
	}
	if time.Now().After(f.deadline) {
		d.abort(ctx, f, fmt.Sprintf("no checkpoint newer than step %d was reported within %s of %s", f.before, f.deadline.Sub(f.began), f.signal))
	}
}

// abort ends a change without applying it: the job runs as it did.
func (d *Driver) abort(ctx context.Context, f *flight, why string) {
	js := d.state(f.key)
	js.aborted, js.abortedAt = Fingerprint(f.job, f.placement), time.Now()
	f.state.Phase, f.state.Message, f.state.Since = structs.ChangeAborted, why, time.Now().UnixNano()
	d.event(ctx, f.job, structs.EventRescaleAborted, "rescale not applied, the job keeps running as it was: "+why, nil)
}

// submit submits the next generation of the Nomad job or, for a paused
// placement, stops it.
func (d *Driver) submit(ctx context.Context, f *flight) error {
	js := d.state(f.key)
	c := f.change
	if c.placement.Paused() && c.job.Nomad == nil {
		js.lost = false // a paused job has no tasks to lose
		if err := d.deregister(ctx, c.existing); err != nil {
			d.abort(ctx, f, err.Error())
			return err
		}
		f.state.Phase, f.state.Message, f.state.Since = structs.ChangeDone, "paused: no task runs", time.Now().UnixNano()
		return nil
	}
	gen, err := d.nextGeneration(ctx, c)
	if err != nil {
		d.abort(ctx, f, err.Error())
		return err
	}
	switch {
	case c.restart && c.existing != nil && c.existing.stub.Meta[metaPlacement] != Fingerprint(c.job, c.placement):
		// Restarted at another placement (a task killed for memory gets
		// more): not a retry of what failed, so not counted against
		// MaxRestarts.
		d.event(ctx, c.job, structs.EventJobRestarted, fmt.Sprintf("starting generation %d from the last checkpoint at a new placement: %s", gen, js.lostMsg), nil)
	case c.restart:
		js.restarts++
		d.event(ctx, c.job, structs.EventJobRestarted, fmt.Sprintf("starting generation %d from the last checkpoint (restart %d of %d): %s", gen, js.restarts, d.cfg.MaxRestarts, js.lostMsg), nil)
	}
	nj, err := Translate(c.job, c.placement, Submission{
		Namespace: d.cfg.Namespace, CheckpointDir: d.cfg.CheckpointDir,
		ReportAddrs: d.cfg.ReportAddrs, ReportToken: d.reportToken(c.key), Generation: gen, PlanIndex: c.planIndex, Collector: d.cfg.Collector,
		CoordinatorAddr: d.cfg.CoordinatorAddr,
	})
	if err == nil {
		err = d.register(ctx, c, nj)
	}
	if err != nil {
		d.abort(ctx, f, err.Error())
		return err
	}
	js.lost = false
	if c.placement.Paused() {
		// A job declared in Nomad pauses at count 0: a stopped Nomad job
		// is one its user stopped.
		f.state.Phase, f.state.Message, f.state.Since = structs.ChangeDone, "paused: no task runs", time.Now().UnixNano()
		return nil
	}
	f.generation = gen
	f.state.Phase, f.state.Message, f.state.Since = structs.ChangeStarting, fmt.Sprintf("generation %d submitted, waiting for its tasks", gen), time.Now().UnixNano()
	d.log.Info("submitted Nomad job", "job_id", c.job.ID, "nomad_job", *nj.ID, "generation", gen, "ps", c.placement.NumPS, "workers", c.placement.NumWorkers,
		"batch", nj.Meta[metaBatch])
	return nil
}

// nextGeneration returns the generation a change submits: one more than
// the Nomad job's. A job declared in Nomad whose user's version is
// current (Caravan takes it over, first or again) follows the newest
// generation among the versions Nomad keeps, so that its tasks resume
// from the checkpoint of the last.
func (d *Driver) nextGeneration(ctx context.Context, c *change) (int, error) {
	if c.existing != nil {
		return c.existing.generation + 1, nil
	}
	if c.job.Nomad == nil {
		return 1, nil
	}
	q := (&api.QueryOptions{Namespace: c.job.Namespace}).WithContext(ctx)
	versions, _, _, err := d.client.Jobs().Versions(c.job.ID, false, q)
	if err != nil && !isNotFound(err) {
		return 0, fmt.Errorf("read the versions of Nomad job %s: %w", c.job.ID, err)
	}
	gen := 0
	for _, v := range versions {
		if g, err := strconv.Atoi(v.Meta[metaGeneration]); err == nil {
			gen = max(gen, g)
		}
	}
	return gen + 1, nil
}

// register submits a Nomad job. A job declared in Nomad is overwritten
// only at the version Caravan knows, the user's it adopted or its own
// since (Nomad's check-index): a newer version of the user's is read
// first.
func (d *Driver) register(ctx context.Context, c *change, nj *api.Job) error {
	q := (&api.WriteOptions{Namespace: *nj.Namespace}).WithContext(ctx)
	var err error
	if c.job.Nomad == nil {
		_, _, err = d.client.Jobs().Register(nj, q)
	} else {
		index := c.job.Nomad.JobModifyIndex
		if c.existing != nil {
			index = c.existing.stub.JobModifyIndex
		}
		_, _, err = d.client.Jobs().EnforceRegister(nj, index, q)
		if err != nil && strings.Contains(err.Error(), "conflicting job modify index") {
			err = fmt.Errorf("the Nomad job has a version Caravan has not read yet (a nomad job run?): %w", err)
		}
	}
	if err != nil {
		return fmt.Errorf("submit Nomad job %s: %w", *nj.ID, err)
	}
	return nil
}

// reportToken is the token a job's tasks report with: the host's token
// for that job alone, else the configured one.
func (d *Driver) reportToken(job structs.JobKey) string {
	if host := d.hostOf(); host != nil {
		if t := host.JobReportToken(job); t != "" {
			return t
		}
	}
	return d.cfg.ReportToken
}

// errNothingRuns means no allocation of the job runs, so no progress can
// be lost and no checkpoint is needed.
var errNothingRuns = errors.New("no task runs")

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
