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
// the leader sees it (structs.Change), and what advancing it needs. Only
// the loop (Enact, Status) reads and changes a flight, but for written,
// which its worker sets under Driver.mu.
type flight struct {
	*change
	state structs.Change
	// pending is set while a worker has the change's next Nomad call to
	// make (the signal, the submission): the change waits for its outcome
	// (see collect).
	pending bool
	// before is the checkpoint step reported before the checkpoint was
	// requested; timeout is how long the checkpoint may take once the
	// signal was sent, and deadline when an unconfirmed checkpoint then
	// aborts the change.
	before   int64
	signal   string
	timeout  time.Duration
	deadline time.Time
	// began is when the change began: the checkpoint request of a
	// rescale, the submission otherwise. generation is the Nomad job's
	// generation submitted, and index the modify index Nomad gave it.
	began      time.Time
	generation int
	index      uint64
	// written is the Nomad job the worker registered, once it did.
	written *namespacedID
	// draining is set while the takeover of a job declared in Nomad
	// waits for its earlier generation to stop (takeover.go); announced
	// once it said how many of its tasks it waits for.
	draining, announced bool
}

// Enact starts making Nomad run plan and returns without waiting for any
// change to finish, or for Nomad: it decides from the view of Nomad's
// jobs that watchJobs keeps, and hands every Nomad call to the job's
// worker (see enqueue), whose outcome the next Status (or Enact) applies.
// For each job whose Nomad job does not run the placement's fingerprint
// it starts a change, the rescale protocol of DESIGN.md §3, which Status
// advances:
//
//  1. a job whose tasks run is sent its checkpoint signal (phase
//     checkpointing; the checkpoint's deadline runs from when the signal
//     was sent);
//  2. once a sample committed after the request reports a newer
//     checkpoint step, the next generation of the Nomad job is submitted
//     (phase starting once Nomad took it); a job with nothing running is
//     submitted at once (phase starting from the start);
//  3. once every task of that generation runs, the change is done.
//
// A rescale whose checkpoint is not confirmed within the job's checkpoint
// timeout is not applied: the job keeps running as it was, the change is
// aborted, a RescaleAborted event says why, and the same placement is not
// tried again for AbortBackoff. A signal or a submission Nomad refuses
// aborts the change the same way. A job whose change is in flight gets no
// second change until it ends. A paused placement checkpoints and stops
// the Nomad job; a job the plan does not name is stopped by its worker,
// which retries until Nomad takes it. Enacting a plan Nomad already runs
// changes nothing, which is how a new leader adopts the Nomad jobs of the
// last. It reports every job the plan names. It fails, as nothing is
// started then, while the last list of Nomad's jobs failed; it waits for
// the first list at most CallTimeout.
func (d *Driver) Enact(ctx context.Context, plan *structs.Plan, jobs []*structs.Job) ([]*structs.JobReport, error) {
	if err := d.awaitFirst(ctx, d.viewed, "Nomad's jobs"); err != nil {
		return nil, err
	}
	view := d.jobsView()
	if view.err != nil {
		return nil, view.err
	}
	d.collect(ctx)
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
		if c := d.changeFor(key, job, p, view.caravan[key]); c != nil {
			c.planIndex = plan.Index
			changes = append(changes, c)
		}
	}
	for key, nj := range view.caravan {
		if !planned[key] && nj.running() {
			d.stop(key, nj)
		}
	}
	d.mu.Lock()
	var unplanned []*flight
	for key, js := range d.jobs {
		if planned[key] {
			continue
		}
		if f := js.flight; f != nil && (f.pending || view.listIndex < f.index) {
			unplanned = append(unplanned, f)
		}
		delete(d.jobs, key)
	}
	for key := range d.stopping {
		if nj := view.caravan[key]; planned[key] || !nj.running() {
			delete(d.stopping, key)
		}
	}
	purge := d.profilesToPurge(view.profiles, planned)
	d.mu.Unlock()
	for _, r := range purge {
		d.enqueue(r.key, func(ctx context.Context) { d.purgeProfile(ctx, r.id) })
	}
	for _, f := range unplanned {
		// What the worker submits, or submitted since the view, is
		// stopped after it.
		d.enqueue(f.key, func(ctx context.Context) { d.stopWritten(ctx, f) })
	}
	for _, c := range changes {
		d.begin(ctx, c)
	}
	reports := make([]*structs.JobReport, 0, len(plan.Placements))
	for _, p := range plan.Placements {
		reports = append(reports, d.report(p.Key()))
	}
	return reports, nil
}

// changeFor decides what to do to one job; nil means nothing.
func (d *Driver) changeFor(key structs.JobKey, job *structs.Job, p *structs.Placement, nj *nomadJob) *change {
	js := d.state(key)
	// A version drain wrote runs nothing: its tasks are stopping, and
	// the stop follows on the job's worker, before this change.
	drained := nj != nil && nj.stub.Meta[metaPlacement] == metaPlacementDrained
	c := &change{key: key, job: job, placement: p, existing: nj, checkpoint: nj.running() && !drained}
	if js.flight != nil && (js.flight.state.InFlight() || js.flight.pending) {
		return nil // it finishes the change it is making first
	}
	if js.lost && nj != nil && nj.generation == js.lostGeneration {
		c.restart, c.checkpoint = true, false
		return c
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

// begin starts a change: its worker sends the checkpoint signal when
// tasks run, and otherwise submits the new placement at once.
func (d *Driver) begin(ctx context.Context, c *change) {
	js := d.state(c.key)
	f := &flight{change: c, began: time.Now()}
	f.state = structs.Change{Target: c.placement.Copy(), PlanIndex: c.planIndex, Since: f.began.UnixNano()}
	js.flight = f
	if c.restart {
		// A restart follows the lost generation, which the view holds.
		gen := c.existing.generation + 1
		if c.existing.stub.Meta[metaPlacement] != Fingerprint(c.job, c.placement) {
			// Restarted at another placement (a task killed for memory
			// gets more): not a retry of what failed, so not counted
			// against MaxRestarts.
			d.event(ctx, c.job, structs.EventJobRestarted, fmt.Sprintf("starting generation %d from the last checkpoint at a new placement: %s", gen, js.lostMsg), nil)
		} else {
			js.restarts++
			d.event(ctx, c.job, structs.EventJobRestarted, fmt.Sprintf("starting generation %d from the last checkpoint (restart %d of %d): %s", gen, js.restarts, d.cfg.MaxRestarts, js.lostMsg), nil)
		}
	}
	if !c.checkpoint {
		if c.job.Nomad != nil && c.existing == nil && !c.restart && d.awaitEarlier(ctx, f) {
			return
		}
		f.state.Phase, f.state.Message = structs.ChangeStarting, "submitting the placement to Nomad"
		d.startSubmit(f)
		return
	}
	host := d.hostOf()
	if host == nil {
		d.abort(ctx, f, "the driver has no server to confirm checkpoints")
		return
	}
	f.signal, f.timeout = structs.DefaultCheckpointSignal, structs.DefaultCheckpointTimeout
	if e := c.job.Elastic; e != nil && e.Checkpoint != nil {
		f.signal, f.timeout = e.Checkpoint.Signal, e.Checkpoint.Timeout
	}
	before, _ := host.LastSample(c.key)
	f.before = before.CheckpointStep
	f.state.Phase, f.state.Message = structs.ChangeCheckpointing, fmt.Sprintf("sending %s to checkpoint", f.signal)
	f.pending = true
	nj, sig := c.existing, f.signal
	d.enqueue(c.key, func(ctx context.Context) {
		err := d.signal(ctx, nj, sig)
		d.finish(&outcome{f: f, op: opSignal, err: err, at: time.Now()})
	})
}

// startSubmit hands the submission of a change's next generation (or,
// for a paused placement, the stop of its Nomad job) to its worker; the
// caller sets the phase it is in meanwhile.
func (d *Driver) startSubmit(f *flight) {
	f.pending = true
	c := f.change
	sub := Submission{
		Namespace: d.cfg.Namespace, CheckpointDir: d.cfg.CheckpointDir,
		ReportAddrs: d.cfg.ReportAddrs, ReportToken: d.reportToken(c.key), PlanIndex: c.planIndex, Collector: d.cfg.Collector,
		CoordinatorAddr: d.cfg.CoordinatorAddr, GPUs: d.gpuDevices(c.placement), NodeAddrs: d.nodeAddrs(c.placement),
	}
	d.enqueue(c.key, func(ctx context.Context) { d.finish(d.submit(ctx, f, sub)) })
}

// advance moves a change in flight on: a confirmed checkpoint submits the
// new placement, a deadline passed aborts it. A change that is starting
// is done when Status sees all its tasks run, and failed after
// StartTimeout. A change whose worker has not answered waits for it.
func (d *Driver) advance(ctx context.Context, f *flight) {
	if f.pending {
		return
	}
	if f.draining {
		d.advanceTakeover(ctx, f)
		return
	}
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
		// Checkpointing until Nomad took the next generation.
		f.state.Message = fmt.Sprintf("checkpoint at step %d confirmed; submitting the next generation", last.CheckpointStep)
		d.startSubmit(f)
		return
	}
	if time.Now().After(f.deadline) {
		d.abort(ctx, f, fmt.Sprintf("no checkpoint newer than step %d was reported within %s of %s", f.before, f.timeout, f.signal))
	}
}

// abort ends a change without applying it: the job runs as it did.
func (d *Driver) abort(ctx context.Context, f *flight, why string) {
	js := d.state(f.key)
	js.aborted, js.abortedAt = Fingerprint(f.job, f.placement), time.Now()
	f.pending = false
	f.state.Phase, f.state.Message, f.state.Since = structs.ChangeAborted, why, time.Now().UnixNano()
	d.event(ctx, f.job, structs.EventRescaleAborted, "rescale not applied, the job keeps running as it was: "+why, nil)
}

// Operations whose outcome a worker reports.
const (
	opSignal = "signal"
	opSubmit = "submit"
)

// outcome is what a worker's Nomad calls for a change came to, for the
// loop to apply (see collect).
type outcome struct {
	f  *flight
	op string
	// err is why the calls failed; errNothingRuns for a signal means no
	// task ran to receive it.
	err error
	// at is when the signal was sent.
	at time.Time
	// paused says the submission stopped the Nomad job (a paused
	// placement of a job submitted to Caravan).
	paused bool
	// generation is the generation submitted, index the Nomad job's
	// modify index after it, and nomadJob the job submitted.
	generation int
	index      uint64
	nomadJob   *api.Job
}

// finish hands a worker's outcome to the loop.
func (d *Driver) finish(o *outcome) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if o.nomadJob != nil {
		o.f.written = &namespacedID{Namespace: *o.nomadJob.Namespace, ID: *o.nomadJob.ID}
	}
	d.outcomes = append(d.outcomes, o)
}

// collect applies what the workers did since the last call to the
// changes they worked for: a change whose call failed is aborted, a
// checkpoint signal sent starts the checkpoint's deadline, a generation
// submitted starts its tasks' wait. An outcome for a change that ended
// since (its job left the plan) is dropped.
func (d *Driver) collect(ctx context.Context) {
	d.mu.Lock()
	outcomes := d.outcomes
	d.outcomes = nil
	d.mu.Unlock()
	for _, o := range outcomes {
		f := o.f
		d.mu.Lock()
		js := d.jobs[f.key]
		d.mu.Unlock()
		if js == nil || js.flight != f {
			continue
		}
		f.pending = false
		switch {
		case o.op == opSignal && errors.Is(o.err, errNothingRuns):
			// No task runs that could have made progress.
			f.state.Phase, f.state.Message, f.state.Since = structs.ChangeStarting, "nothing runs to checkpoint; submitting the placement to Nomad", time.Now().UnixNano()
			d.startSubmit(f)
		case o.op == opSignal && o.err != nil:
			d.abort(ctx, f, "cannot send the checkpoint signal: "+o.err.Error())
		case o.op == opSignal:
			f.deadline = o.at.Add(f.timeout)
			msg := fmt.Sprintf("sent %s to checkpoint (last checkpoint step %d), waiting up to %s", f.signal, f.before, f.timeout)
			f.state.Message = "waiting for a checkpoint newer than step " + strconv.FormatInt(f.before, 10)
			d.event(ctx, f.job, structs.EventCheckpointRequested, msg, nil)
		case o.err != nil:
			d.abort(ctx, f, o.err.Error())
		default:
			d.submitted(ctx, js, f, o)
		}
	}
}

// submitted records a generation Nomad took (or the stop of a paused
// job's Nomad job).
func (d *Driver) submitted(ctx context.Context, js *jobState, f *flight, o *outcome) {
	c := f.change
	js.lost = false // a paused job has no tasks to lose, a restarted one has new ones
	if o.paused || c.placement.Paused() {
		// A job declared in Nomad pauses at count 0: a stopped Nomad job
		// is one its user stopped.
		f.state.Phase, f.state.Message, f.state.Since = structs.ChangeDone, "paused: no task runs", time.Now().UnixNano()
		return
	}
	f.generation, f.index = o.generation, o.index
	f.state.Phase, f.state.Message, f.state.Since = structs.ChangeStarting, fmt.Sprintf("generation %d submitted, waiting for its tasks", o.generation), time.Now().UnixNano()
	d.log.Info("submitted Nomad job", "job_id", c.job.ID, "nomad_job", *o.nomadJob.ID, "generation", o.generation, "ps", c.placement.NumPS, "workers", c.placement.NumWorkers,
		"batch", o.nomadJob.Meta[metaBatch])
}

// submit submits the next generation of the Nomad job or, for a paused
// placement of a job submitted to Caravan, stops it. It runs on the
// job's worker.
func (d *Driver) submit(ctx context.Context, f *flight, sub Submission) *outcome {
	c := f.change
	o := &outcome{f: f, op: opSubmit}
	if c.placement.Paused() && c.job.Nomad == nil {
		o.paused, o.err = true, d.deregister(ctx, c.existing)
		return o
	}
	if o.generation, o.err = d.nextGeneration(ctx, c); o.err != nil {
		return o
	}
	sub.Generation = o.generation
	nj, err := Translate(c.job, c.placement, sub)
	if err == nil {
		o.index, err = d.register(ctx, c, nj)
	}
	if err != nil {
		o.err = err
		return o
	}
	if old := c.existing; old != nil && old.stub.ID != *nj.ID && old.running() {
		// Submitted under the name an earlier version gave it (NomadJobID):
		// the generation just submitted, under its new name, takes over.
		if err := d.deregister(ctx, old); err != nil {
			d.log.Warn("failed to stop a job's Nomad job of its earlier name", "job_id", c.key.ID, "nomad_job", old.stub.ID, "error", err)
		}
	}
	o.nomadJob = nj
	return o
}

// nextGeneration returns the generation a change submits: one more than
// the Nomad job's. A job declared in Nomad whose user's version is
// current (Caravan takes it over, first or again) follows the newest
// generation among the versions Nomad keeps, so that its tasks resume
// from the checkpoint of the last; the user's version it takes over is
// tagged then (tagUserVersion), so that Nomad keeps it.
func (d *Driver) nextGeneration(ctx context.Context, c *change) (int, error) {
	if c.existing != nil {
		return c.existing.generation + 1, nil
	}
	if c.job.Nomad == nil {
		return 1, nil
	}
	callCtx, cancel := d.callContext(ctx)
	defer cancel()
	q := (&api.QueryOptions{Namespace: c.job.Namespace}).WithContext(callCtx)
	versions, _, _, err := d.client.Jobs().Versions(c.job.ID, false, q)
	if err != nil && !isNotFound(err) {
		return 0, fmt.Errorf("read the versions of Nomad job %s: %w", c.job.ID, err)
	}
	d.tagUserVersion(ctx, c.job, versions)
	gen := 0
	for _, v := range versions {
		if g, err := strconv.Atoi(v.Meta[metaGeneration]); err == nil {
			gen = max(gen, g)
		}
	}
	return gen + 1, nil
}

// register submits a Nomad job and returns the modify index Nomad gave
// it. A job declared in Nomad is overwritten only at the version Caravan
// knows, the user's it adopted or its own since (Nomad's check-index): a
// newer version of the user's is read first.
func (d *Driver) register(ctx context.Context, c *change, nj *api.Job) (uint64, error) {
	ctx, cancel := d.callContext(ctx)
	defer cancel()
	q := (&api.WriteOptions{Namespace: *nj.Namespace}).WithContext(ctx)
	var resp *api.JobRegisterResponse
	var err error
	if c.job.Nomad == nil {
		resp, _, err = d.client.Jobs().Register(nj, q)
	} else {
		index := c.job.Nomad.JobModifyIndex
		if c.existing != nil {
			index = c.existing.stub.JobModifyIndex
		}
		resp, _, err = d.client.Jobs().EnforceRegister(nj, index, q)
		if err != nil && strings.Contains(err.Error(), "conflicting job modify index") {
			err = fmt.Errorf("the Nomad job has a version Caravan has not read yet (a nomad job run?): %w", err)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("submit Nomad job %s: %w", *nj.ID, err)
	}
	return resp.JobModifyIndex, nil
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

// signal sends sig to every running allocation of the Nomad job's
// version as listed. It runs on the job's worker.
func (d *Driver) signal(ctx context.Context, nj *nomadJob, sig string) error {
	version := uint64(0)
	if nj.info != nil {
		version = *nj.info.Version
	} else {
		info, err := d.readJob(ctx, nj.id())
		if err != nil {
			return err
		}
		version = *info.Version
	}
	allocs, err := func() ([]*api.AllocationListStub, error) {
		ctx, cancel := d.callContext(ctx)
		defer cancel()
		allocs, _, err := d.client.Jobs().Allocations(nj.stub.ID, false, (&api.QueryOptions{Namespace: nj.namespace()}).WithContext(ctx))
		return allocs, err
	}()
	if err != nil {
		return fmt.Errorf("read allocations of Nomad job %s: %w", nj.stub.ID, err)
	}
	sent := 0
	var errs []error
	for _, a := range allocs {
		if a.JobVersion != version || a.ClientStatus != api.AllocClientStatusRunning {
			continue
		}
		if err := d.signalAlloc(ctx, a, sig); err != nil {
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

func (d *Driver) signalAlloc(ctx context.Context, a *api.AllocationListStub, sig string) error {
	ctx, cancel := d.callContext(ctx)
	defer cancel()
	q := (&api.QueryOptions{Namespace: a.Namespace}).WithContext(ctx)
	return d.client.Allocations().Signal(&api.Allocation{ID: a.ID, Namespace: a.Namespace}, q, "", sig)
}

// stop hands the stop of a Nomad job the plan no longer names to its
// job's worker, once per version of it.
func (d *Driver) stop(key structs.JobKey, nj *nomadJob) {
	d.mu.Lock()
	if idx, ok := d.stopping[key]; ok && idx == nj.stub.JobModifyIndex {
		d.mu.Unlock()
		return
	}
	d.stopping[key] = nj.stub.JobModifyIndex
	d.mu.Unlock()
	d.enqueue(key, func(ctx context.Context) { d.retryStop(ctx, key, nj.id()) })
}

// retryStop stops a Nomad job, trying again with backoff until Nomad
// takes it, the driver stops, or the job has other work queued (it was
// planned again).
func (d *Driver) retryStop(ctx context.Context, key structs.JobKey, id namespacedID) {
	var backoff time.Duration
	for {
		err := d.deregisterID(ctx, id)
		if err == nil || ctx.Err() != nil {
			return
		}
		d.log.Warn("cannot stop a Nomad job the plan no longer names, trying again", "nomad_job", id.ID, "error", err)
		backoff = nextBackoff(backoff)
		if !sleep(ctx, backoff) || d.queued(key) {
			d.mu.Lock()
			delete(d.stopping, key) // the next Enact decides again
			d.mu.Unlock()
			return
		}
	}
}

// stopWritten stops what a change that left the plan registered, if its
// submission went through. It runs on the job's worker after the
// submission.
func (d *Driver) stopWritten(ctx context.Context, f *flight) {
	d.mu.Lock()
	id := f.written
	d.mu.Unlock()
	if id == nil {
		return
	}
	if err := d.deregisterID(ctx, *id); err != nil {
		d.log.Warn("cannot stop a Nomad job the plan no longer names", "nomad_job", id.ID, "error", err)
	}
}

// enqueue hands a Nomad call of a job's to the job's worker, which runs
// the job's calls in order, one at a time, under the driver's context
// (each call with its CallTimeout); a worker runs while its job has calls
// queued, and at most maxConcurrentWrites workers call Nomad at once.
// After Stop, nothing is queued.
func (d *Driver) enqueue(key structs.JobKey, op func(context.Context)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	q, running := d.queues[key]
	d.queues[key] = append(q, op)
	if running {
		return // its worker takes it next
	}
	d.wg.Add(1)
	go d.work(key)
}

// work runs a job's queued calls until none is left.
func (d *Driver) work(key structs.JobKey) {
	defer d.wg.Done()
	for {
		d.mu.Lock()
		q := d.queues[key]
		if len(q) == 0 {
			delete(d.queues, key)
			d.mu.Unlock()
			return
		}
		op := q[0]
		d.queues[key] = q[1:]
		d.mu.Unlock()
		select {
		case d.calls <- struct{}{}:
			op(d.shutdownCtx)
			<-d.calls
		case <-d.shutdownCtx.Done():
			op(d.shutdownCtx) // its calls fail at once, and it reports so
		}
	}
}

// queued reports whether a job has calls waiting for its worker.
func (d *Driver) queued(key structs.JobKey) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.queues[key]) > 0
}
