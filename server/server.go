package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/planner/straggler"
	"github.com/caravan-sched/caravan/plugins/loader"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/caravan-sched/caravan/tlsutil"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// ErrNotLeader is returned by writes on a server that is not the leader and
// cannot forward them.
var ErrNotLeader = errors.New("not the cluster leader")

// ErrNoLeader is returned when the cluster has no leader to forward to.
var ErrNoLeader = errors.New("no cluster leader")

// ErrUpgradeInProgress is returned for a write of a message type that a
// server in the Raft configuration is too old to apply: a rolling upgrade
// has not reached every server yet. The HTTP API answers it with 503.
var ErrUpgradeInProgress = errors.New("not every server is upgraded")

// Config is what a Server needs, resolved from the agent configuration.
type Config struct {
	// NodeName names the server for people; NodeID is its Raft ID. An
	// empty NodeID is read from DataDir/node-id, or generated and saved
	// there.
	NodeName string
	NodeID   string
	// DataDir holds Raft's log, stable store and snapshots. Empty means
	// in memory (dev mode): nothing survives a restart.
	DataDir string
	// HTTPAddr and RaftAddr are where the server listens; port 0 picks a
	// free port. RaftAddr is unused in memory.
	HTTPAddr string
	RaftAddr string
	// BootstrapExpect is how many servers form the cluster initially;
	// RetryJoin lists other servers' HTTP addresses, tried every
	// RetryInterval until this server is part of a cluster; an entry
	// "consul://<service>" stands for the service's healthy instances.
	BootstrapExpect int
	RetryJoin       []string
	RetryInterval   time.Duration

	// Algorithm and AlgorithmOptions are the scheduler configuration the
	// first leader commits when the replicated state has none.
	Algorithm        string
	AlgorithmOptions map[string]string
	// Algorithms resolves algorithm names (default: a loader of the
	// built-ins). FallbackAlgorithm is what the leader plans with when the
	// algorithm in force fails and none has worked before (default
	// "optimus").
	Algorithms        Algorithms
	FallbackAlgorithm string
	// Interval is the time between scheduling rounds (default 60 s); Poll
	// is how often the leader reads the driver (default 1 s).
	Interval time.Duration
	Poll     time.Duration
	// UsageInterval is the least time between two periodic commits of a
	// job's measured usage (default 30 s); an OOM kill or restart is
	// committed at once.
	UsageInterval time.Duration
	// ProfileConfigs is how many (ps, workers) configurations a new job
	// without speed priors is profiled at before the algorithm sizes it
	// (0: 6; negative: none); ProfileSteps is how many samples a
	// configuration needs when the driver profiles by running the job
	// there (0: 5). See models.Options.
	ProfileConfigs int
	ProfileSteps   int
	// Stragglers, when set, turns on straggler handling after every
	// algorithm's decision (planner/straggler, models.Options).
	Stragglers *straggler.Config

	// Consul, when set, advertises the server in Consul and resolves
	// consul:// entries of RetryJoin.
	Consul *Consul

	// TLS, when it turns TLS on, serves the HTTP API over TLS (HTTP) and
	// runs Raft over a mutually authenticated TLS stream layer (RPC); nil
	// means neither. ReloadTLS reads its files again.
	TLS *tlsutil.Config

	// Driver is the cluster the server enacts plans on; NewDriver, set in
	// its place, builds a driver that needs the server as its host (the
	// nomad driver confirms checkpoints from committed samples), and the
	// Discoverer that comes with it, if any.
	Driver    Driver
	NewDriver func(host structs.DriverHost) (Driver, Discoverer, error)
	// Discoverer, when set, finds jobs declared in the cluster itself:
	// the leader runs them as it runs the jobs submitted to it.
	Discoverer Discoverer
	// Metrics delivers samples besides those trainers report to the API;
	// Profiler measures new jobs out of band, and without one jobs are
	// profiled in place. The sim driver is both.
	Metrics  MetricsSource
	Profiler Profiler
	// Gatherer, when set, runs while the server leads: usually the metrics
	// source itself, when it scrapes in the background.
	Gatherer Gatherer

	// Clock stamps what the server records and times its rounds; nil
	// means the wall clock. caravan sim passes the simulated cluster's
	// virtual clock.
	Clock func() time.Time
	// SimSpeed, when the driver is the simulated cluster, is how many
	// virtual seconds pass per wall-clock second; the API marks the times
	// and durations it answers as virtual. 0 for a real cluster.
	SimSpeed float64
	// Nomad, when the driver runs jobs in Nomad, says where: GET
	// /v1/agent/self answers it, for the CLI's allocations and logs.
	Nomad *structs.NomadCluster
	// Manual, when set, runs no leader loop of its own: while the server
	// leads, its caller advances the loop with Step, as caravan sim does
	// on a virtual clock. Every step is then the one `caravan agent`
	// runs.
	Manual bool

	// JobGCThreshold is how long a job that ended stays in the state
	// before the leader's job garbage collector purges it (default 4 h,
	// Nomad's job_gc_threshold), by the server's Clock; JobGCInterval is
	// how often the collector looks, in wall-clock time (default 5 min).
	// In Manual mode no collector runs: the caller calls CollectGarbage.
	JobGCThreshold time.Duration
	JobGCInterval  time.Duration
	// Retention bounds what the state keeps of each job's samples and
	// placement history and of the events; the leader commits it when it
	// differs from the bounds in force. nil means the defaults
	// (structs.DefaultRetention).
	Retention *structs.Retention

	// ACL turns ACLs on; see acl.go.
	ACL ACLConfig
	// Jobs is what jobs the server runs (jobpolicy.go); the zero value
	// allows every job.
	Jobs JobPolicy

	Logger hclog.Logger
	// RaftConfig overrides Raft's defaults (tests use short timeouts);
	// LocalID, Logger and NotifyCh are set by the server.
	RaftConfig *raft.Config
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.BootstrapExpect == 0 {
		c.BootstrapExpect = 1
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = 15 * time.Second
	}
	if c.Algorithm == "" {
		c.Algorithm = "optimus"
	}
	if c.FallbackAlgorithm == "" {
		c.FallbackAlgorithm = "optimus"
	}
	if c.Interval == 0 {
		c.Interval = time.Minute
	}
	if c.Poll == 0 {
		c.Poll = time.Second
	}
	if c.UsageInterval == 0 {
		c.UsageInterval = usageInterval
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.JobGCThreshold == 0 {
		c.JobGCThreshold = defaultJobGCThreshold
	}
	if c.JobGCInterval == 0 {
		c.JobGCInterval = defaultJobGCInterval
	}
	if c.Consul != nil {
		c.Consul.setDefaults()
	}
}

// Server is one Caravan server: a Raft peer with the replicated state, the
// HTTP API, and, while it leads, the scheduling loop.
type Server struct {
	cfg Config
	// inventory serves checkFits.
	inventory inventory
	log       hclog.Logger
	fsm       *fsm.FSM
	raft      *raft.Raft
	// restoreMu serialises the operator's snapshot restores.
	restoreMu sync.Mutex
	trans     raft.Transport
	closer    []func() error
	// notify carries Raft's leadership changes; bootstrapped is true when
	// Raft had state on disk at start.
	notify       chan bool
	bootstrapped bool
	// restart asks monitorLeadership to start the leader loop again,
	// which closes the channel sent once it did (or found no loop to
	// restart); loopRunning is set while a leader loop runs.
	restart     chan chan struct{}
	loopRunning atomic.Bool

	http     *http.Server
	httpAddr string
	// reads is the server's part in consistent reads (reads.go).
	reads readState
	// tls is nil without TLS; peerTransport calls other servers' HTTP
	// APIs, over TLS with this server's certificate when TLS covers HTTP.
	tls           *tlsutil.Configurator
	peerTransport http.RoundTripper
	// forwardReads and forwardWrites carry requests to the leader (see
	// forwardTransports).
	forwardReads, forwardWrites *http.Transport

	// dryRuns carries `job plan` requests to the leader loop.
	dryRuns chan dryRunRequest
	// wake is signalled when an applied entry may call for a scheduling
	// round.
	wake chan struct{}

	// manual is the leader's state while it leads in Manual mode; nil
	// otherwise.
	manualMu sync.Mutex
	manual   *leader

	shutdownCtx context.Context
	shutdown    context.CancelFunc
	wg          sync.WaitGroup
	stopOnce    sync.Once

	// gc is the job garbage collector's state (gc.go).
	gc jobGC

	// aclCache keeps compiled ACLs of token policies.
	aclCache aclCache
	// bootstrapLimit holds POST /v1/acl/bootstrap to a rate per client
	// address.
	bootstrapLimit *clientLimiter
}

// New starts a server: its Raft peer, its HTTP API and the goroutines that
// join a cluster and lead when elected. Call Shutdown or Leave to stop it.
func New(cfg Config) (*Server, error) {
	if (cfg.Driver == nil) == (cfg.NewDriver == nil) {
		return nil, errors.New("server needs a driver: set either Driver or NewDriver")
	}
	cfg.setDefaults()
	if cfg.JobGCThreshold < 0 || cfg.JobGCInterval < 0 {
		return nil, fmt.Errorf("job garbage collection: threshold %s and interval %s must be positive", cfg.JobGCThreshold, cfg.JobGCInterval)
	}
	if r := cfg.Retention; r != nil && !r.Valid() {
		return nil, fmt.Errorf("retention: at least %d samples per job, 1 placement per job and 1 event must be kept, not %d, %d and %d",
			structs.MinJobSamples, r.MaxJobSamples, r.MaxJobPlacements, r.MaxEvents)
	}
	if cfg.Algorithms == nil {
		l, err := loader.New(loader.Config{Builtins: builtin.Algorithms, Logger: cfg.Logger})
		if err != nil {
			return nil, fmt.Errorf("load the built-in algorithms: %w", err)
		}
		cfg.Algorithms = l
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1), restart: make(chan chan struct{}), dryRuns: make(chan dryRunRequest), shutdownCtx: ctx, shutdown: cancel,
		bootstrapLimit: newClientLimiter(bootstrapEvery, bootstrapBurst, bootstrapMaxClients)}
	setupMetrics(s.log)
	var err error
	s.fsm, err = fsm.New(s.log, func(t fsm.MessageType) {
		switch t {
		case fsm.JobRegisterType, fsm.JobStopType, fsm.SchedulerConfigType:
			s.signal()
		}
	})
	if err != nil {
		cancel()
		return nil, err
	}
	if cfg.NewDriver != nil {
		if s.cfg.Driver, s.cfg.Discoverer, err = cfg.NewDriver(s); err != nil {
			cancel()
			return nil, fmt.Errorf("start the driver: %w", err)
		}
	}
	if err := s.setupTLS(); err != nil {
		s.close()
		return nil, err
	}
	if err := s.setupRaft(); err != nil {
		s.close()
		return nil, err
	}
	if err := s.setupHTTP(); err != nil {
		s.close()
		return nil, err
	}
	s.wg.Add(3)
	go s.monitorLeadership()
	go s.join()
	go s.advertiseLoop()
	s.log.Info("server started", "node_id", s.cfg.NodeID, "http", s.httpAddr, "raft", s.trans.LocalAddr())
	return s, nil
}

func (s *Server) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Server) setupRaft() error {
	if s.cfg.NodeID == "" {
		id, err := nodeID(s.cfg.DataDir)
		if err != nil {
			return err
		}
		s.cfg.NodeID = id
	}
	conf := raft.DefaultConfig()
	if s.cfg.RaftConfig != nil {
		c := *s.cfg.RaftConfig
		conf = &c
	}
	conf.LocalID = raft.ServerID(s.cfg.NodeID)
	conf.Logger = s.log.Named("raft")
	s.notify = make(chan bool, 8)
	conf.NotifyCh = s.notify

	var (
		logs   raft.LogStore
		stable raft.StableStore
		snaps  raft.SnapshotStore
	)
	if s.cfg.DataDir == "" {
		store := raft.NewInmemStore()
		logs, stable, snaps = store, store, raft.NewInmemSnapshotStore()
		_, s.trans = raft.NewInmemTransport(raft.ServerAddress(s.cfg.NodeID))
	} else {
		// raft/ and everything in it is private (datadir.go).
		dir := filepath.Join(s.cfg.DataDir, "raft")
		if err := os.MkdirAll(dir, privateDirMode); err != nil {
			return fmt.Errorf("create raft directory: %w", err)
		}
		if err := makePrivate(dir); err != nil {
			return err
		}
		bolt, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
		if err != nil {
			return fmt.Errorf("open raft store: %w", err)
		}
		s.closer = append(s.closer, bolt.Close)
		logs, stable = bolt, bolt
		if snaps, err = newPrivateSnapshotStore(dir, 2, s); err != nil {
			return err
		}
		var trans *raft.NetworkTransport
		if s.cfg.TLS != nil && s.cfg.TLS.RPC {
			trans, err = newRaftTLSTransport(s.cfg.RaftAddr, s.tls, s)
		} else {
			trans, err = raft.NewTCPTransportWithLogger(s.cfg.RaftAddr, nil, 3, 10*time.Second, s.log.Named("raft"))
		}
		if err != nil {
			return fmt.Errorf("listen for raft on %s: %w", s.cfg.RaftAddr, err)
		}
		s.trans = trans
		s.closer = append(s.closer, trans.Close)
	}
	existing, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("read raft state: %w", err)
	}
	s.bootstrapped = existing
	s.raft, err = raft.NewRaft(conf, s.fsm, logs, stable, snaps, s.trans)
	if err != nil {
		return fmt.Errorf("start raft: %w", err)
	}
	return nil
}

// nodeID reads the server's ID from dataDir, or makes a new one and saves
// it there; without a data dir it makes a new one each time.
func nodeID(dataDir string) (string, error) {
	id, err := newUUID()
	if err != nil {
		return "", fmt.Errorf("node ID: %w", err)
	}
	if dataDir == "" {
		return id, nil
	}
	path := filepath.Join(dataDir, "node-id")
	if buf, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(buf)), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read node ID: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("create data dir: %w", err)
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("save node ID: %w", err)
	}
	return id, nil
}

// now is the time by the server's clock.
func (s *Server) now() time.Time { return s.cfg.Clock() }

// ID returns the server's Raft ID.
func (s *Server) ID() string { return s.cfg.NodeID }

// HTTPAddr returns the address the HTTP API listens on.
func (s *Server) HTTPAddr() string { return s.httpAddr }

// RaftAddr returns the server's Raft address.
func (s *Server) RaftAddr() string { return string(s.trans.LocalAddr()) }

// IsLeader reports whether the server leads the cluster now.
func (s *Server) IsLeader() bool { return s.raft.State() == raft.Leader }

// State returns the replicated state store.
func (s *Server) State() *state.Store { return s.fsm.State() }

// Leave removes the server from the cluster's Raft configuration, if it is
// part of one with other servers, and then shuts it down: a graceful exit
// that does not cost the remaining servers their quorum.
func (s *Server) Leave() error {
	future := s.raft.GetConfiguration()
	if err := future.Error(); err == nil && len(future.Configuration().Servers) > 1 {
		if s.IsLeader() {
			if err := s.await(s.raft.RemoveServer(raft.ServerID(s.cfg.NodeID), 0, 10*time.Second)); err != nil {
				s.log.Warn("failed to leave the cluster", "error", err)
			}
		} else if err := s.forwardLeave(); err != nil {
			s.log.Warn("failed to leave the cluster", "error", err)
		}
	}
	return s.Shutdown()
}

// Shutdown stops the server without leaving the cluster, as a crash would,
// but cleanly: requests in flight and the leader loop are cancelled, then
// Raft, the HTTP API and the stores stop.
func (s *Server) Shutdown() error {
	var err error
	s.stopOnce.Do(func() {
		s.log.Info("shutting down server")
		s.shutdown()
		if s.raft != nil {
			err = s.raft.Shutdown().Error()
		}
		if s.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if s.http.Shutdown(ctx) != nil {
				s.http.Close()
			}
			cancel()
		}
		s.wg.Wait()
		s.withdraw() // after advertiseLoop has stopped
		err = errors.Join(err, s.close())
	})
	return err
}

func (s *Server) close() error {
	s.shutdown()
	var err error
	for i := len(s.closer) - 1; i >= 0; i-- {
		err = errors.Join(err, s.closer[i]())
	}
	s.closer = nil
	return err
}

// listen opens a TCP listener; tests pass port 0.
func listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return l, nil
}
