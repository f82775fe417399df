package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/caravan-sched/caravan/collector"
	"github.com/caravan-sched/caravan/collector/coord"
	consulapi "github.com/hashicorp/consul/api"
	"github.com/hashicorp/go-hclog"
)

// collectorShutdownTimeout bounds the graceful stop of `caravan collector`.
const collectorShutdownTimeout = 10 * time.Second

// CollectorCommand runs a metrics collector.
type CollectorCommand struct {
	Meta
	// signals, when set, replaces the process's signals (tests).
	signals chan os.Signal
	// started, when set, receives the collector once it runs (tests).
	started chan *collector.Collector
}

func (c *CollectorCommand) Synopsis() string { return "Runs a metrics collector for training tasks" }

func (c *CollectorCommand) Help() string {
	return strings.TrimSpace(`
Usage: caravan collector [options]

  Runs a metrics collector: training tasks report their progress to it
  (POST /v1/report, the schema of the Caravan server's endpoint), and
  Caravan servers read the samples it buffers (GET /v1/samples?since=N,
  a blocking query). It can also follow a file of JSON lines the trainer
  writes. With Consul it registers as service "caravan-collector", with a
  health check, tagged with the job it serves; it deregisters when it stops,
  and Consul removes it a minute after it dies. See collector/README.md.

  SIGINT and SIGTERM deregister the collector and stop it.

Collector Options:

  -bind=<host>            The address to listen on. Default: 127.0.0.1.
  -port=<port>            The port to listen on. Default: 0, any free port.
  -addr=<host:port>       Both at once, instead of -bind and -port.
  -window=<n>             How many samples to hold; beyond, the oldest are
                          dropped. Default: 10000.
  -file=<path>            Also follow this file of JSON lines, as tail -F
                          does: each line one sample or {"samples": [...]}.
  -log-level=<level>      TRACE, DEBUG, INFO, WARN or ERROR. Default: INFO.

Coordinator Options:

  -coordinator            Also serve the node's subtask coordinator under
                          /v1/coord/: co-located trainers ask it before their
                          computation and communication phases (one CPU
                          subtask at a time, a primary and a secondary
                          network subtask). Run one per node, as a system
                          job on a fixed loopback port, and give tasks
                          CARAVAN_COORDINATOR_ADDR. See collector/coord.
  -coordinator-queue=<n>  Subtasks that may wait per resource. Default: 1024.
  -coordinator-no-secondary
                          One network subtask at a time, no secondary.

Consul Options:

  -consul-addr=<addr>     The Consul agent to register with. Default:
                          CONSUL_HTTP_ADDR; none means no registration.
                          CONSUL_HTTP_TOKEN and the other CONSUL_ variables
                          apply as for the consul CLI.
  -no-consul              Do not register, whatever CONSUL_HTTP_ADDR says.
  -job=<id>               Tags the service job=<id>: how Caravan servers
                          find the collectors of a job.
  -namespace=<ns>         Tags the service namespace=<ns>. Default:
                          CARAVAN_NAMESPACE.
  -role=<role>            Tags the service role=<role> (worker or ps).
  -tag=<key=value>        Another tag. Repeatable.
  -service-id=<id>        The service instance. Default:
                          caravan-collector-<hostname>-<port>.
  -advertise=<host:port>  The address registered, which servers scrape.
                          Default: the bound address.
  -check-interval=<d>     How often Consul checks GET /v1/health. Default: 2s.
  -deregister-after=<d>   How long a failing collector stays registered.
                          Default and Consul's minimum: 1m.`)
}

func (c *CollectorCommand) Run(args []string) int {
	cfg, ok := c.config(args)
	if !ok {
		return 1
	}
	col, err := collector.New(cfg)
	if err == nil {
		err = col.Start()
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error starting collector: %v", err))
		return 1
	}
	lines := []string{"==> Caravan collector started", "    HTTP: http://" + col.Addr(), "    Window: " + strconv.Itoa(cfg.Window) + " samples"}
	if cfg.File != "" {
		lines = append(lines, "    File: "+cfg.File)
	}
	if cfg.Coordinator != nil {
		lines = append(lines, "    Coordinator: http://"+col.Addr()+"/v1/coord/")
	}
	if cfg.Consul != nil {
		lines = append(lines, fmt.Sprintf("    Consul: service %s, id %s, tags %s", collector.ServiceName, col.ServiceID(), strings.Join(cfg.Registration.Tags, ",")))
	}
	c.Ui.Output(strings.Join(lines, "\n"))
	if c.started != nil {
		c.started <- col
	}

	sigs := c.signals
	if sigs == nil {
		sigs = make(chan os.Signal, 2)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		defer signal.Stop(sigs)
	}
	sig := <-sigs
	c.Ui.Output(fmt.Sprintf("==> Caught signal: %v; stopping the collector", sig))
	ctx, cancel := context.WithTimeout(context.Background(), collectorShutdownTimeout)
	defer cancel()
	if err := col.Shutdown(ctx); err != nil {
		c.Ui.Error(fmt.Sprintf("Error stopping collector: %v", err))
		return 1
	}
	c.Ui.Output("==> Collector stopped")
	return 0
}

// config parses the flags into a collector configuration; it prints what
// is wrong and returns false on errors.
func (c *CollectorCommand) config(args []string) (collector.Config, bool) {
	var (
		bind, addr, file, level        string
		consulAddr, job, role          string
		serviceID, advertise           string
		port, window                   int
		noConsul, coordOn, noSecondary bool
		coordQueue                     int
		tags                           stringsFlag
		checkInterval, deregisterAfter time.Duration
	)
	flags := flag.NewFlagSet("collector", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	// The collector is no API client and takes none of Meta's flags but
	// this one, which the nomad driver's sidecars pass.
	flags.StringVar(&c.namespace, "namespace", os.Getenv("CARAVAN_NAMESPACE"), "")
	flags.StringVar(&bind, "bind", "127.0.0.1", "")
	flags.IntVar(&port, "port", 0, "")
	flags.StringVar(&addr, "addr", "", "")
	flags.IntVar(&window, "window", collector.DefaultWindow, "")
	flags.StringVar(&file, "file", "", "")
	flags.StringVar(&level, "log-level", "INFO", "")
	flags.BoolVar(&coordOn, "coordinator", false, "")
	flags.IntVar(&coordQueue, "coordinator-queue", coord.DefaultMaxQueue, "")
	flags.BoolVar(&noSecondary, "coordinator-no-secondary", false, "")
	flags.StringVar(&consulAddr, "consul-addr", os.Getenv(consulapi.HTTPAddrEnvName), "")
	flags.BoolVar(&noConsul, "no-consul", false, "")
	flags.StringVar(&job, "job", "", "")
	flags.StringVar(&role, "role", "", "")
	flags.Var(&tags, "tag", "")
	flags.StringVar(&serviceID, "service-id", "", "")
	flags.StringVar(&advertise, "advertise", "", "")
	flags.DurationVar(&checkInterval, "check-interval", collector.DefaultCheckInterval, "")
	flags.DurationVar(&deregisterAfter, "deregister-after", collector.DefaultDeregisterAfter, "")
	if !c.parseArgs(flags, args, c.Help(), noArguments) {
		return collector.Config{}, false
	}
	set := map[string]bool{}
	flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if addr != "" && (set["bind"] || set["port"]) {
		c.usageError("Give -addr, or -bind and -port, not both", c.Help())
		return collector.Config{}, false
	}
	if addr == "" {
		addr = net.JoinHostPort(bind, strconv.Itoa(port))
	}
	if window < 1 {
		c.usageError(fmt.Sprintf("-window=%d must be positive", window), c.Help())
		return collector.Config{}, false
	}
	logLevel := hclog.LevelFromString(level)
	if logLevel == hclog.NoLevel {
		c.usageError(fmt.Sprintf("-log-level=%q is not a level: use TRACE, DEBUG, INFO, WARN or ERROR", level), c.Help())
		return collector.Config{}, false
	}

	reg := collector.Registration{
		ID: serviceID, AdvertiseAddr: advertise,
		CheckInterval: checkInterval, DeregisterAfter: deregisterAfter,
		Meta: map[string]string{},
	}
	// The shortcuts become tags, which servers filter on, and meta.
	for _, kv := range []struct{ key, val string }{{"job", job}, {"namespace", c.namespace}, {"role", role}} {
		if kv.val != "" {
			reg.Tags = append(reg.Tags, kv.key+"="+kv.val)
			reg.Meta[kv.key] = kv.val
		}
	}
	for _, tag := range tags {
		if k, _, ok := strings.Cut(tag, "="); !ok || k == "" {
			c.usageError(fmt.Sprintf("-tag=%q is not key=value", tag), c.Help())
			return collector.Config{}, false
		}
		reg.Tags = append(reg.Tags, tag)
	}
	cfg := collector.Config{
		Addr: addr, Window: window, File: file, Registration: reg,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "collector", Level: logLevel, Output: os.Stderr}),
	}
	if coordQueue < 1 {
		c.usageError(fmt.Sprintf("-coordinator-queue=%d must be positive", coordQueue), c.Help())
		return collector.Config{}, false
	}
	if coordOn {
		co, err := coord.New(coord.Config{MaxQueue: coordQueue, NoSecondary: noSecondary})
		if err != nil {
			c.usageError(err.Error(), c.Help())
			return collector.Config{}, false
		}
		cfg.Coordinator = co
	}
	if consulAddr != "" && !noConsul {
		ccfg := consulapi.DefaultConfig()
		ccfg.Address = consulAddr
		client, err := consulapi.NewClient(ccfg)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error creating the Consul client for %s: %v", consulAddr, err))
			return collector.Config{}, false
		}
		cfg.Consul = client
	}
	return cfg, true
}
