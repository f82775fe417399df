package nomad

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
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
	// Caravan job's own namespace.
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
	// WaitTime bounds Nomad's blocking queries; default 1m.
	WaitTime time.Duration
	// AbortBackoff is how long a rescale whose checkpoint was not
	// confirmed is not tried again with the same placement; default 1m.
	AbortBackoff time.Duration
	// StartTimeout is how long a change waits for its tasks to run before
	// it ends as failed (Nomad goes on placing what it could not), so
	// that the job can be changed again; default 2m.
	StartTimeout time.Duration
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
	if c.WaitTime == 0 {
		c.WaitTime = time.Minute
	}
	if c.AbortBackoff == 0 {
		c.AbortBackoff = time.Minute
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 2 * time.Minute
	}
	if c.BatchRestartRatio < 1 {
		c.BatchRestartRatio = 1.25
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
}

// Driver runs Caravan's plans as Nomad jobs: one batch job `caravan-<id>`
// per Caravan job (see Translate), rescaled through checkpoints (see
// Enact). What a Nomad job runs is in its metadata, so a new leader's
// driver adopts the jobs its predecessor submitted; the driver's own
// memory (restarts counted, rescales aborted, starts awaited) only refines
// that, and a new leader starts without it. Only the leader calls Enact
// and Status, from one goroutine; Nodes is safe for concurrent use.
type Driver struct {
	cfg    Config
	log    hclog.Logger
	client *api.Client

	mu       sync.Mutex
	nodes    []*structs.Node
	nodesErr error
	// listed is closed when the first node list (or error) is in.
	listed     chan struct{}
	listedOnce sync.Once
	// jobs is what the driver remembers of the jobs it runs; a new
	// leader starts without it.
	jobs map[structs.JobKey]*jobState
	// decl is what the Nomad jobs declare (see Declared).
	decl     declared
	declOnce sync.Once
	// watched holds the allocations whose stats are read, ID → namespace,
	// and watchedBy their jobs; stats holds what was read, by allocation
	// and task (see watchUsage).
	watched   map[string]string
	watchedBy map[string]structs.JobKey
	stats     map[string]map[string]*taskStats

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

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
}

// New returns a driver and starts following Nomad's nodes and jobs. Stop
// it with Stop.
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
		listed: make(chan struct{}), jobs: map[structs.JobKey]*jobState{},
		decl:    declared{listed: make(chan struct{})},
		watched: map[string]string{}, watchedBy: map[string]structs.JobKey{},
		stats:  map[string]map[string]*taskStats{},
		cancel: cancel,
	}
	d.wg.Add(3)
	go func() {
		defer d.wg.Done()
		d.watchNodes(ctx)
	}()
	go func() {
		defer d.wg.Done()
		d.watchJobs(ctx)
	}()
	go func() {
		defer d.wg.Done()
		d.watchUsage(ctx)
	}()
	return d, nil
}

// Stop stops following Nomad. Jobs keep running on Nomad.
func (d *Driver) Stop() {
	d.cancel()
	d.wg.Wait()
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

// Nodes returns Nomad's nodes as last read. While Nomad cannot be reached
// it fails rather than answer from a stale list.
func (d *Driver) Nodes(ctx context.Context) ([]*structs.Node, error) {
	select {
	case <-d.listed:
	case <-ctx.Done():
		return nil, ctx.Err()
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

// nomadJob is a Caravan job's Nomad job as listed.
type nomadJob struct {
	stub       *api.JobListStub
	generation int
}

func (n *nomadJob) namespace() string { return n.stub.Namespace }

// jobStatusDead is Nomad's status of a job none of whose allocations
// runs or will run; the api package has no constant for it.
const jobStatusDead = "dead"

// running reports whether the Nomad job runs (or is about to run) tasks.
func (n *nomadJob) running() bool {
	return n != nil && !n.stub.Stop && n.stub.Status != jobStatusDead
}

// list returns the Nomad jobs whose current version Caravan submitted,
// by Caravan job: a job declared in Nomad whose user's version is
// current is not Caravan's (yet, or any more).
func (d *Driver) list(ctx context.Context) (map[structs.JobKey]*nomadJob, error) {
	q := (&api.QueryOptions{Namespace: d.queryNamespace()}).WithContext(ctx)
	stubs, _, err := d.client.Jobs().ListOptions(&api.JobListOptions{Fields: &api.JobListFields{Meta: true}}, q)
	if err != nil {
		return nil, fmt.Errorf("list Nomad jobs: %w", err)
	}
	out := make(map[structs.JobKey]*nomadJob, len(stubs))
	for _, s := range stubs {
		id, ok := s.Meta[metaJobID]
		if !ok {
			continue // not Caravan's, whatever its name
		}
		gen, _ := strconv.Atoi(s.Meta[metaGeneration])
		out[structs.JobKey{Namespace: s.Meta[metaNamespace], ID: id}] = &nomadJob{stub: s, generation: gen}
	}
	return out, nil
}

// queryNamespace is the namespace Caravan's jobs are listed in.
func (d *Driver) queryNamespace() string {
	if d.cfg.Namespace != "" {
		return d.cfg.Namespace
	}
	return "*"
}

// current returns the Nomad job as it is now and the allocations of its
// current version.
func (d *Driver) current(ctx context.Context, nj *nomadJob) (*api.Job, []*api.AllocationListStub, error) {
	q := (&api.QueryOptions{Namespace: nj.namespace()}).WithContext(ctx)
	info, _, err := d.client.Jobs().Info(nj.stub.ID, q)
	if err != nil {
		return nil, nil, fmt.Errorf("read Nomad job %s: %w", nj.stub.ID, err)
	}
	allocs, _, err := d.client.Jobs().Allocations(nj.stub.ID, false, q)
	if err != nil {
		return nil, nil, fmt.Errorf("read allocations of Nomad job %s: %w", nj.stub.ID, err)
	}
	var cur []*api.AllocationListStub
	for _, a := range allocs {
		if a.JobVersion == *info.Version {
			cur = append(cur, a)
		}
	}
	return info, cur, nil
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
