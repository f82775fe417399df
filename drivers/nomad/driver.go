package nomad

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
)

// The Driver satisfies the server's Driver interface (server/driver.go)
// without importing the server.
var _ interface {
	Nodes(context.Context) ([]*structs.Node, error)
	Enact(context.Context, *structs.Plan, []*structs.Job) ([]*structs.JobReport, error)
	Status(context.Context) ([]*structs.JobReport, error)
	Declared(context.Context) (map[structs.JobKey]*structs.Declaration, uint64, error)
} = (*Driver)(nil)

// Config configures a Driver.
type Config struct {
	// Address, Token and Region reach the Nomad cluster; empty means
	// Nomad's defaults (NOMAD_ADDR and the like are read by the caller).
	Address string
	Token   string
	Region  string
	// CAFile verifies Nomad's HTTPS certificate, and CertFile and KeyFile
	// are the client certificate presented to it; empty means Nomad's
	// defaults (NOMAD_CACERT, NOMAD_CLIENT_CERT, NOMAD_CLIENT_KEY).
	CAFile, CertFile, KeyFile string
	// Namespace is the Nomad namespace of every job; empty means each
	// Caravan job's own namespace. In a shared one, jobs of namespaces
	// other than the default are named caravan-<namespace>~<id>
	// (NomadJobID).
	Namespace string
	// CheckpointDir is the root of the jobs' checkpoint directories, a path
	// every Nomad client sees (a shared file system); default
	// /var/lib/caravan/checkpoints.
	CheckpointDir string
	// ReportAddrs are the addresses trainers report samples to, the
	// Caravan servers' HTTP addresses.
	ReportAddrs []string
	// ReportToken, when set, is handed to tasks as CARAVAN_TOKEN: the
	// secret of an ACL token whose policy grants only report (acl
	// report_token in the agent configuration).
	ReportToken string
	// Collector, when set, adds a `caravan collector` sidecar to every
	// group, which tasks report to before the servers.
	Collector *Sidecar
	// CoordinatorAddr, when set, is given to tasks as
	// CARAVAN_COORDINATOR_ADDR: the subtask coordinator each Nomad client
	// runs at that (loopback) address, package collector/coord.
	CoordinatorAddr string
	// MaxRestarts is how many times a job whose tasks failed is started
	// again from its checkpoint before it is reported failed; default 3.
	MaxRestarts int
	// UsageInterval is how often the CPU and memory of the running tasks
	// are read from Nomad's allocation stats API; default 10s.
	UsageInterval time.Duration
	// UsageRate bounds the allocation stats calls, in calls a second
	// spread evenly, whatever the number of allocations (see
	// watchUsage); default 4.
	UsageRate float64
	// WaitTime bounds Nomad's blocking queries; default 1m.
	WaitTime time.Duration
	// CallTimeout bounds every Nomad call that is not a blocking query
	// (reads, writes, signals, stats); a blocking query is given its
	// WaitTime, Nomad's jitter (a sixteenth of it) and CallTimeout;
	// default 10s.
	CallTimeout time.Duration
	// AbortBackoff is how long a rescale whose checkpoint was not
	// confirmed is not tried again with the same placement; default 1m.
	AbortBackoff time.Duration
	// StartTimeout is how long a change waits for its tasks to run before
	// it ends as failed (Nomad goes on placing what it could not), so
	// that the job can be changed again; default 2m.
	StartTimeout time.Duration
	// TypeProfileHold is how long a new job waits, unplaced, for the
	// first of its profiling runs on each GPU type (ProfileTypes) to
	// report, under an algorithm that plans by GPU type; default 2m.
	// NoTypeProfiles turns the runs off: for trainers that do not
	// implement CARAVAN_PROFILE_BATCHES.
	TypeProfileHold time.Duration
	NoTypeProfiles  bool
	// BatchRestartRatio is how far a job's decided global batch
	// (Placement.Batch) must move from the one its tasks run at, as the
	// ratio of the larger to the smaller, for the job to be restarted
	// from its checkpoint for the batch alone; default 1.25. Tasks learn
	// their batch when they start, so every batch change costs a
	// rescale; near its best a job's goodput is flat in the batch, and a
	// smaller move waits for the job's next start. 1 restarts for any
	// change.
	BatchRestartRatio float64
	// Host is the server whose committed samples confirm checkpoints and
	// which records the driver's events; without one, no rescale of a
	// running job is applied.
	Host   structs.DriverHost
	Logger hclog.Logger
}

func (c *Config) setDefaults() {
	if c.CheckpointDir == "" {
		c.CheckpointDir = "/var/lib/caravan/checkpoints"
	}
	if c.MaxRestarts == 0 {
		c.MaxRestarts = 3
	}
	if c.UsageInterval == 0 {
		c.UsageInterval = 10 * time.Second
	}
	if c.UsageRate <= 0 {
		c.UsageRate = 4
	}
	if c.WaitTime == 0 {
		c.WaitTime = time.Minute
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = defaultCallTimeout
	}
	if c.AbortBackoff == 0 {
		c.AbortBackoff = time.Minute
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 2 * time.Minute
	}
	if c.TypeProfileHold == 0 {
		c.TypeProfileHold = 2 * time.Minute
	}
	if c.BatchRestartRatio < 1 {
		c.BatchRestartRatio = 1.25
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
}

// defaultCallTimeout is Config.CallTimeout's default.
const defaultCallTimeout = 10 * time.Second

// Driver runs Caravan's plans as Nomad jobs: one batch job `caravan-<id>`
// per Caravan job (see Translate), rescaled through checkpoints (see
// Enact). What a Nomad job runs is in its metadata, so a new leader's
// driver adopts the jobs its predecessor submitted; the driver's own
// memory (restarts counted, rescales aborted, starts awaited) only refines
// that, and a new leader starts without it.
//
// The driver follows Nomad in the background: watchNodes, watchJobs and
// watchAllocs keep views of the nodes, the jobs (and their specs) and the
// allocations with blocking queries, and watchUsage reads the running
// tasks' stats. Nomad writes (signals, registrations, deregistrations)
// run on per-job workers (see enqueue). Only the leader calls Enact and
// Status, from one goroutine; they read the views, record what the
// workers are to do and return, so that no Nomad call holds the leader's
// loop. Nodes and Declared are safe for concurrent use.
type Driver struct {
	cfg    Config
	log    hclog.Logger
	client *api.Client

	// shutdownCtx ends when the driver stops; the watchers and workers
	// run under it.
	shutdownCtx context.Context
	cancel      context.CancelFunc
	wg          sync.WaitGroup

	mu       sync.Mutex
	nodes    []*structs.Node
	nodesErr error
	// listed is closed when the first node list (or error) is in.
	listed     chan struct{}
	listedOnce sync.Once
	// jobs is what the driver remembers of the jobs it runs; a new
	// leader starts without it.
	jobs map[structs.JobKey]*jobState
	// view is what watchJobs last read of Nomad's jobs; viewed is closed
	// once the first list (or error) is in.
	view     jobsView
	viewed   chan struct{}
	viewOnce sync.Once
	// allocs is what watchAllocs last read of Nomad's allocations;
	// allocsRead is closed once the first list (or error) is in.
	allocs     allocsView
	allocsRead chan struct{}
	allocsOnce sync.Once
	// queues holds each job's Nomad writes not done yet, run in order by
	// the job's worker (see enqueue); outcomes holds what the workers did,
	// for the loop to apply (see collect). stopping holds, by job, the
	// modify index of the Nomad job version a worker is stopping because
	// the plan no longer names the job. lingering holds, by job, since
	// when Status has seen its stopped Nomad job with allocations still
	// to run (see stopLingering). closed is set by Stop.
	queues    map[structs.JobKey][]func(context.Context)
	outcomes  []*outcome
	stopping  map[structs.JobKey]uint64
	lingering map[structs.JobKey]time.Time
	closed    bool
	// now is the wall clock; tests replace it before calling Status.
	now func() time.Time
	// calls bounds how many workers call Nomad at once.
	calls chan struct{}
	// watched holds the allocations whose stats are read, ID → namespace,
	// and watchedBy their jobs; stats holds what was read, by allocation
	// and task (see watchUsage).
	watched   map[string]string
	watchedBy map[string]structs.JobKey
	stats     map[string]map[string]*taskStats
	// purging holds the profiling runs whose purge is queued
	// (profilesToPurge).
	purging map[namespacedID]bool
}

// maxConcurrentWrites bounds how many of the workers' Nomad calls run at
// once, whatever the number of jobs changing.
const maxConcurrentWrites = 8

// jobState is the driver's memory of one job.
type jobState struct {
	// restarts counts starts after failed tasks; lost is set by Status
	// when tasks of the current generation failed, for Enact to start
	// them again.
	restarts int
	lost     bool
	lostMsg  string
	// lostGeneration is the generation whose tasks were lost: a Nomad job
	// another leader has changed since is not restarted for it.
	lostGeneration int
	// aborted is the fingerprint of the last rescale whose checkpoint was
	// not confirmed, and when; it is not tried again before AbortBackoff.
	aborted   string
	abortedAt time.Time
	// flight is the change in flight, or the last one that ended.
	flight *flight
	// running is what runs of the job as Status last saw it.
	running *structs.Placement
	// oomSeen holds the OOM kills already recorded as events.
	oomSeen map[oomKey]bool
	// failures is what the driver knows of Nomad's failures for the job
	// (failures.go).
	failures failureState
}

// New returns a driver and starts following Nomad's nodes, jobs and
// allocations. Stop it with Stop.
func New(cfg Config) (*Driver, error) {
	cfg.setDefaults()
	acfg := api.DefaultConfig()
	if cfg.Address != "" {
		acfg.Address = cfg.Address
	}
	if cfg.Token != "" {
		acfg.SecretID = cfg.Token
	}
	if cfg.Region != "" {
		acfg.Region = cfg.Region
	}
	if acfg.TLSConfig == nil {
		acfg.TLSConfig = &api.TLSConfig{}
	}
	acfg.TLSConfig.CACert = cmp.Or(cfg.CAFile, acfg.TLSConfig.CACert)
	acfg.TLSConfig.ClientCert = cmp.Or(cfg.CertFile, acfg.TLSConfig.ClientCert)
	acfg.TLSConfig.ClientKey = cmp.Or(cfg.KeyFile, acfg.TLSConfig.ClientKey)
	client, err := api.NewClient(acfg)
	if err != nil {
		return nil, fmt.Errorf("nomad client: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Driver{
		cfg: cfg, log: cfg.Logger.Named("nomad"), client: client,
		shutdownCtx: ctx, cancel: cancel,
		listed: make(chan struct{}), jobs: map[structs.JobKey]*jobState{},
		viewed: make(chan struct{}), allocsRead: make(chan struct{}),
		queues: map[structs.JobKey][]func(context.Context){}, stopping: map[structs.JobKey]uint64{},
		lingering: map[structs.JobKey]time.Time{}, now: time.Now,
		calls:   make(chan struct{}, maxConcurrentWrites),
		watched: map[string]string{}, watchedBy: map[string]structs.JobKey{},
		stats: map[string]map[string]*taskStats{}, purging: map[namespacedID]bool{},
	}
	for _, watch := range []func(context.Context){d.watchNodes, d.watchJobs, d.watchAllocs, d.watchUsage} {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			watch(ctx)
		}()
	}
	return d, nil
}

// Stop stops following Nomad and waits for the watchers and for the
// workers, whose calls end with it. Jobs keep running on Nomad.
func (d *Driver) Stop() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
}

// callTimeout is how long a Nomad call that is not a blocking query may
// take.
func (d *Driver) callTimeout() time.Duration {
	return cmp.Or(d.cfg.CallTimeout, defaultCallTimeout)
}

// callContext bounds one Nomad call that is not a blocking query.
func (d *Driver) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d.callTimeout())
}

// blockingContext bounds one blocking query of Nomad's that waits up to
// wait: Nomad adds up to a sixteenth of it as jitter, and the answer
// takes a call's time.
func (d *Driver) blockingContext(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, wait+wait/16+d.callTimeout())
}

// errNotRead means a view of Nomad's was not read yet: the driver just
// started and Nomad did not answer within CallTimeout.
var errNotRead = errors.New("not read from Nomad yet")

// awaitFirst waits for the first answer of a watcher, closed in ready:
// the views are read once when the driver starts, and are never waited
// for after that. It waits at most CallTimeout.
func (d *Driver) awaitFirst(ctx context.Context, ready <-chan struct{}, what string) error {
	select {
	case <-ready:
		return nil
	default:
	}
	t := time.NewTimer(d.callTimeout())
	defer t.Stop()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("%s: %w", what, errNotRead)
	}
}

// sleep waits for dur, or less when ctx ends first; it reports whether
// ctx is still alive.
func sleep(ctx context.Context, dur time.Duration) bool {
	if dur <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// follow runs a blocking query until ctx ends: query is asked with the
// index of Nomad's last answer (0 at first, after a failure, and after
// Nomad's index went back, as when a server restarts on an older
// snapshot), and got is given each answer with its index; a failure goes
// to failed, and the query is tried again after a backoff.
func follow[T any](ctx context.Context, query func(index uint64) (T, *api.QueryMeta, error), failed func(error), got func(v T, index uint64)) {
	var index uint64
	var backoff time.Duration
	for sleep(ctx, backoff) {
		v, meta, err := query(index)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failed(err)
			backoff, index = nextBackoff(backoff), 0
			continue
		}
		backoff = 0
		if meta.LastIndex < index {
			index = 0
			continue
		}
		index = meta.LastIndex
		got(v, index)
	}
}

// nextBackoff is the wait before the next try after a failed one.
func nextBackoff(last time.Duration) time.Duration {
	return min(max(2*last, 250*time.Millisecond), 10*time.Second)
}

// hostOf returns the driver's host, nil when it has none.
func (d *Driver) hostOf() structs.DriverHost { return d.cfg.Host }

func (d *Driver) setNodes(nodes []*structs.Node, err error) {
	d.mu.Lock()
	if err != nil && d.nodesErr == nil {
		d.log.Warn("cannot read Nomad's nodes", "error", err)
	}
	d.nodes, d.nodesErr = nodes, err
	d.mu.Unlock()
	d.listedOnce.Do(func() { close(d.listed) })
}

// Nodes returns Nomad's nodes as watchNodes last read them, without
// calling Nomad; it waits for the first list at most CallTimeout (the
// driver just started). While Nomad cannot be reached it fails rather
// than answer from a stale list.
func (d *Driver) Nodes(ctx context.Context) ([]*structs.Node, error) {
	if err := d.awaitFirst(ctx, d.listed, "Nomad's nodes"); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.nodesErr != nil {
		return nil, d.nodesErr
	}
	out := make([]*structs.Node, len(d.nodes))
	for i, n := range d.nodes {
		out[i] = n.Copy()
	}
	return out, nil
}

func (d *Driver) state(key structs.JobKey) *jobState {
	d.mu.Lock()
	defer d.mu.Unlock()
	js := d.jobs[key]
	if js == nil {
		js = &jobState{oomSeen: map[oomKey]bool{}}
		d.jobs[key] = js
	}
	return js
}

// event records an event through the host, or only logs it without one.
func (d *Driver) event(ctx context.Context, job *structs.Job, typ, msg string, details map[string]string) {
	host := d.hostOf()
	d.log.Info(msg, "job_id", job.ID, "event", typ)
	if host == nil {
		return
	}
	ev := &structs.Event{Type: typ, Namespace: job.Namespace, JobID: job.ID, Message: msg, Details: details}
	if err := host.Event(ctx, ev); err != nil {
		d.log.Warn("failed to record event", "job_id", job.ID, "event", typ, "error", err)
	}
}

// namespacedID names a Nomad job, as Nomad's structs.NamespacedID does.
type namespacedID struct{ Namespace, ID string }

// nomadJob is a Caravan job's Nomad job as listed, with its spec at that
// version when it was read.
type nomadJob struct {
	stub       *api.JobListStub
	generation int
	// info is the Nomad job at the stub's modify index; nil when it could
	// not be read yet (watchJobs reads it again).
	info *api.Job
}

func (n *nomadJob) namespace() string { return n.stub.Namespace }

func (n *nomadJob) id() namespacedID { return namespacedID{Namespace: n.stub.Namespace, ID: n.stub.ID} }

// jobStatusDead is Nomad's status of a job none of whose allocations
// runs or will run; the api package has no constant for it.
const jobStatusDead = "dead"

// running reports whether the Nomad job runs (or is about to run) tasks.
func (n *nomadJob) running() bool {
	return n != nil && !n.stub.Stop && n.stub.Status != jobStatusDead
}

// queryNamespace is the namespace Caravan's jobs are listed in.
func (d *Driver) queryNamespace() string {
	if d.cfg.Namespace != "" {
		return d.cfg.Namespace
	}
	return "*"
}

// expected is how many allocations a Nomad job's groups ask for.
func expected(info *api.Job) int {
	n := 0
	for _, tg := range info.TaskGroups {
		n += *tg.Count
	}
	return n
}

// isNotFound reports whether err is Nomad's 404.
func isNotFound(err error) bool {
	var ue api.UnexpectedResponseError
	return errors.As(err, &ue) && ue.StatusCode() == 404
}
