package models

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/goodput"
	"github.com/caravan-sched/caravan/planner/model"
	"github.com/caravan-sched/caravan/planner/queue"
	"github.com/caravan-sched/caravan/planner/straggler"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
)

// Options tune model fitting; the zero value takes the defaults.
type Options struct {
	// MaxLossPoints bounds the loss history kept per job; older points are
	// merged pairwise when it is reached (default 512). It bounds the
	// progress window (planner.Job.Progress) too, whose oldest half is
	// dropped when it is reached.
	MaxLossPoints int
	// YoungConfigs is how many distinct (ps, workers) configurations a job's
	// speed must have been measured at before its models count as mature
	// (default 3).
	YoungConfigs int
	// ProfileConfigs is how many configurations a new job is profiled at
	// before the algorithm sizes it freely (default 6; negative: none).
	ProfileConfigs int
	// ProfileInPlace profiles new jobs by running them: Plan pins such a
	// job to each of its profiling configurations in turn, smallest first,
	// and moves on once ProfileSteps samples were measured there (default
	// 5). Drivers that cannot measure a job out of band, such as Nomad's,
	// need it. Without it, ProfileRequests hands the configurations to the
	// driver.
	ProfileInPlace bool
	ProfileSteps   int
	// AbortHold is how long a job whose change was aborted (its checkpoint
	// never confirmed) is held where it runs: it keeps the capacity it
	// holds, and the other jobs are planned around it, instead of being
	// planned onto capacity it will not free. It doubles with every
	// abort in a row, up to 16 times (default 1 minute, as the nomad
	// driver's AbortBackoff).
	AbortHold time.Duration
	// Stragglers, when set, turns on straggler handling for every
	// algorithm (planner/straggler): after the algorithm's decision, a
	// worker slow for the configured window is moved to another node.
	// It reads the per-rank step times of the usage ObserveUsage gives.
	Stragglers *straggler.Config
	Logger     hclog.Logger
}

// Set holds the active jobs and their models.
type Set struct {
	alg     planner.Algorithm
	opts    Options
	log     hclog.Logger
	jobs    map[structs.JobKey]*entry
	changed bool
	// version counts the changes that make a plan in the making stale;
	// see Version.
	version uint64
	// unprofiled lists jobs registered since the last ProfileRequests,
	// untyped those since the last TypeProfileRequests.
	unprofiled, untyped []structs.JobKey
	// profiled is set when a job finished profiling at a configuration
	// in place; see Profiled.
	profiled bool
	// stragglers tracks slow workers; nil when straggler handling is off.
	stragglers *straggler.Tracker
	// gpuTypes maps each node ID to its GPU type (structs.Node.GPUType),
	// as the latest Snapshot saw the nodes: a sample that does not name
	// its type ran on its job's current placement's.
	gpuTypes map[string]string
	// queues are the cluster's queues (issue 32), which every decision
	// respects (planner/queue); none when nil.
	queues []*structs.Queue
	// Rejected counts the samples dropped as invalid.
	Rejected int
	// goodputCursor is the last job whose throughput model was refitted
	// under an algorithm that does not plan from it (RefitShownGoodput).
	goodputCursor structs.JobKey
}

// shownGoodputFits bounds the throughput models refitted a step, and a
// round, under an algorithm that does not plan from them: they are only
// shown (caravan job status, the UI), and a fit takes milliseconds, so
// refitting every job that reported, as a round where a thousand jobs
// start asks for, held the loop for seconds (server/README.md, "Scale").
const shownGoodputFits = 16

// plansFromGoodput reports whether the algorithm in force reads the
// throughput models (its Capabilities' goodput estimator, or one model
// per GPU type).
func (s *Set) plansFromGoodput() bool {
	caps := planner.CapabilitiesOf(s.alg)
	return caps.ReadsEstimator(planner.EstimatorGoodput) || caps.GPUTypes
}

// RefitShownGoodput refits, under an algorithm that does not plan from
// throughput models, at most shownGoodputFits of them that have new
// measurements, in job order from after the last one refitted, so that
// every job's comes round; under one that does, Ingest refitted them all.
// The leader calls it once a step, after Ingest, and Snapshot once a
// round.
func (s *Set) RefitShownGoodput() {
	if s.plansFromGoodput() {
		return
	}
	var dirty []structs.JobKey
	for k, e := range s.jobs {
		if e.goodput.dirty() {
			dirty = append(dirty, k)
		}
	}
	slices.SortFunc(dirty, structs.JobKey.Compare)
	start, _ := slices.BinarySearchFunc(dirty, s.goodputCursor, structs.JobKey.Compare)
	if start < len(dirty) && dirty[start] == s.goodputCursor {
		start++
	}
	for n := range min(len(dirty), shownGoodputFits) {
		k := dirty[(start+n)%len(dirty)]
		s.goodputCursor = k
		if _, err := s.jobs[k].goodput.refit(); err != nil {
			s.log.Debug("throughput fit failed", "job_id", k.ID, "error", err)
		}
	}
}

type entry struct {
	job *structs.Job
	// current is what runs of the job, as observed; held is the target
	// of its change in flight, nil when none is.
	current, held *structs.Placement
	// aborts counts the job's changes aborted in a row, the last at
	// abortedAt (Unix nanoseconds); abortSeen says abortedAt is set, so
	// that a report of the same abort again counts once.
	aborts    int
	abortedAt int64
	abortSeen bool
	// profile lists the configurations the job is still to be profiled
	// at in place; Plan pins the job to the first.
	profile []structs.Shape
	// usage is what the job's tasks use, as last committed (ObserveUsage);
	// nil until measured. since is when what runs of the job began to
	// run (planner.Job.Since), 0 when unknown.
	usage *structs.JobUsage
	since int64
	// restarts counts its starts on a new placement after the first
	// (ran: it has run).
	restarts int
	ran      bool
	// restartAt is when the job's latest placement began to run (Unix
	// nanoseconds), until its first step there is reported; 0 when no
	// start is being measured. restartCost is the mean of the starts
	// measured so far, in seconds: the first step's end less the step's
	// time less restartAt (planner.Job.RestartCost).
	restartAt     int64
	restartCost   float64
	restartsTimed int
	// typesBy is when a job waiting for its first GPU-type model is
	// planned all the same (HoldForTypes); 0 when it is not waiting.
	typesBy int64
	// The estimators (estimators.go): the loss curve and progress, the
	// speed function, Pollux's goodput model, the attained service, and
	// the moving averages of the samples' cpu_s and net_s at the job's
	// latest configuration (nil until measured).
	loss     lossEstimator
	speed    speedEstimator
	goodput  goodputEstimator
	service  serviceEstimator
	subtasks *planner.Subtasks
}

// newEntry returns a job's entry with no measurement yet.
func newEntry(j *structs.Job) *entry {
	return &entry{job: j, speed: speedEstimator{means: map[structs.Shape]*mean{}}}
}

// New returns a scheduler running alg.
func New(alg planner.Algorithm, opts Options) *Set {
	if opts.MaxLossPoints == 0 {
		opts.MaxLossPoints = 512
	}
	if opts.YoungConfigs == 0 {
		opts.YoungConfigs = 3
	}
	if opts.ProfileConfigs == 0 {
		opts.ProfileConfigs = 6
	}
	if opts.ProfileSteps == 0 {
		opts.ProfileSteps = 5
	}
	if opts.AbortHold == 0 {
		opts.AbortHold = time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	s := &Set{alg: alg, opts: opts, log: opts.Logger.Named("models"), jobs: map[structs.JobKey]*entry{}}
	if opts.Stragglers != nil {
		s.stragglers = straggler.NewTracker(*opts.Stragglers)
	}
	return s
}

// ErrDuplicateJob is returned by Register for a job that is already active.
var ErrDuplicateJob = errors.New("job is already registered")

// Register adds a copy of a job, canonicalized. It must be valid.
func (s *Set) Register(j *structs.Job) error {
	j = j.Copy()
	j.Canonicalize()
	if err := j.Validate(); err != nil {
		return fmt.Errorf("register job %q: %w", j.ID, err)
	}
	key := j.Key()
	if _, ok := s.jobs[key]; ok {
		return fmt.Errorf("register job %q: %w", j.ID, ErrDuplicateJob)
	}
	e := newEntry(j)
	e.speed.addPriors(j.Training.Speeds)
	s.jobs[key] = e
	if s.profiles(e) && !s.opts.ProfileInPlace {
		s.unprofiled = append(s.unprofiled, key)
	}
	s.untyped = append(s.untyped, key)
	e.profile = s.inPlace(e)
	s.changed = true
	s.version++
	return nil
}

// Update replaces the spec of an active job by a new version of it: its
// bounds, resources, constraints, priority, weight and training spec
// count from the next plan on, while what was measured of it stays.
// Speeds the new version gives that the old one did not count as
// measurements; profiling configurations outside the new bounds are
// dropped. The job must be valid.
func (s *Set) Update(j *structs.Job) error {
	j = j.Copy()
	j.Canonicalize()
	if err := j.Validate(); err != nil {
		return fmt.Errorf("update job %q: %w", j.ID, err)
	}
	e, ok := s.jobs[j.Key()]
	if !ok {
		return s.Register(j)
	}
	var added []*structs.SpeedPrior
	for _, sp := range j.Training.Speeds {
		if !slices.ContainsFunc(e.job.Training.Speeds, func(o *structs.SpeedPrior) bool { return *o == *sp }) {
			added = append(added, sp)
		}
	}
	e.job = j
	// The hold after aborted changes kept what ran of the last version;
	// the new one is planned at once. A change in flight stays held: the
	// driver finishes it first.
	e.aborts = 0
	e.speed.addPriors(added)
	e.profile = slices.DeleteFunc(e.profile, func(c structs.Shape) bool { return !inBounds(j, c) })
	e.loss.dirty = true
	s.changed = true
	s.version++
	return nil
}

// HoldForTypes keeps a job that runs nowhere yet unplaced, saying why,
// until it has a throughput model of a GPU type or until the time until
// (Unix nanoseconds): its profiling runs take time, beside its own tasks
// (the nomad driver's), and without a model the algorithm would see it
// worth the same on every type and start it on a GPU its batch may not
// fit.
func (s *Set) HoldForTypes(key structs.JobKey, until int64) {
	if e, ok := s.jobs[key]; ok && e.current == nil {
		e.typesBy = until
		s.changed = true
	}
}

// Job returns the spec of an active job as the scheduler plans it, nil
// for a job it does not hold.
func (s *Set) Job(key structs.JobKey) *structs.Job {
	if e, ok := s.jobs[key]; ok {
		return e.job
	}
	return nil
}

// profiles reports whether a new job is to be profiled: it has no speed
// priors and profiling is on.
func (s *Set) profiles(e *entry) bool {
	return len(e.job.Training.Speeds) == 0 && s.opts.ProfileConfigs >= 0
}

// inPlace returns the configurations a new job is to be profiled at in
// place, smallest first; none unless ProfileInPlace.
func (s *Set) inPlace(e *entry) []structs.Shape {
	if !s.opts.ProfileInPlace || !s.profiles(e) {
		return nil
	}
	configs := s.profileConfigs(e)
	slices.SortStableFunc(configs, func(a, b structs.Shape) int { return cmp.Compare(a.Tasks(), b.Tasks()) })
	return configs
}

// profileConfigs returns the configurations to profile a job at:
// model.ProfileConfigs within its bounds.
func (s *Set) profileConfigs(e *entry) []structs.Shape {
	ps, workers := (&planner.Job{Job: e.job}).Bounds()
	var out []structs.Shape
	for _, c := range model.ProfileConfigs(speedKind(e.job), ps.Min, ps.Max, workers.Min, workers.Max, s.opts.ProfileConfigs) {
		out = append(out, structs.Shape{PS: c.PS, Workers: c.Workers})
	}
	return out
}

// ProfileRequest asks a driver to measure a job's speed at configurations
// before it runs.
type ProfileRequest struct {
	Job     structs.JobKey
	Configs []structs.Shape
}

// ProfileRequests returns, once per job, the configurations each newly
// registered job should be profiled at: model.ProfileConfigs within its
// bounds, as Optimus profiles a job before fitting its speed function. A
// job whose jobspec gives speeds is not profiled.
func (s *Set) ProfileRequests() []ProfileRequest {
	var out []ProfileRequest
	for _, key := range s.unprofiled {
		e, ok := s.jobs[key]
		if !ok {
			continue
		}
		out = append(out, ProfileRequest{Job: key, Configs: s.profileConfigs(e)})
	}
	s.unprofiled = s.unprofiled[:0]
	return out
}

// TypeProfileRequests returns, once per job, the jobs registered since
// the last call that are still active, when the algorithm plans from a
// throughput model per GPU type (planner.Capabilities.GPUTypes): Sia profiles
// every new job on one GPU of each type (§3.1). Otherwise it returns
// none, and those jobs are not profiled by type later either.
func (s *Set) TypeProfileRequests() []structs.JobKey {
	var out []structs.JobKey
	if planner.CapabilitiesOf(s.alg).GPUTypes {
		for _, key := range s.untyped {
			if _, ok := s.jobs[key]; ok {
				out = append(out, key)
			}
		}
	}
	s.untyped = s.untyped[:0]
	return out
}

func speedKind(j *structs.Job) string {
	switch {
	case j.Training.Architecture == structs.ArchitectureAllReduce:
		return model.SpeedAllReduce
	case j.Training.Mode == structs.ModeSync:
		return model.SpeedSync
	}
	return model.SpeedAsync
}

// Complete removes a finished job.
func (s *Set) Complete(key structs.JobKey) {
	if _, ok := s.jobs[key]; ok {
		delete(s.jobs, key)
		s.changed = true
		s.version++
	}
	if s.stragglers != nil {
		s.stragglers.Reset(key)
	}
}

// ObserveUsage records what a job's tasks use, as committed: the next
// request carries it (planner.Job.Usage), and straggler handling reads
// its per-rank step times. A new OOM kill, or a worker that became a
// straggler, asks for a round (Changed); other usage does not, or every
// commit would cause one. A job the scheduler does not hold is ignored.
func (s *Set) ObserveUsage(key structs.JobKey, u *structs.JobUsage) {
	e, ok := s.jobs[key]
	if !ok || u == nil {
		return
	}
	if newOOM(e.usage, u) {
		s.Invalidate()
	}
	e.usage = u
	if s.stragglers != nil {
		s.stragglers.Observe(u)
	}
}

// TickStragglers reports whether a straggler became due by now (Unix
// nanoseconds) since the last call (straggler.Tracker.Tick), and then
// asks for a round; the caller plans at once.
func (s *Set) TickStragglers(now int64) bool {
	if s.stragglers == nil || !s.stragglers.Tick(now) {
		return false
	}
	s.changed = true
	return true
}

// Invalidate asks for a round and makes a plan being made from an earlier
// Snapshot stale (Version), for what a plan must not miss: a task killed
// for memory, tasks the driver lost.
func (s *Set) Invalidate() {
	s.changed = true
	s.version++
}

// roleRank names one task of a job.
type roleRank struct {
	role string
	rank int
}

// newOOM reports whether usage u has an OOM kill that prev had not.
func newOOM(prev, u *structs.JobUsage) bool {
	seen := map[roleRank]int64{}
	if prev != nil {
		for _, t := range prev.Tasks {
			seen[roleRank{t.Role, t.Rank}] = t.LastOOM
		}
	}
	for _, t := range u.Tasks {
		if t.OOMKills > 0 && t.LastOOM != seen[roleRank{t.Role, t.Rank}] {
			return true
		}
	}
	return false
}

// Active returns how many jobs are active.
func (s *Set) Active() int { return len(s.jobs) }

// Ingest takes trainers' samples and refits the models that have enough
// new data (see refit). Invalid samples, and samples of unknown jobs, are
// dropped and counted in Rejected; they never reach a fit.
func (s *Set) Ingest(samples []structs.Sample) {
	touched := map[*entry]bool{}
	defer func() {
		goodput := s.plansFromGoodput()
		for e := range touched {
			s.refit(e, goodput)
		}
	}()
	for i := range samples {
		smp := &samples[i]
		e, ok := s.jobs[structs.NewJobKey(smp.Namespace, smp.JobID)]
		if !ok || smp.Validate() != nil {
			s.Rejected++
			continue
		}
		touched[e] = true
		e.goodput.observe(smp, e.job, e.current, s.sampleType(smp, e.current))
		if smp.Profile {
			// A profiling run's: a speed on one GPU of a type, for the
			// throughput model of that type alone.
			continue
		}
		e.loss.observe(smp, s.opts.MaxLossPoints)
		if smp.CPUS > 0 || smp.NetS > 0 {
			e.subtasks = averageSubtasks(e.subtasks, smp)
		}
		e.timeStart(smp)
		if e.speed.observe(smp) {
			s.advanceProfile(e)
		}
	}
}

// timeStart measures what the job's latest start cost, from the first
// step reported after it began to run: the time to that step's start,
// which checkpoint restore and warm-up take (Sia's S_i, Eq. 2). Only the
// chief's steps count, and a step measured across the start is not one.
func (e *entry) timeStart(smp *structs.Sample) {
	if e.restartAt <= 0 || !smp.Chief() || smp.Time <= e.restartAt || smp.StepTimeS <= 0 {
		return
	}
	d := float64(smp.Time-e.restartAt)/1e9 - smp.StepTimeS
	e.restartAt = 0
	if d < 0 {
		return
	}
	e.restartsTimed++
	e.restartCost += (d - e.restartCost) / float64(e.restartsTimed)
}

// workerNodes counts the nodes that run workers of placement p.
func workerNodes(p *structs.Placement) int {
	seen := make(map[string]bool, len(p.Nodes))
	for _, nt := range p.Nodes {
		if nt.Workers > 0 {
			seen[nt.NodeID] = true
		}
	}
	return len(seen)
}

// subtaskWeight is the weight of a new sample in the moving averages of
// subtask times: about the last ten samples count.
const subtaskWeight = 0.2

// averageSubtasks folds a sample's cpu_s and net_s into the moving
// averages s, which start again when the job's configuration changed:
// subtask times depend on it.
func averageSubtasks(s *planner.Subtasks, smp *structs.Sample) *planner.Subtasks {
	if s == nil || s.PS != smp.NumPS || s.Workers != smp.NumWorkers {
		return &planner.Subtasks{CPU: smp.CPUS, Net: smp.NetS, PS: smp.NumPS, Workers: smp.NumWorkers}
	}
	return &planner.Subtasks{
		CPU: s.CPU + subtaskWeight*(smp.CPUS-s.CPU), Net: s.Net + subtaskWeight*(smp.NetS-s.Net),
		PS: s.PS, Workers: s.Workers,
	}
}

// advanceProfile drops the configurations at the front of a job's
// in-place profile that have been measured enough.
func (s *Set) advanceProfile(e *entry) {
	for len(e.profile) > 0 {
		m := e.speed.means[e.profile[0]]
		if m == nil || m.n < float64(s.opts.ProfileSteps) {
			return
		}
		s.log.Debug("profiled job", "job_id", e.job.ID, "ps", e.profile[0].PS, "workers", e.profile[0].Workers, "speed", m.sum/m.n, "left", len(e.profile)-1)
		e.profile = e.profile[1:]
		s.profiled = true
		s.changed = true
	}
}

// Profiled reports, once, whether a job finished profiling at a
// configuration in place since the last call: the next round should run
// soon, to move it to its next configuration or let the algorithm size
// it.
func (s *Set) Profiled() bool {
	p := s.profiled
	s.profiled = false
	return p
}

// Profiling returns the configurations a job is still to be profiled at
// in place, the first being the one it is pinned to.
func (s *Set) Profiling(key structs.JobKey) []structs.Shape {
	if e, ok := s.jobs[key]; ok {
		return slices.Clone(e.profile)
	}
	return nil
}

// downsample halves a loss history by averaging neighbours, keeping its
// shape, as Optimus bounds the points it fits.
func downsample(pts []model.LossPoint) []model.LossPoint {
	out := pts[:0]
	for i := 0; i+1 < len(pts); i += 2 {
		out = append(out, model.LossPoint{Step: (pts[i].Step + pts[i+1].Step) / 2, Loss: (pts[i].Loss + pts[i+1].Loss) / 2})
	}
	if len(pts)%2 == 1 {
		out = append(out, pts[len(pts)-1])
	}
	return out
}

// refit updates the models of a job with new data: speed, and with
// goodput its throughput models, whenever new samples came, the loss
// curve when it is due.
func (s *Set) refit(e *entry, goodput bool) {
	t := e.job.Training
	if changed, err := e.speed.refit(speedKind(e.job), t.GlobalBatchSize); err != nil {
		s.log.Debug("speed fit failed", "job_id", e.job.ID, "error", err)
	} else if changed {
		s.changed = true
	}
	// Without goodput, RefitShownGoodput refits a few a step: no plan
	// reads them.
	if goodput {
		if changed, err := e.goodput.refit(); err != nil {
			s.log.Debug("throughput fit failed", "job_id", e.job.ID, "error", err)
		} else if changed {
			s.changed = true
		}
	}
	if e.loss.refit(t.StepsPerEpoch) {
		s.changed = true
	}
}

// Changed reports whether anything that could change a plan happened since
// the last Plan: a job came or went, or a model was refitted.
func (s *Set) Changed() bool {
	if s.changed {
		return true
	}
	goodput := s.plansFromGoodput()
	for _, e := range s.jobs {
		if e.speed.dirty || goodput && e.goodput.dirty() || e.loss.dirty && e.loss.due(e.job.Training.StepsPerEpoch) {
			return true
		}
	}
	return false
}

// Plan refits what has new data, runs the algorithm over the active jobs
// on nodes, and returns its decision as a plan after CheckDecision passed.
// A job whose change is in flight (see Observe) keeps its target: the
// algorithm plans the other jobs around it, on nodes with its target's
// capacity reserved, and the plan gives it its target again, so that no
// round starts a second change of a job. Under a planner.ModelDriven
// algorithm, a job profiling in place is pinned to its next profiling
// configuration; when that does not fit now but the job would run
// unpinned, it runs unpinned and the configuration is skipped.
//
// Plan is Snapshot, Round.Decide and Finish in one call; a caller that
// must not wait for the algorithm runs Decide on a goroutine of its own.
func (s *Set) Plan(nodes []*structs.Node, now int64) (*structs.Plan, error) {
	return s.PlanWith(s.alg, nodes, now)
}

// PlanWith is Plan with alg in place of the scheduler's algorithm, for
// one round: the leader plans with a fallback when the algorithm in force
// fails.
func (s *Set) PlanWith(alg planner.Algorithm, nodes []*structs.Node, now int64) (*structs.Plan, error) {
	res, err := s.Snapshot(nodes, now).Decide(alg)
	if err != nil {
		return nil, err
	}
	return s.Finish(res), nil
}

// Round is what one plan is made from, taken by Snapshot: the jobs with
// their models and what runs of them, the nodes with the capacity of held
// jobs reserved, and the time. It shares nothing the scheduler changes
// afterwards (specs, models and placements are replaced, never changed in
// place), so that Decide may run on another goroutine while the scheduler
// takes samples and jobs.
type Round struct {
	// Version is the scheduler's Version when the round was taken.
	Version uint64
	now     int64
	nodes   []*structs.Node
	jobs    []roundJob
	// held are the jobs that keep their placements, and keep those
	// placements as the plan gives them.
	held []planner.Held
	keep []*structs.Placement
	// versions is the version of each job of the round, free or held.
	versions map[structs.JobKey]uint64
	// stragglers are the workers slow for the straggler window, by job,
	// when straggler handling (stragglerConfig) is on.
	stragglers      map[structs.JobKey][]straggler.Straggler
	stragglerConfig *straggler.Config
	// queues are respected by every decision of the round.
	queues []*structs.Queue
	log    hclog.Logger
}

// roundJob is one free job of a round; while profiling, profile is the
// configuration a planner.ModelDriven algorithm pins it to.
type roundJob struct {
	job       planner.Job
	profiling bool
	profile   structs.Shape
	// toGo counts the profiling configurations after profile.
	toGo int
}

// Snapshot refits what has new data and takes the round a plan is made
// from. Changed reports false until something changes again.
func (s *Set) Snapshot(nodes []*structs.Node, now int64) *Round {
	r := &Round{Version: s.version, now: now, log: s.log, versions: make(map[structs.JobKey]uint64, len(s.jobs)), queues: s.queues}
	if s.stragglers != nil {
		cfg := s.stragglers.Config()
		r.stragglerConfig, r.stragglers = &cfg, map[structs.JobKey][]straggler.Straggler{}
	}
	s.RefitShownGoodput()
	goodput := s.plansFromGoodput()
	for _, k := range s.Keys() {
		e := s.jobs[k]
		r.versions[k] = e.job.Version
		s.refit(e, goodput)
		e.service.accrue(now, serviceRate(e.job, e.current))
		pj := planner.Job{
			Job: e.job, Current: e.current, Loss: e.loss.fit, Speed: e.speed.fit, Step: e.loss.step,
			Young: len(e.speed.means) < s.opts.YoungConfigs, Subtasks: e.subtasks, Progress: slices.Clip(e.loss.progress),
			Usage: e.usage, Since: e.since, AttainedService: e.service.attained,
			Perf: e.goodput.all.fit, PerfByType: e.goodput.fits(), Grad: e.goodput.grad, Restarts: e.restarts, RestartCost: e.restartCost,
		}
		if h := s.holds(e, now); h != nil {
			r.held = append(r.held, planner.Held{Job: &pj, Placement: h})
			p := h.Copy()
			p.Reason = "a change to this placement is in flight"
			if e.held == nil {
				p.Reason = fmt.Sprintf("held where it runs after %d aborted changes in a row", e.aborts)
			}
			r.keep = append(r.keep, p)
			continue
		}
		if s.stragglers != nil {
			if due := s.stragglers.Due(k, now); len(due) > 0 {
				r.stragglers[k] = due
			}
		}
		if e.typesBy > 0 && (now >= e.typesBy || e.current != nil || len(pj.PerfByType) > 0) {
			e.typesBy = 0
		}
		if e.typesBy > 0 {
			r.keep = append(r.keep, &structs.Placement{
				Namespace: k.Namespace, JobID: k.ID,
				Reason: "waiting for its first speed measurement on a GPU type (Sia §3.1's profiling)",
			})
			continue
		}
		rj := roundJob{job: pj}
		if len(e.profile) > 0 {
			rj.profile, rj.profiling, rj.toGo = e.profile[0], true, len(e.profile)-1
		}
		r.jobs = append(r.jobs, rj)
	}
	s.changed = false
	r.nodes = planner.Reserve(nodes, r.held)
	s.gpuTypes = make(map[string]string, len(nodes))
	for _, n := range nodes {
		if typ := n.GPUType(); typ != "" {
			s.gpuTypes[n.ID] = typ
		}
	}
	return r
}

// sampleType returns the GPU type a sample ran on: the one it names, else
// that of every node of the job's current placement that runs workers,
// "" when those differ or are not known.
func (s *Set) sampleType(smp *structs.Sample, current *structs.Placement) string {
	if smp.GPUType != "" || current == nil {
		return smp.GPUType
	}
	typ := ""
	for _, nt := range current.Nodes {
		if nt.Workers == 0 {
			continue
		}
		t, ok := s.gpuTypes[nt.NodeID]
		if !ok || typ != "" && t != typ {
			return ""
		}
		typ = t
	}
	return typ
}

// serviceRate is the GPUs placement p holds of job j; for a job whose
// tasks take no GPUs, its tasks. 0 when p runs nothing.
func serviceRate(j *structs.Job, p *structs.Placement) float64 {
	if p == nil || p.Paused() {
		return 0
	}
	gpus := func(r *structs.Role) int {
		n := 0
		if r != nil && r.Resources != nil {
			for _, d := range r.Resources.Devices {
				if id, err := structs.ParseDeviceID(d.Name); err == nil && id.Type == "gpu" {
					n += d.Count
				}
			}
		}
		return n
	}
	psRole := j.ParameterServer
	if psRole == nil {
		psRole = j.Worker
	}
	if g := p.NumWorkers*gpus(j.Worker) + p.NumPS*gpus(psRole); g > 0 {
		return float64(g)
	}
	return float64(p.NumWorkers + p.NumPS)
}

// Decision is an algorithm's checked decision on a round, for Finish.
type Decision struct {
	round      *Round
	algorithm  string
	placements []*structs.Placement
	// unpinned lists the jobs that ran unpinned because their profiling
	// configuration did not fit.
	unpinned []roundJob
	// Preemptions are the jobs the queues shrank or paused against the
	// algorithm's decision (planner/queue), with why.
	Preemptions []queue.Preemption
}

// Decide runs alg on the round and checks its decision. It touches no
// state of the scheduler: it may run on any goroutine, once at a time per
// round.
func (r *Round) Decide(alg planner.Algorithm) (*Decision, error) {
	req := &planner.Request{Now: r.now, Nodes: r.nodes}
	pinned := map[structs.JobKey]*planner.Job{}
	caps := planner.CapabilitiesOf(alg)
	pinning := caps.SpeedModels
	for i := range r.jobs {
		rj := &r.jobs[i]
		pj := readable(rj.job, caps) // a copy: an algorithm's changes stay in its request
		if pinning && rj.profiling {
			pj.Job = pin(rj.job.Job, rj.profile)
			pinned[pj.Job.Key()] = &pj
		}
		req.Jobs = append(req.Jobs, &pj)
	}
	dec, err := decide(alg, req)
	if err != nil {
		return nil, err
	}
	var unfit []structs.JobKey
	for _, p := range dec.Placements {
		if pj := pinned[p.Key()]; pj != nil && p.Paused() {
			unfit = append(unfit, p.Key())
		}
	}
	out := &Decision{round: r, algorithm: alg.Name()}
	if len(unfit) > 0 {
		for i := range r.jobs {
			if pj := pinned[r.jobs[i].job.Job.Key()]; pj != nil && slices.Contains(unfit, pj.Job.Key()) {
				pj.Job = r.jobs[i].job.Job
				delete(pinned, pj.Job.Key())
			}
		}
		if dec, err = decide(alg, req); err != nil {
			return nil, err
		}
		for _, p := range dec.Placements {
			if i := slices.IndexFunc(r.jobs, func(rj roundJob) bool { return rj.job.Job.Key() == p.Key() }); i >= 0 && slices.Contains(unfit, p.Key()) && !p.Paused() {
				out.unpinned = append(out.unpinned, r.jobs[i])
			}
		}
	}
	if err := r.replaceStragglers(alg, req, dec); err != nil {
		return nil, err
	}
	if len(r.queues) > 0 {
		dec, out.Preemptions = queue.Apply(req, dec, r.queues, r.held)
		if err := planner.CheckDecision(req, dec); err != nil {
			return nil, fmt.Errorf("%s within the queues' quotas: %w", alg.Name(), err)
		}
	}
	r.explainProfiling(alg.Name(), dec, pinned)
	out.placements = dec.Placements
	return out, nil
}

// explainProfiling replaces the reason of each placement that runs a job
// at the configuration it is pinned to for profiling: the algorithm saw
// bounds of that one configuration and would call it the job's minimum or
// maximum, which is not why the job runs so.
func (r *Round) explainProfiling(alg string, dec *planner.Decision, pinned map[structs.JobKey]*planner.Job) {
	for _, p := range dec.Placements {
		if pinned[p.Key()] == nil || p.Paused() {
			continue
		}
		i := slices.IndexFunc(r.jobs, func(rj roundJob) bool { return rj.job.Job.Key() == p.Key() })
		if i < 0 || !r.jobs[i].profiling || p.Shape() != r.jobs[i].profile {
			continue
		}
		then := "then sized by " + alg
		if n := r.jobs[i].toGo; n > 0 {
			then = fmt.Sprintf("%s to go, %s", structs.Plural(n, "more configuration"), then)
		}
		p.Reason = fmt.Sprintf("%s: %s; profiling its speed at this configuration (%s)", alg, p.Shape(), then)
	}
}

// Algorithm is the name of the algorithm that decided.
func (d *Decision) Algorithm() string { return d.algorithm }

// Finish makes a decision on a round a plan: the held jobs keep their
// placements, and a job that ran unpinned moves on to its next profiling
// configuration.
func (s *Set) Finish(d *Decision) *structs.Plan {
	for _, rj := range d.unpinned {
		e := s.jobs[rj.job.Job.Key()]
		if e == nil || len(e.profile) == 0 || e.profile[0] != rj.profile {
			continue // moved on meanwhile
		}
		s.log.Debug("skipped a profiling configuration that does not fit", "job_id", e.job.ID, "ps", e.profile[0].PS, "workers", e.profile[0].Workers)
		e.profile = e.profile[1:]
		s.advanceProfile(e)
	}
	placements := append(d.placements, d.round.keep...)
	slices.SortFunc(placements, func(a, b *structs.Placement) int { return a.Key().Compare(b.Key()) })
	for _, p := range placements {
		p.JobVersion = d.round.versions[p.Key()]
	}
	return &structs.Plan{Algorithm: d.algorithm, CreateTime: d.round.now, Placements: placements}
}

// replaceStragglers is the straggler pass (planner/straggler) over the
// algorithm's decision for the round's jobs, when straggler handling is
// on: each worker or server slow for the window is moved to another node, and the
// decision is checked again.
func (r *Round) replaceStragglers(alg planner.Algorithm, req *planner.Request, dec *planner.Decision) error {
	if r.stragglerConfig == nil {
		return nil
	}
	for _, o := range straggler.Apply(req, dec, r.stragglers, *r.stragglerConfig) {
		if o.To == "" {
			r.log.Debug("straggler not replaced", "job_id", o.Job.ID, "role", o.Straggler.Role, "rank", o.Straggler.Rank, "node_id", o.Straggler.NodeID, "why", o.Why)
			continue
		}
		r.log.Info("replacing straggler", "job_id", o.Job.ID, "role", o.Straggler.Role, "rank", o.Straggler.Rank, "from", o.Straggler.NodeID, "to", o.To,
			"step_time_s", o.Straggler.StepTimeS, "median_step_time_s", o.Straggler.MedianStepTimeS)
	}
	if err := planner.CheckDecision(req, dec); err != nil {
		return fmt.Errorf("%s with straggler handling: %w", alg.Name(), err)
	}
	return nil
}

// readable returns j with only the estimates an algorithm declares it
// reads (planner.Capabilities.Reads); one that declares none, such as a
// plugin built before declarations, is handed them all.
func readable(j planner.Job, caps planner.Capabilities) planner.Job {
	if len(caps.Reads) == 0 {
		return j
	}
	if !caps.ReadsEstimator(planner.EstimatorLoss) {
		j.Loss = nil
	}
	if !caps.ReadsEstimator(planner.EstimatorSpeed) {
		j.Speed, j.Young = nil, false
	}
	if !caps.ReadsEstimator(planner.EstimatorSubtasks) {
		j.Subtasks = nil
	}
	if !caps.ReadsEstimator(planner.EstimatorProgress) {
		j.Progress = nil
	}
	if !caps.ReadsEstimator(planner.EstimatorUsage) {
		j.Usage = nil
	}
	if !caps.ReadsEstimator(planner.EstimatorAttainedService) {
		j.AttainedService = 0
	}
	if !caps.ReadsEstimator(planner.EstimatorGoodput) {
		j.Perf, j.Grad = nil, nil
	}
	return j
}

// decide runs alg and checks its decision.
func decide(alg planner.Algorithm, req *planner.Request) (*planner.Decision, error) {
	dec, err := alg.Plan(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", alg.Name(), err)
	}
	if err := planner.CheckDecision(req, dec); err != nil {
		return nil, fmt.Errorf("%s: %w", alg.Name(), err)
	}
	planner.ExplainPaused(req, dec)
	return dec, nil
}

// pin returns a copy of j whose bounds allow only configuration c.
func pin(j *structs.Job, c structs.Shape) *structs.Job {
	j = j.Copy()
	if j.Elastic.ParameterServers != nil {
		j.Elastic.ParameterServers = &structs.Bounds{Min: c.PS, Max: c.PS}
	}
	j.Elastic.Workers = structs.Bounds{Min: c.Workers, Max: c.Workers}
	return j
}

// Observe records what runs of a job, as its driver reports it: the
// placement whose tasks run (nil when none do), which the next request
// shows as the job's current placement, and its change, whose target the
// job keeps while the change is in flight. A job the scheduler does not
// hold is ignored.
func (s *Set) Observe(key structs.JobKey, running *structs.Placement, change *structs.Change) {
	e, ok := s.jobs[key]
	if !ok {
		return
	}
	var held *structs.Placement
	if change.InFlight() {
		held = change.Target
	}
	if !e.current.SameTasks(running) || !e.held.SameTasks(held) || (e.held == nil) != (held == nil) {
		s.changed = true
		s.version++
	}
	switch {
	case running == nil:
		e.since = 0
	case change != nil && change.Phase == structs.ChangeDone && change.Target.SameTasks(running):
		e.since = change.Since
	case !e.current.SameTasks(running):
		e.since = 0 // runs, but since when is not known
	}
	if !e.current.SameTasks(running) && s.stragglers != nil {
		s.stragglers.Reset(key)
	}
	if running != nil && !running.Paused() && !e.current.SameTasks(running) {
		if e.ran {
			e.restarts++
		}
		e.ran = true
		e.restartAt = e.since
	}
	e.current, e.held = running, held
	switch {
	case change == nil:
	case change.Phase == structs.ChangeAborted && (!e.abortSeen || change.Since != e.abortedAt):
		e.aborts++
		e.abortedAt, e.abortSeen = change.Since, true
		s.changed = true
		s.version++
	case change.Phase == structs.ChangeDone:
		e.aborts = 0
	}
}

// inBounds reports whether shape s is within job j's bounds.
func inBounds(j *structs.Job, s structs.Shape) bool {
	ps, workers := (&planner.Job{Job: j}).Bounds()
	return workers.Contains(s.Workers) && (j.Elastic.ParameterServers == nil || ps.Contains(s.PS))
}

// holds returns the placement a job keeps whatever the algorithm says,
// nil when it is free to plan: the target of its change in flight, or
// what runs of it while it is held after aborted changes (AbortHold).
func (s *Set) holds(e *entry, now int64) *structs.Placement {
	if e.held != nil {
		return e.held
	}
	if e.aborts == 0 || e.current == nil || !inBounds(e.job, e.current.Shape()) {
		return nil // nothing to keep, or what runs breaks the version's bounds
	}
	hold := s.opts.AbortHold << min(e.aborts-1, 4)
	if now-e.abortedAt < int64(hold) {
		return e.current
	}
	return nil
}

// Models returns a job's fitted models, nil until fitted.
func (s *Set) Models(key structs.JobKey) (*model.Loss, *model.Speed) {
	e, ok := s.jobs[key]
	if !ok {
		return nil, nil
	}
	return e.loss.fit, e.speed.fit
}

// SetQueues makes the next rounds respect queues (planner/queue.Apply
// after the algorithm's decision). Every job is re-planned when they
// changed.
func (s *Set) SetQueues(queues []*structs.Queue) {
	if slices.EqualFunc(s.queues, queues, func(a, b *structs.Queue) bool { return a.Name == b.Name && a.ModifyIndex == b.ModifyIndex }) {
		return
	}
	s.queues = queues
	s.changed = true
	s.version++
}

// SetAlgorithm makes alg plan the next rounds. Every job is re-planned.
func (s *Set) SetAlgorithm(alg planner.Algorithm) {
	s.alg = alg
	s.changed = true
	s.version++
}

// Version counts the changes after which a plan decided on an earlier
// Round is stale: a job came, changed or went, what runs of a job or the
// target it is held at changed, a change aborted, or the algorithm
// changed. New samples and refitted models do not count: they make a
// plan older, not wrong, and Changed asks for the next round.
func (s *Set) Version() uint64 { return s.version }

// Algorithm returns the algorithm that plans the rounds.
func (s *Set) Algorithm() planner.Algorithm { return s.alg }

// Has reports whether a job is active.
func (s *Set) Has(key structs.JobKey) bool {
	_, ok := s.jobs[key]
	return ok
}

// Keys returns the key of every active job, sorted.
func (s *Set) Keys() []structs.JobKey {
	keys := slices.Collect(maps.Keys(s.jobs))
	slices.SortFunc(keys, structs.JobKey.Compare)
	return keys
}

// Summaries returns what the models of every active job say, sorted by
// job: coefficients, predicted total steps, speed at the job's placement
// and time left.
func (s *Set) Summaries() []*structs.JobModel {
	out := make([]*structs.JobModel, 0, len(s.jobs))
	pinned := planner.CapabilitiesOf(s.alg).SpeedModels
	for _, k := range s.Keys() {
		e := s.jobs[k]
		m := &structs.JobModel{Namespace: k.Namespace, JobID: k.ID, Step: int64(e.loss.step)}
		if pinned {
			m.Profiling = slices.Clone(e.profile)
		}
		pj := &planner.Job{Job: e.job, Loss: e.loss.fit, Speed: e.speed.fit, Step: e.loss.step}
		if e.loss.fit != nil {
			b0, b1, b2 := e.loss.fit.Coefficients()
			m.Loss = []float64{b0, b1, b2}
			m.TotalSteps = e.loss.step + pj.RemainingSteps()
			m.LossRMSE = e.loss.fit.RMSE
		}
		if e.speed.fit != nil {
			m.SpeedKind = e.speed.fit.Kind
			m.Speed = slices.Clone(e.speed.fit.Theta[:])
			m.SpeedError, m.SpeedConfigs = e.speed.error()
			if c := e.current; c != nil && c.NumWorkers > 0 {
				m.StepsPerSecond = e.speed.fit.At(c.NumPS, c.NumWorkers)
				if e.loss.fit != nil && m.StepsPerSecond > 0 {
					m.RemainingSeconds = pj.RemainingSteps() / m.StepsPerSecond
				}
			}
		}
		m.Goodput = e.goodputSummary()
		out = append(out, m)
	}
	return out
}

// goodputSummary is what the job's goodput model says (JobModel.Goodput),
// nil until its throughput was fitted: the parameters and the fit's
// errors, the noise scale, at its current placement its batch, the
// batch's efficiency and the predicted goodput, and each GPU type's model
// against its measurements (typeSummaries).
func (e *entry) goodputSummary() *structs.GoodputModel {
	f := e.goodput.all.fit
	if f == nil {
		return nil
	}
	ref := e.job.Training.GlobalBatchSize
	g := &structs.GoodputModel{
		Perf: f.Params.Slice(), FitError: f.Error, MaxFitError: f.MaxError, Configs: f.Points, RefBatch: ref,
		ByType: e.goodput.typeSummaries(),
	}
	m := goodput.Model{Perf: f.Params, RefBatch: max(ref, 1)}
	if e.goodput.grad != nil {
		m.Grad = *e.goodput.grad
		if ns := m.Grad.NoiseScale(ref); !math.IsInf(ns, 0) {
			g.NoiseScale = roundSignificant(ns, 3)
		}
	}
	c := e.current
	if c == nil || c.NumWorkers == 0 {
		return g
	}
	nodes := workerNodes(c)
	batch := structs.Batch{Global: ref, Local: (ref + c.NumWorkers - 1) / c.NumWorkers}
	if c.Batch != nil {
		batch = *c.Batch
	}
	g.Batch = batch.Global
	g.Efficiency = m.Grad.Efficiency(float64(batch.Global), m.RefBatch)
	g.Goodput = m.Goodput(max(nodes, 1), c.NumWorkers, float64(batch.Local), batch.AccumSteps)
	return g
}

// roundSignificant rounds x to n significant digits.
func roundSignificant(x float64, n int) float64 {
	if x == 0 {
		return 0
	}
	p := math.Pow(10, float64(n)-math.Ceil(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

// DryRun returns the plan Plan would make if job were registered too (or
// replaced the active job of the same ID), without registering it: what
// `caravan job plan` shows. job must be valid.
func (s *Set) DryRun(job *structs.Job, nodes []*structs.Node, now int64) (*structs.Plan, error) {
	j := job.Copy()
	j.Canonicalize()
	if err := j.Validate(); err != nil {
		return nil, fmt.Errorf("plan job %q: %w", j.ID, err)
	}
	key := j.Key()
	prev, had := s.jobs[key]
	changed, profiled := s.changed, s.profiled
	// Plan may skip profiling configurations that do not fit: a dry run
	// must not.
	profiles := make(map[*entry][]structs.Shape, len(s.jobs))
	for _, e := range s.jobs {
		profiles[e] = e.profile
	}
	e := newEntry(j)
	e.profile = s.inPlace(e)
	if had {
		e.current, e.held, e.aborts, e.abortedAt, e.abortSeen = prev.current, prev.held, prev.aborts, prev.abortedAt, prev.abortSeen
		e.usage, e.since = prev.usage, prev.since
	}
	s.jobs[key] = e
	defer func() {
		if had {
			s.jobs[key] = prev
		} else {
			delete(s.jobs, key)
		}
		for e, p := range profiles {
			e.profile = p
		}
		s.changed, s.profiled = changed, profiled
	}()
	return s.Plan(nodes, now)
}
