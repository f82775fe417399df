package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/drivers/nomad"
	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/planner/straggler"
	"github.com/caravan-sched/caravan/plugins/loader"
	"github.com/caravan-sched/caravan/server"
	"github.com/caravan-sched/caravan/server/collectors"
	"github.com/caravan-sched/caravan/server/config"
	"github.com/caravan-sched/caravan/structs"
	consulapi "github.com/hashicorp/consul/api"
	"github.com/hashicorp/go-hclog"
)

// AgentCommand runs a Caravan server.
type AgentCommand struct {
	Meta
	// signals, when set, replaces the process's signals (tests).
	signals chan os.Signal
	// started, when set, receives the server once it runs (tests).
	started chan *server.Server
}

func (c *AgentCommand) Synopsis() string { return "Runs a Caravan server" }

func (c *AgentCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan agent [options]

  Runs a Caravan server: a Raft peer of the Caravan cluster that serves the
  HTTP API and, while it leads, plans and enacts. Configuration comes from
  HCL files (-config, repeatable: a file or a directory of *.hcl and *.json
  files, merged in order); flags override files. See server/config/README.md
  for every key.

  SIGINT and SIGTERM leave the cluster gracefully and stop the agent; SIGHUP
  reloads the configuration files and applies what can change at run time:
  the log level, the scheduler's algorithm and options (committed through
  Raft, so every server agrees), and the TLS certificates and CA, read again
  from the tls block's files (new connections use them).

Agent Options:

  -config=<path>        A configuration file or directory. Repeatable.
  -dev                  Development mode: one server with in-memory state, on
                        127.0.0.1, with the embedded simulated cluster
                        (4 nodes x 4 GPUs, or -dev-cluster) as its driver
                        unless a -config file sets another. Combines with
                        -config files for overrides; the banner says which
                        driver runs.
  -dev-speed=<n>        Runs the simulated cluster n times faster than the
                        wall clock (sim.speed).
  -dev-cluster=<shape>  The simulated cluster's shape (sim.cluster), as
                        caravan sim -cluster takes it: NODESxGPUS (4x4),
                        or groups of GPU types NODESxTYPE[:GPUS] such as
                        6xt4,3xrtx,2xa100 (types t4, rtx, a100, quad;
                        drivers/sim/README.md), whose nodes report their
                        GPU type.
  -data-dir=<path>      Where Raft keeps its state (data_dir).
  -bind=<addr>          The address to listen on (bind_addr).
  -http-port=<port>     The HTTP API's port (ports.http, default 4680).
  -raft-port=<port>     Raft's port (ports.raft, default 4681).
  -node=<name>          The server's name (name).
  -bootstrap-expect=<n> How many servers form the cluster (server.bootstrap_expect).
  -retry-join=<addr>    Another server's HTTP address. Repeatable.
  -algorithm=<name>     The scheduling algorithm (scheduler.algorithm).
  -log-level=<level>    TRACE, DEBUG, INFO, WARN or ERROR (log_level).
  -log-json             Logs as JSON (log_json).`)
}

func (c *AgentCommand) Run(args []string) int {
	cfg, files := c.readConfig(args)
	if cfg == nil {
		return 1
	}
	logger := hclog.New(&hclog.LoggerOptions{
		Name: "agent", Level: hclog.LevelFromString(cfg.LogLevel), JSONFormat: cfg.LogJSON != nil && *cfg.LogJSON,
		Output: os.Stderr,
	})
	wiring, err := newDriver(cfg, logger)
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	defer wiring.stop()
	consul, retryJoin, err := consulConfig(cfg)
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	algorithms, err := newLoader(cfg, logger)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error starting agent: %v", err))
		return 1
	}
	defer algorithms.Shutdown()
	if _, err := algorithms.Algorithm(cfg.Scheduler.FallbackAlgorithm, nil); errors.Is(err, loader.ErrUnknownAlgorithm) {
		c.Ui.Error(fmt.Sprintf("Error starting agent: scheduler.fallback_algorithm: %v", err))
		return 1
	}
	// The configured algorithm is built once now, so that options it
	// refuses or a tool it needs (dorm's glpsol) are reported at start,
	// not at the first round; a plugin that is down is no reason not to
	// start, as it is none not to lead.
	if cfg.Scheduler.Algorithm != "" {
		if _, err := algorithms.Algorithm(cfg.Scheduler.Algorithm, cfg.Scheduler.Options); err != nil && !errors.Is(err, loader.ErrUnavailable) {
			c.Ui.Error(fmt.Sprintf("Error starting agent: scheduler.algorithm %q: %v", cfg.Scheduler.Algorithm, err))
			return 1
		}
	}
	var gatherer server.Gatherer
	if consul != nil && cfg.Driver == config.DriverNomad && cfg.Nomad.CollectorCommand != "" {
		src := collectors.New(collectors.Config{Consul: consul.Client, Logger: logger})
		wiring.metrics, gatherer = src, src
	}
	scfg := server.Config{
		NodeName: cfg.Name, DataDir: cfg.DataDir, HTTPAddr: cfg.HTTPAddr(), RaftAddr: cfg.RaftAddr(),
		BootstrapExpect: cfg.Server.BootstrapExpect, RetryJoin: retryJoin, Consul: consul,
		RetryInterval: cfg.Server.RetryIntervalDuration,
		Algorithm:     cfg.Scheduler.Algorithm, AlgorithmOptions: cfg.Scheduler.Options,
		Interval: cfg.Scheduler.IntervalDuration, Logger: logger,
		Driver: wiring.driver, NewDriver: wiring.newDriver, Metrics: wiring.metrics, Profiler: wiring.profiler, Gatherer: gatherer,
		// On the simulated cluster the server keeps the cluster's time,
		// which runs Speed times as fast as the wall clock: rounds are
		// due by it, and trainers' samples are stamped by it.
		Clock:          wiring.clock,
		SimSpeed:       wiring.simSpeed,
		Nomad:          wiring.nomad,
		ProfileConfigs: profileConfigs(cfg.Scheduler.ProfileConfigs), ProfileSteps: cfg.Scheduler.ProfileSteps,
		Stragglers: stragglers(cfg.Scheduler.Straggler),
		Algorithms: algorithms, FallbackAlgorithm: cfg.Scheduler.FallbackAlgorithm,
		TLS:  tlsConfig(cfg),
		ACL:  server.ACLConfig{Enabled: cfg.ACL.On(), ServerToken: cfg.ACL.ServerToken},
		Jobs: server.JobPolicy{Drivers: cfg.Jobs.Drivers, DeniedDrivers: cfg.Jobs.DeniedDrivers, Namespaces: cfg.Jobs.Namespaces},
		// On the simulated cluster the threshold is counted in its time,
		// as the rounds are; the interval is wall-clock time.
		JobGCThreshold: cfg.Server.JobGCThresholdDuration, JobGCInterval: cfg.Server.JobGCIntervalDuration,
		Retention: &structs.Retention{MaxJobSamples: cfg.Server.MaxJobSamples, MaxJobPlacements: cfg.Server.MaxJobPlacements, MaxEvents: cfg.Server.MaxEvents},
	}
	srv, err := server.New(scfg)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error starting agent: %v", err))
		return 1
	}
	c.Ui.Output(banner(cfg, wiring.nomad, srv.HTTPAddr(), srv.RaftAddr(), srv.ID()))
	if c.started != nil {
		c.started <- srv
	}

	sigs := c.signals
	if sigs == nil {
		sigs = make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(sigs)
	}
	for sig := range sigs {
		if sig != syscall.SIGHUP {
			c.Ui.Output(fmt.Sprintf("==> Caught signal: %v; leaving the cluster", sig))
			if err := srv.Leave(); err != nil {
				c.Ui.Error(fmt.Sprintf("Error stopping agent: %v", err))
				return 1
			}
			c.Ui.Output("==> Agent stopped")
			return 0
		}
		c.reload(files, cfg, logger, srv)
	}
	return 0
}

// banner says what the agent runs, as Nomad's agent does: the
// configuration files it loaded, whether it is a dev server, its driver
// (for nomad, the Nomad address it talks to, nc, which NOMAD_ADDR may
// have set; for sim, the simulated cluster), its data directory, and its
// addresses.
func banner(cfg *config.Config, nc *structs.NomadCluster, httpAddr, raftAddr, id string) string {
	var b strings.Builder
	if len(cfg.Files) > 0 {
		fmt.Fprintf(&b, "==> Loaded configuration from %s\n", strings.Join(cfg.Files, ", "))
	}
	mode := "server"
	if cfg.DevMode {
		mode = "dev server"
	}
	driver := cfg.Driver
	switch cfg.Driver {
	case config.DriverSim:
		driver += " (simulated cluster " + cfg.Sim.Cluster + ")"
	case config.DriverNomad:
		if nc != nil {
			driver += " (Nomad at " + nc.Address + ")"
		}
	}
	dataDir := cfg.DataDir
	if dataDir == "" {
		dataDir = "none (state in memory, lost when the agent stops)"
	}
	fmt.Fprintf(&b, "==> Caravan agent started: %s\n", mode)
	fmt.Fprintf(&b, "      Driver: %s\n", driver)
	fmt.Fprintf(&b, "    Data dir: %s\n", dataDir)
	fmt.Fprintf(&b, "        HTTP: %s://%s\n", httpScheme(cfg), httpAddr)
	fmt.Fprintf(&b, "        Raft: %s\n", raftAddr)
	fmt.Fprintf(&b, "        Node: %s (%s)", cfg.Name, id)
	return b.String()
}

// readConfig parses the flags and the configuration files, and returns the
// merged, validated configuration and the file arguments.
func (c *AgentCommand) readConfig(args []string) (*config.Config, []string) {
	var (
		files, join                     stringsFlag
		dev, logJSON                    bool
		devSpeed                        float64
		dataDir, bind, node, alg, level string
		devCluster                      string
		httpPort, raftPort, expect      int
	)
	flags := c.FlagSet("agent")
	flags.Var(&files, "config", "")
	flags.BoolVar(&dev, "dev", false, "")
	flags.Float64Var(&devSpeed, "dev-speed", 0, "")
	flags.StringVar(&devCluster, "dev-cluster", "", "")
	flags.StringVar(&dataDir, "data-dir", "", "")
	flags.StringVar(&bind, "bind", "", "")
	flags.IntVar(&httpPort, "http-port", 0, "")
	flags.IntVar(&raftPort, "raft-port", 0, "")
	flags.StringVar(&node, "node", "", "")
	flags.IntVar(&expect, "bootstrap-expect", 0, "")
	flags.Var(&join, "retry-join", "")
	flags.StringVar(&alg, "algorithm", "", "")
	flags.StringVar(&level, "log-level", "", "")
	flags.BoolVar(&logJSON, "log-json", false, "")
	if err := flags.Parse(args); err != nil {
		c.Ui.Error(err.Error() + "\n\n" + c.Help())
		return nil, nil
	}
	if flags.NArg() > 0 {
		c.Ui.Error("This command takes no arguments\n\n" + c.Help())
		return nil, nil
	}
	base := config.Default()
	if dev {
		base = config.DevDefault()
	}
	fromFiles := c.loadFiles(files)
	if fromFiles == nil {
		return nil, nil
	}
	flagged := &config.Config{
		DataDir: dataDir, BindAddr: bind, Name: node, LogLevel: level,
		Ports:     &config.Ports{HTTP: httpPort, Raft: raftPort},
		Server:    &config.Server{BootstrapExpect: expect, RetryJoin: join},
		Scheduler: &config.Scheduler{Algorithm: alg},
		Sim:       &config.Sim{Cluster: devCluster, Speed: devSpeed},
	}
	if logJSON {
		flagged.LogJSON = &logJSON
	}
	cfg := base.Merge(fromFiles).Merge(flagged)
	if err := cfg.Validate(); err != nil {
		c.Ui.Error(fmt.Sprintf("Invalid agent configuration:\n%v", err))
		return nil, nil
	}
	return cfg, files
}

// loadFiles loads the -config files, printing their diagnostics; nil on
// errors.
func (c *AgentCommand) loadFiles(files []string) *config.Config {
	if len(files) == 0 {
		return &config.Config{}
	}
	l := config.NewLoader()
	cfg, diags := l.Load(files...)
	if len(diags) > 0 {
		var b strings.Builder
		writeDiagnostics(&b, l.Files(), diags, c.color())
		c.Ui.Error(strings.TrimRight(b.String(), "\n"))
	}
	if diags.HasErrors() {
		return nil
	}
	return cfg
}

// reload applies what SIGHUP can change: the log level, and the scheduler
// configuration when the files changed it.
func (c *AgentCommand) reload(files []string, old *config.Config, logger hclog.Logger, srv *server.Server) {
	c.Ui.Output("==> Caught signal: hangup; reloading configuration")
	fresh := c.loadFiles(files)
	if fresh == nil {
		return
	}
	cfg := old.Merge(fresh)
	if err := cfg.Validate(); err != nil {
		c.Ui.Error(fmt.Sprintf("Invalid agent configuration, not reloaded:\n%v", err))
		return
	}
	logger.SetLevel(hclog.LevelFromString(cfg.LogLevel))
	if err := srv.ReloadTLS(); err != nil {
		c.Ui.Error(fmt.Sprintf("Error reloading the TLS certificates, the old ones stay: %v", err))
	}
	if fresh.Scheduler == nil || fresh.Scheduler.Algorithm == "" && len(fresh.Scheduler.Options) == 0 {
		return
	}
	client, err := api.NewClient(selfClientConfig(cfg, srv.HTTPAddr()))
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = client.Operator().SetSchedulerConfig(&api.SchedulerConfigRequest{Algorithm: cfg.Scheduler.Algorithm, Options: cfg.Scheduler.Options}, writeOpts(ctx))
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reloading the scheduler configuration: %v", err))
	}
}

// driverWiring is how the server gets its driver and the capabilities
// that come with it: a driver (or, for a driver that needs the server as
// its host, its constructor), a metrics source, a profiler, and what
// stops the driver.
type driverWiring struct {
	driver    server.Driver
	newDriver func(structs.DriverHost) (server.Driver, server.Discoverer, error)
	metrics   server.MetricsSource
	profiler  server.Profiler
	// clock is the cluster's clock; nil means the wall clock.
	clock func() time.Time
	// simSpeed is the simulated cluster's speed; 0 for a real one.
	simSpeed float64
	// nomad is where the nomad driver runs jobs; nil for the simulated
	// cluster.
	nomad *structs.NomadCluster
	stop  func()
}

// The simulated cluster reports its trainers' samples and profiles jobs
// out of band; the nomad driver does neither, but profiles new jobs on
// each GPU type with runs of their own, and finds the jobs declared in
// Nomad.
var (
	_ server.Driver            = (*sim.Driver)(nil)
	_ server.MetricsSource     = (*sim.Driver)(nil)
	_ server.Profiler          = (*sim.Driver)(nil)
	_ server.Driver            = (*nomad.Driver)(nil)
	_ server.Discoverer        = (*nomad.Driver)(nil)
	_ server.Rejecter          = (*nomad.Driver)(nil)
	_ server.TypeProfiler      = (*nomad.Driver)(nil)
	_ server.TypeProfileHolder = (*nomad.Driver)(nil)
)

// devGPUModels are the GPUs of the agent's simulated cluster of
// NODESxGPUS, node by node in turn: A100s of 40 GiB and V100s of 16 GiB,
// so that jobs that constrain the card (examples/bert-allreduce.hcl needs
// 32 GiB) run there too. A cluster of the catalog's GPU types
// (sim.GPUTypes) has those types' GPUs instead.
var devGPUModels = []sim.GPUModel{{Name: "NVIDIA A100-SXM4-40GB", Memory: "40 GiB"}, sim.DefaultGPUModel}

// newDriver wires the driver the configuration names; the simulated
// cluster is started at once, the nomad driver when the server builds it.
func newDriver(cfg *config.Config, logger hclog.Logger) (*driverWiring, error) {
	switch cfg.Driver {
	case config.DriverSim:
		spec, err := cfg.Sim.ParseCluster()
		if err != nil {
			return nil, err
		}
		cluster := sim.DefaultConfig()
		// devGPUModels stay for a plain NODESxGPUS cluster; typed groups
		// give each node its catalog GPU, so that nodes report their type
		// and jobs step at that type's measurements.
		cluster.GPUModels = devGPUModels
		spec.Apply(&cluster)
		if cfg.Sim.Seed != nil {
			cluster.Seed = *cfg.Sim.Seed
		}
		d := sim.NewDriver(sim.DriverConfig{Cluster: cluster, Speed: cfg.Sim.Speed, Logger: logger})
		d.Start()
		return &driverWiring{driver: d, metrics: d, profiler: d, clock: d.Now, simSpeed: cfg.Sim.Speed, stop: d.Stop}, nil
	default:
		nc := nomadConfig(cfg, logger)
		w := &driverWiring{stop: func() {}, nomad: &structs.NomadCluster{Address: nc.Address, Region: nc.Region, Namespace: nc.Namespace}}
		w.newDriver = func(host structs.DriverHost) (server.Driver, server.Discoverer, error) {
			ncfg := nomadConfig(cfg, logger)
			ncfg.Host = host
			d, err := nomad.New(ncfg)
			if err != nil {
				return nil, nil, err
			}
			w.stop = d.Stop
			return d, d, nil
		}
		return w, nil
	}
}

// consulConfig resolves the consul block: the server's use of Consul
// (nil when it has none) and its retry_join list, with the Consul service
// of server_auto_join added.
func consulConfig(cfg *config.Config) (*server.Consul, []string, error) {
	c := cfg.Consul
	join := slices.Clone(cfg.Server.RetryJoin)
	if c.ServerAutoJoin != nil && *c.ServerAutoJoin {
		join = append(join, server.ConsulJoinScheme+c.ServiceName)
	}
	scrape := cfg.Driver == config.DriverNomad && cfg.Nomad.CollectorCommand != ""
	if !c.Used() && !scrape && !slices.ContainsFunc(join, func(a string) bool { return strings.HasPrefix(a, server.ConsulJoinScheme) }) {
		return nil, join, nil
	}
	ccfg := consulapi.DefaultConfig()
	if c.Address != "" {
		ccfg.Address = c.Address
	}
	if c.Token != "" {
		ccfg.Token = c.Token
	}
	ccfg.TLSConfig.CAFile = cmp.Or(c.CAFile, ccfg.TLSConfig.CAFile)
	ccfg.TLSConfig.CertFile = cmp.Or(c.CertFile, ccfg.TLSConfig.CertFile)
	ccfg.TLSConfig.KeyFile = cmp.Or(c.KeyFile, ccfg.TLSConfig.KeyFile)
	client, err := consulapi.NewClient(ccfg)
	if err != nil {
		return nil, nil, fmt.Errorf("consul client: %w", err)
	}
	return &server.Consul{Client: client, ServiceName: c.ServiceName, Advertise: c.AutoAdvertise != nil && *c.AutoAdvertise}, join, nil
}

// nomadConfig resolves the nomad block, with NOMAD_ADDR, NOMAD_TOKEN,
// NOMAD_REGION and NOMAD_NAMESPACE filling what it leaves at defaults.
func nomadConfig(cfg *config.Config, logger hclog.Logger) nomad.Config {
	n := cfg.Nomad
	fromEnv := func(v, def, env string) string {
		if e := os.Getenv(env); v == def && e != "" {
			return e
		}
		return v
	}
	reportAddrs := n.ReportAddrs
	if len(reportAddrs) == 0 {
		// This agent first, then the others of retry_join (which may list
		// this one too).
		reportAddrs = []string{httpScheme(cfg) + "://" + cfg.HTTPAddr()}
		for _, a := range cfg.Server.RetryJoin {
			if a != cfg.HTTPAddr() && !strings.HasPrefix(a, server.ConsulJoinScheme) {
				reportAddrs = append(reportAddrs, httpScheme(cfg)+"://"+a)
			}
		}
	}
	nc := nomad.Config{
		Address:       fromEnv(n.Address, config.DefaultNomad().Address, "NOMAD_ADDR"),
		Token:         fromEnv(n.Token, "", "NOMAD_TOKEN"),
		Region:        fromEnv(n.Region, "", "NOMAD_REGION"),
		Namespace:     fromEnv(n.Namespace, "", "NOMAD_NAMESPACE"),
		CheckpointDir: n.CheckpointDir,
		CAFile:        n.CAFile, CertFile: n.CertFile, KeyFile: n.KeyFile,
		ReportAddrs:       reportAddrs,
		ReportToken:       cfg.ACL.ReportToken,
		CoordinatorAddr:   n.CoordinatorAddr,
		UsageInterval:     n.UsageIntervalDuration,
		UsageRate:         n.UsageRate,
		CallTimeout:       n.CallTimeoutDuration,
		BatchRestartRatio: n.BatchRestartRatio,
		TypeProfileHold:   n.TypeProfileHoldDuration,
		NoTypeProfiles:    n.ProfileGPUTypes != nil && !*n.ProfileGPUTypes,
		Logger:            logger,
	}
	if n.CollectorCommand != "" {
		nc.Collector = &nomad.Sidecar{Command: n.CollectorCommand, ConsulAddr: cfg.Consul.Address}
	}
	return nc
}

// profileConfigs maps the scheduler block's profile_configs, where 0 turns
// profiling off, to server.Config's, where 0 is the default and a negative
// number turns it off.
func profileConfigs(n *int) int {
	switch {
	case n == nil:
		return 0
	case *n == 0:
		return -1
	}
	return *n
}

// stragglers is the scheduler's straggler configuration from the agent's
// block: nil when straggler handling is off.
func stragglers(s *config.Straggler) *straggler.Config {
	if !s.On() {
		return nil
	}
	return &straggler.Config{Ratio: s.Ratio, Window: s.WindowDuration, Reports: s.Reports}
}

// newLoader starts the external algorithm plugins the configuration
// declares, beside the built-ins.
func newLoader(cfg *config.Config, logger hclog.Logger) (*loader.Loader, error) {
	var plugins []*loader.PluginConfig
	for _, p := range cfg.Plugins {
		path, err := cfg.PluginPath(p)
		if err != nil {
			return nil, err
		}
		plugins = append(plugins, &loader.PluginConfig{Name: p.Name, Path: path, Checksum: p.Checksum, Config: p.Config})
	}
	l, err := loader.New(loader.Config{Builtins: builtin.Algorithms, Plugins: plugins, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("load plugins: %w", err)
	}
	return l, nil
}
