package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
)

// The Driver satisfies the server's Driver, MetricsSource, Profiler and
// TypeProfiler interfaces (server/driver.go) without importing the
// server.
var (
	_ interface {
		Nodes(context.Context) ([]*structs.Node, error)
		Enact(context.Context, *structs.Plan, []*structs.Job) ([]*structs.JobReport, error)
		Status(context.Context) ([]*structs.JobReport, error)
	} = (*Driver)(nil)
	_ interface {
		Samples(context.Context, uint64) ([]structs.Sample, uint64, error)
	} = (*Driver)(nil)
	_ interface {
		Profile(context.Context, structs.JobKey, []structs.Shape) error
	} = (*Driver)(nil)
	// server.TypeProfiler
	_ interface {
		ProfileTypes(context.Context, *structs.Job) error
	} = (*Driver)(nil)
)

// DriverConfig configures a real-time Driver.
type DriverConfig struct {
	// Cluster is the simulated cluster; the zero Config means
	// DefaultConfig(). Its Seed also seeds the ground truths of parametric
	// jobs (see TruthFor).
	Cluster Config
	// Speed is how many virtual seconds pass per wall-clock second; 0 (or
	// anything not positive and finite) means 1, real time.
	Speed float64
	// Tick is how often, in wall time, the clock goroutine advances the
	// simulator; 0 means 100ms. Every method also advances it to the
	// current virtual time first, so answers are never a Tick stale; the
	// goroutine keeps jobs moving (and their completions logged) between
	// calls.
	Tick time.Duration
	// Profiles are the Pollux models a job can name as meta "application";
	// nil means the embedded ones (PolluxProfiles).
	Profiles map[string]*Profile
	// Truth gives the ground truth of a job the driver submits; nil means
	// TruthFor with Profiles and the cluster's Seed. caravan sim passes
	// its workload's truths.
	Truth func(*structs.Job) Truth
	// Clock, when set, is the virtual clock the driver follows instead of
	// the wall clock: virtual time is Clock() - Clock() at NewDriver, at
	// Speed 1, from the start and without a goroutine (Start and Stop do
	// nothing). caravan sim drives the server's loop on such a clock.
	Clock func() time.Time
	// Logger receives the driver's logs; nil means none.
	Logger hclog.Logger
}

// Driver runs a Sim as a live cluster for the Caravan server (`caravan
// agent -dev`): the server's leader enacts plans on it, polls its status
// and reads its samples in real time while a goroutine moves the virtual
// clock along with the wall clock.
//
// Clock. Virtual time t (seconds) stands for the wall time Epoch + t, where
// Epoch is the wall time at NewDriver; Now and every Sample.Time use that
// mapping. Between Start and Stop, virtual time runs Speed times as fast as
// the wall clock; before Start and after Stop it stands still, and a Driver
// can still be driven then (plans are enacted at the frozen time). At
// Speed 1 with no pause, Now is the wall time; at Speed > 1 it runs ahead.
//
// Jobs. The simulator keys jobs by ID, so two jobs of one ID in different
// namespaces cannot run at once: Enact and the next Status report the
// later one failed, and Enact enacts the rest of the plan. A job the driver has not seen yet is
// submitted when a plan first names it, with the ground truth TruthFor
// gives its spec; a later spec of a known job is ignored.
//
// A Driver is safe for concurrent use.
type Driver struct {
	cfg   DriverConfig
	log   hclog.Logger
	clock func() time.Time // the wall clock; tests replace it
	epoch time.Time        // the wall time of virtual time 0

	// life serialises Start and Stop; stop and done belong to the clock
	// goroutine and are nil while it does not run.
	life       sync.Mutex
	stop, done chan struct{}

	mu  sync.Mutex
	sim *Sim
	// virtual is set when the driver follows a virtual Clock.
	virtual bool
	// running is true between Start and Stop; the virtual time is then
	// anchorVirt + (clock() - anchorWall) × Speed.
	running    bool
	anchorWall time.Time
	anchorVirt float64
	doneCursor int
	// deferred holds the profiling requests of jobs not submitted yet.
	deferred map[structs.JobKey][]structs.Shape
	// deferredTypes holds the GPU-type profiling requests (ProfileTypes)
	// of jobs not submitted yet.
	deferredTypes map[structs.JobKey]bool
	// refused are the reports of the jobs Enact refused because a job of
	// another namespace holds their ID; the next Status reports them,
	// failed, once.
	refused []*structs.JobReport
	// changes holds each job's latest change: the simulator applies a
	// change at once, so every change it reports is done.
	changes map[structs.JobKey]*structs.Change
	// converged holds the completion message of each job that finished,
	// worked out once.
	converged map[*job]string
	// ended are the jobs that finished or failed and that every plan
	// enacted since still names: Status reports them until the server,
	// having seen them end, enacts a plan without them.
	ended []*job
}

// NewDriver returns a stopped Driver over a new Sim of cfg.Cluster; Start
// sets its clock going. With cfg.Clock, it follows that clock at once.
func NewDriver(cfg DriverConfig) *Driver {
	if cfg.Clock == nil {
		return newDriver(cfg, time.Now)
	}
	cfg.Speed = 1
	d := newDriver(cfg, cfg.Clock)
	d.virtual = true
	d.running, d.anchorWall, d.anchorVirt = true, d.epoch, 0
	return d
}

func newDriver(cfg DriverConfig, clock func() time.Time) *Driver {
	if reflect.ValueOf(cfg.Cluster).IsZero() {
		cfg.Cluster = DefaultConfig()
	}
	if !(cfg.Speed > 0) || math.IsInf(cfg.Speed, 1) {
		cfg.Speed = 1
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 100 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Driver{
		cfg: cfg, log: cfg.Logger.Named("sim"), clock: clock, epoch: clock(),
		sim: New(cfg.Cluster), deferred: map[structs.JobKey][]structs.Shape{}, deferredTypes: map[structs.JobKey]bool{},
		changes: map[structs.JobKey]*structs.Change{}, converged: map[*job]string{},
	}
}

// Start sets the virtual clock going from where it stands and starts the
// goroutine that advances the simulator every Tick. Starting a running
// Driver does nothing.
func (d *Driver) Start() {
	d.life.Lock()
	defer d.life.Unlock()
	if d.stop != nil || d.virtual {
		return
	}
	d.mu.Lock()
	d.running, d.anchorWall, d.anchorVirt = true, d.clock(), d.sim.Now()
	d.mu.Unlock()
	d.stop, d.done = make(chan struct{}), make(chan struct{})
	go d.run(d.stop, d.done)
	d.log.Info("started simulated cluster", "nodes", d.cfg.Cluster.NodeCount(),
		"gpus", d.cfg.Cluster.TotalGPUs(), "speed", d.cfg.Speed)
}

// Stop advances the simulator to now, stops the clock goroutine and waits
// for it to end. The virtual clock then stands still until Start. Stopping
// a stopped Driver does nothing.
func (d *Driver) Stop() {
	d.life.Lock()
	defer d.life.Unlock()
	if d.stop == nil {
		return
	}
	close(d.stop)
	<-d.done
	d.stop, d.done = nil, nil
	d.mu.Lock()
	d.syncLocked()
	d.running = false
	d.mu.Unlock()
	d.log.Info("stopped simulated cluster")
}

func (d *Driver) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(d.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			d.mu.Lock()
			d.syncLocked()
			d.mu.Unlock()
		}
	}
}

// syncLocked advances the simulator to the virtual time of the wall clock
// now, and takes the jobs that ended since the last call into ended.
func (d *Driver) syncLocked() {
	if d.running {
		if v := d.anchorVirt + d.clock().Sub(d.anchorWall).Seconds()*d.cfg.Speed; v > d.sim.Now() {
			d.sim.Advance(v)
		}
	}
	var done []string
	done, d.doneCursor = d.sim.Completions(d.doneCursor)
	for _, id := range done {
		j := d.sim.jobs[id]
		d.log.Info("job completed", "job_id", id, "virtual_s", j.finish)
		d.ended = append(d.ended, j)
	}
}

// Now returns the virtual time as wall time: Epoch + virtual seconds.
func (d *Driver) Now() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.syncLocked()
	return d.wall(d.sim.Now())
}

// Epoch returns the wall time that virtual time 0 stands for.
func (d *Driver) Epoch() time.Time { return d.epoch }

func (d *Driver) wall(virtual float64) time.Time {
	return d.epoch.Add(time.Duration(virtual * float64(time.Second)))
}

// NodesVersion is the version of the nodes (server.NodesVersioner): they
// never change.
func (d *Driver) NodesVersion() uint64 { return 1 }

// Nodes returns copies of the simulated nodes; they never change.
func (d *Driver) Nodes(ctx context.Context) ([]*structs.Node, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*structs.Node, len(d.sim.nodes))
	for i, n := range d.sim.nodes {
		out[i] = n.Copy()
	}
	return out, nil
}

// Enact makes the simulator run exactly plan:
//
//   - a job the plan names that the simulator does not know is submitted,
//     with the spec from jobs (an error if jobs has none) and the ground
//     truth TruthFor gives it; profiling requested for it before (see
//     Profile) happens now, before it first starts;
//   - each job the plan names gets its placement; a job whose placement is
//     unchanged keeps running untouched, so enacting a plan twice changes
//     nothing;
//   - a job the simulator runs that the plan does not name is stopped
//     (Sim.StopJob): its GPUs are free for this plan's jobs and it is
//     forgotten, so Status no longer reports it. A later plan that names it
//     starts it again from step 0;
//   - a job that has already completed stays complete, whatever the plan
//     gives it: the plan was made before its completion was seen.
//
// Changes take effect at once (a job whose placement changes restarts,
// as Sim.Enact models it), so the reports say done. A plan that is
// invalid, over-commits a node (the error wraps ErrOverCommitted), names
// a new job jobs holds no spec for, or names a job ID the simulator holds
// in another namespace is rejected whole and changes nothing. Errors do
// not name the plan; the caller does.
func (d *Driver) Enact(ctx context.Context, plan *structs.Plan, jobs []*structs.Job) ([]*structs.JobReport, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if plan == nil {
		return nil, errors.New("enact: no plan")
	}
	if err := plan.Validate(); err != nil {
		return nil, err
	}
	specs := make(map[structs.JobKey]*structs.Job, len(jobs))
	for _, j := range jobs {
		if j != nil {
			specs[j.Key()] = j
		}
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	d.syncLocked()

	named := make(map[string]string, len(plan.Placements)) // job ID → namespace
	var (
		submit     []*structs.Job
		placements = make([]*structs.Placement, 0, len(plan.Placements))
	)
	// refused are the reports of jobs whose ID another namespace's job
	// holds: they fail, and the rest of the plan is enacted.
	var refused []*structs.JobReport
	refuse := func(p *structs.Placement, other string) {
		refused = append(refused, &structs.JobReport{Namespace: p.Namespace, JobID: p.JobID, Status: structs.JobStatusFailed,
			Message: fmt.Sprintf("the simulated cluster runs one job of an ID at a time, and job %q of namespace %q holds it: give this one another ID", p.JobID, other)})
	}
	for _, p := range plan.Placements {
		if ns, ok := named[p.JobID]; ok {
			refuse(p, ns)
			continue
		}
		j, ok := d.sim.jobs[p.JobID]
		if ok && j.spec.Namespace != p.Namespace {
			refuse(p, j.spec.Namespace)
			continue
		}
		named[p.JobID] = p.Namespace
		switch {
		case ok && j.ended():
			continue
		case !ok:
			spec := specs[p.Key()]
			if spec == nil {
				return nil, fmt.Errorf("job %q in namespace %q is new and jobs holds no spec for it", p.JobID, p.Namespace)
			}
			submit = append(submit, spec)
		}
		placements = append(placements, p.Copy())
	}
	var stop []*job
	for _, j := range d.sim.live {
		if _, ok := named[j.spec.ID]; !ok {
			stop = append(stop, j)
			// A paused placement frees its tasks in the same check.
			placements = append(placements, &structs.Placement{Namespace: j.spec.Namespace, JobID: j.spec.ID})
		}
	}
	var profiles map[string]*Profile
	if len(submit) > 0 && d.cfg.Truth == nil {
		var err error
		if profiles, err = d.profiles(); err != nil {
			return nil, fmt.Errorf("load Pollux profiles: %w", err)
		}
	}

	// Sim.Enact is the judge of the plan; the jobs submitted for it are
	// taken back if it says no.
	mark := d.sim.mark()
	for _, spec := range submit {
		spec = spec.Copy()
		truth := TruthFor(spec, profiles, d.cfg.Cluster.Seed)
		if d.cfg.Truth != nil {
			truth = d.cfg.Truth(spec)
		} else if err := d.sim.typeTruth(truth); err != nil {
			d.sim.rollback(mark)
			return nil, err
		}
		if err := d.sim.Submit(spec, truth); err != nil {
			d.sim.rollback(mark)
			return nil, err
		}
		if cfgs, ok := d.deferred[spec.Key()]; ok {
			if err := d.sim.Profile(spec.ID, cfgs); err != nil {
				d.sim.rollback(mark)
				return nil, err
			}
		}
		if d.deferredTypes[spec.Key()] {
			if err := d.sim.ProfileTypes(spec.ID); err != nil {
				d.sim.rollback(mark)
				return nil, err
			}
		}
	}
	before := make(map[string]*structs.Placement, len(placements))
	for _, p := range placements {
		if j, ok := d.sim.jobs[p.JobID]; ok {
			before[p.JobID] = j.placement
		}
	}
	if err := d.sim.Enact(&structs.Plan{Placements: placements}); err != nil {
		d.sim.rollback(mark)
		return nil, err
	}
	now := d.wall(d.sim.Now()).UnixNano()
	for _, p := range placements {
		if !before[p.JobID].SameTasks(p) {
			d.changes[p.Key()] = &structs.Change{Target: p.Copy(), PlanIndex: plan.Index, Phase: structs.ChangeDone, Message: "applied at once", Since: now}
		}
	}
	for _, spec := range submit {
		delete(d.deferred, spec.Key())
		delete(d.deferredTypes, spec.Key())
		d.log.Info("submitted job", "namespace", spec.Namespace, "job_id", spec.ID)
	}
	for _, j := range stop {
		if err := d.sim.StopJob(j.spec.ID); err != nil {
			return nil, err // cannot happen: j is live
		}
		delete(d.changes, j.spec.Key())
		d.log.Info("stopped job", "namespace", j.spec.Namespace, "job_id", j.spec.ID, "step", int64(j.reported(j.step)))
	}
	d.log.Debug("enacted plan", "index", plan.Index, "placements", len(plan.Placements),
		"submitted", len(submit), "stopped", len(stop))
	d.ended = slices.DeleteFunc(d.ended, func(j *job) bool {
		ns, ok := named[j.spec.ID]
		return !ok || ns != j.spec.Namespace
	})
	d.refused = append(d.refused, refused...)
	out := refused
	for _, p := range plan.Placements {
		if j, ok := d.sim.jobs[p.JobID]; ok && j.spec.Namespace == p.Namespace {
			out = append(out, d.report(j))
		}
	}
	return out, nil
}

func (d *Driver) profiles() (map[string]*Profile, error) {
	if d.cfg.Profiles != nil {
		return d.cfg.Profiles, nil
	}
	return PolluxProfiles()
}

// Status reports the jobs the simulator runs, and those that ended until
// a plan enacted after their end no longer names them (the server saw
// them end: reporting every job ever submitted made each step of a long
// trace cost all of them), in the order they were submitted:
// JobStatusRunning for a job that is placed, restarting or waiting for
// tasks, JobStatusComplete for one that has trained to its end,
// JobStatusFailed for one whose task was OOM-killed and that was not
// placed again within OOMFailAfter (a TaskTruth job, or a Pollux job
// placed on a GPU type it cannot run on, hetero.go). A job whose task was
// OOM-killed, or that cannot run where it is, reports Replan until it is
// placed again. Jobs the driver stopped are not reported (Enact forgets
// them). A running job of a TaskTruth reports its tasks' usage
// (structs.JobReport.Usage) as of its latest sample, times on the wall
// clock as samples' are.
func (d *Driver) Status(ctx context.Context) ([]*structs.JobReport, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.syncLocked()
	jobs := slices.SortedFunc(slices.Values(slices.Concat(d.sim.live, d.ended)), func(a, b *job) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]*structs.JobReport, 0, len(jobs)+len(d.refused))
	for _, j := range jobs {
		out = append(out, d.report(j))
	}
	out = append(out, d.refused...)
	d.refused = nil
	return out, nil
}

// report describes a job as it is now: what runs of it (its placement,
// also while it restarts) and its latest change.
func (d *Driver) report(j *job) *structs.JobReport {
	r := &structs.JobReport{
		Namespace: j.spec.Namespace, JobID: j.spec.ID,
		Status: structs.JobStatusRunning, Step: int64(j.reported(j.step)),
		Change: d.changes[j.spec.Key()],
	}
	switch {
	case j.finish >= 0:
		r.Status = structs.JobStatusComplete
		msg, ok := d.converged[j]
		if !ok {
			msg = "converged at epoch " + strconv.FormatFloat(math.Round(j.truth.Epoch(j.step)*100)/100, 'f', -1, 64)
			d.converged[j] = msg
		}
		r.Message = msg
	case j.failed && j.unfit != "":
		r.Status = structs.JobStatusFailed
		r.Message = fmt.Sprintf("%s, and the job was not placed again within %s", j.unfit, OOMFailAfter)
	case j.failed:
		r.Status = structs.JobStatusFailed
		r.Message = fmt.Sprintf("a task was OOM-killed and the job was not placed again within %s", OOMFailAfter)
	case !j.running():
		r.Message = "waiting for tasks"
	case j.stalled >= 0:
		// Nomad restarts the task in place and it is killed again: the
		// job needs a new placement (more memory).
		r.Replan = true
		r.Message = oomMessage(j)
	case j.restartTo > d.sim.now:
		r.Message = fmt.Sprintf("restarting with %s", structs.Shape{PS: j.placement.NumPS, Workers: j.placement.NumWorkers})
	default:
		r.Message = fmt.Sprintf("training with %s", structs.Shape{PS: j.placement.NumPS, Workers: j.placement.NumWorkers})
	}
	if j.running() {
		r.Placement = j.placement.Copy()
		if u := d.sim.JobUsage(j.spec.ID); u != nil {
			base := d.epoch.UnixNano()
			u.Time += base
			for _, t := range u.Tasks {
				if t.LastOOM != 0 {
					t.LastOOM += base
				}
			}
			r.Usage = u
		}
	}
	return r
}

// oomMessage names the task of stalled job j that was killed for memory.
func oomMessage(j *job) string {
	if j.unfit != "" {
		return j.unfit
	}
	for i, st := range j.taskState {
		if st.lastOOM == int64(j.stalled*1e9) {
			t := j.tasks[i]
			return fmt.Sprintf("%s %d OOM-killed at its memory of %d MB", t.Role, t.Rank, t.MemoryMB)
		}
	}
	return "a task was OOM-killed"
}

// Samples returns the samples trainers reported after cursor and the cursor
// to pass next; samples before cursor are dropped. Each sample's Time is
// its virtual time mapped onto the wall clock (Epoch + virtual seconds), in
// Unix nanoseconds.
func (d *Driver) Samples(ctx context.Context, cursor uint64) ([]structs.Sample, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, cursor, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.syncLocked()
	smp, next := d.sim.Samples(int(min(cursor, math.MaxInt)))
	out := slices.Clone(smp)
	base := d.epoch.UnixNano()
	for i := range out {
		out[i].Time += base
	}
	return out, uint64(next), nil
}

// Profile measures a job's speed at each (ps, workers) configuration
// (Sim.Profile): one sample per configuration, and ProfileTime per
// configuration charged before the job first starts. The leader may ask
// before any plan names the job, when the driver has no spec for it yet:
// the request is then kept and carried out when Enact submits the job,
// just before it is placed, and Profile returns nil.
func (d *Driver) Profile(ctx context.Context, key structs.JobKey, configs []structs.Shape) error {
	return d.profile(ctx, key, "profiling", func() { d.deferred[key] = append(d.deferred[key], configs...) },
		func() error { return d.sim.Profile(key.ID, configs) })
}

// ProfileTypes measures a job on one GPU of each GPU type of the cluster
// at the per-GPU batches that fit it (Sim.ProfileTypes: about ten
// samples a type, each naming its GPUType), charging the job for the
// steps before it first starts. As with Profile, a request for a job no
// plan has named yet is kept and carried out when Enact submits it, just
// before it is placed, and ProfileTypes returns nil.
func (d *Driver) ProfileTypes(ctx context.Context, job *structs.Job) error {
	key := job.Key()
	return d.profile(ctx, key, "GPU-type profiling", func() { d.deferredTypes[key] = true },
		func() error { return d.sim.ProfileTypes(key.ID) })
}

// profile runs measure for a job the simulator holds, or, for one no plan
// has named yet, keeps the request (keep) for Enact and returns nil; what
// names the measurement in the log and errors.
func (d *Driver) profile(ctx context.Context, key structs.JobKey, what string, keep func(), measure func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.syncLocked()
	j, ok := d.sim.jobs[key.ID]
	switch {
	case !ok:
		keep()
		d.log.Debug("deferred a measurement until a plan names the job", "measurement", what, "namespace", key.Namespace, "job_id", key.ID)
		return nil
	case j.spec.Namespace != key.Namespace:
		return fmt.Errorf("%s of job %q in namespace %q: the simulator holds job %q in namespace %q",
			what, key.ID, key.Namespace, key.ID, j.spec.Namespace)
	}
	return measure()
}

// StopJob stops a job that has not finished, as a user stopping it would:
// its tasks end now, its resources are free for the next plan, and the
// simulator forgets it: Jobs, Results, NextEvent and Done no longer count
// it, Enact rejects plans that place it, and Submit may submit its ID
// again, as a new job that starts from step 0. The samples and allocation
// changes it recorded stay. StopJob returns an error for an unknown or
// finished job.
func (s *Sim) StopJob(id string) error {
	j, ok := s.jobs[id]
	if !ok {
		return fmt.Errorf("stop unknown job %q", id)
	}
	if j.ended() {
		return fmt.Errorf("stop job %q: it has finished or failed", id)
	}
	held := s.held
	s.setHeld(j, Resources{}, s.now)
	s.forget(j)
	if s.held != held {
		s.recordUsage()
	}
	return nil
}

// forget removes j from the simulator's books.
func (s *Sim) forget(j *job) {
	delete(s.jobs, j.spec.ID)
	is := func(o *job) bool { return o == j }
	s.order = slices.DeleteFunc(s.order, is)
	s.live = slices.DeleteFunc(s.live, is)
}

// simMark is a point to roll submissions back to: how many jobs were
// submitted and how many samples were held.
type simMark struct{ jobs, samples int }

func (s *Sim) mark() simMark { return simMark{len(s.order), len(s.samples)} }

// rollback forgets the jobs submitted since m and drops the samples
// reported since. It undoes only Submit and Profile of jobs that were never
// placed, which hold no resources.
func (s *Sim) rollback(m simMark) {
	for _, j := range slices.Clone(s.order[m.jobs:]) {
		s.forget(j)
	}
	clear(s.samples[m.samples:])
	s.samples = s.samples[:m.samples]
}

// NextEvent returns, in virtual seconds, when the simulator next changes
// on its own (a job finishes or restarts); +Inf when nothing is pending.
func (d *Driver) NextEvent() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.syncLocked()
	return d.sim.NextEvent()
}

// Results returns what the simulator recorded: every job's result, the
// GPUs held over time, the allocation changes and the cluster's GPUs.
func (d *Driver) Results() ([]JobResult, []UsePoint, []AllocChange, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.syncLocked()
	return d.sim.Results(), slices.Clone(d.sim.Usage()), slices.Clone(d.sim.Allocations()), d.sim.TotalGPUs()
}
