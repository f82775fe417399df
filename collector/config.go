package collector

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/caravan-sched/caravan/collector/coord"
	consulapi "github.com/hashicorp/consul/api"
	"github.com/hashicorp/go-hclog"
)

// ServiceName is the Consul service collectors register as (DESIGN.md §3).
const ServiceName = "caravan-collector"

// Defaults of Config.
const (
	DefaultAddr          = "127.0.0.1:0"
	DefaultWindow        = 10000
	DefaultTailInterval  = 250 * time.Millisecond
	DefaultCheckInterval = 2 * time.Second
	// DefaultCheckTimeout bounds a health check, or the interval if
	// shorter.
	DefaultCheckTimeout = time.Second
	// DefaultDeregisterAfter is Consul's minimum: its agents raise any
	// shorter DeregisterCriticalServiceAfter to one minute.
	DefaultDeregisterAfter = time.Minute
	DefaultRetryInterval   = 5 * time.Second
)

// Config configures a Collector. Zero values take the defaults.
type Config struct {
	// Addr is where the HTTP API listens, host:port; port 0 picks a free
	// port (default 127.0.0.1:0).
	Addr string
	// Window bounds the samples held (default 10000). When it is full the
	// oldest sample is dropped and counted.
	Window int
	// File, when set, is a file of JSON lines to follow as tail -F does:
	// each line is one sample or {"samples": [...]}. It is read from its
	// start, then as it grows; a truncated or replaced file is read again
	// from its start. TailInterval is how often the file is checked for
	// news (default 250ms).
	File         string
	TailInterval time.Duration

	// Consul, when set, registers the collector as service ServiceName
	// (see Registration); nil means no registration.
	Consul       *consulapi.Client
	Registration Registration

	// Coordinator, when set, is served on the same address under
	// /v1/coord/ (see package coord): the node's subtask coordinator. The
	// collector closes it on Shutdown.
	Coordinator *coord.Coordinator

	// Logger defaults to a null logger.
	Logger hclog.Logger
}

// Registration is the collector's service in Consul.
type Registration struct {
	// ID is the service instance; default
	// caravan-collector-<hostname>-<port>.
	ID string
	// Tags name what the collector serves: "job=<id>", "namespace=<ns>",
	// "role=<role>". Caravan servers find a job's collectors by the
	// job=<id> tag.
	Tags []string
	// Meta is the service's metadata; the collector adds "instance" (see
	// Collector.Instance).
	Meta map[string]string
	// AdvertiseAddr is the host:port registered, which Caravan servers
	// scrape; default the bound address. A collector listening on an
	// unspecified address (0.0.0.0) registers no address, so that Consul
	// uses its node's.
	AdvertiseAddr string
	// CheckInterval is how often Consul's agent calls GET /v1/health
	// (default 2s); a collector critical for DeregisterAfter (default and
	// minimum 1m, see DefaultDeregisterAfter) is removed from the catalog.
	CheckInterval   time.Duration
	DeregisterAfter time.Duration
	// RetryInterval is the wait between attempts to register while
	// Consul cannot be reached (default 5s).
	RetryInterval time.Duration
}

// setDefaults fills the zero values of c.
func (c *Config) setDefaults() {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.TailInterval == 0 {
		c.TailInterval = DefaultTailInterval
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	r := &c.Registration
	if r.CheckInterval == 0 {
		r.CheckInterval = DefaultCheckInterval
	}
	if r.DeregisterAfter == 0 {
		r.DeregisterAfter = DefaultDeregisterAfter
	}
	if r.RetryInterval == 0 {
		r.RetryInterval = DefaultRetryInterval
	}
}

// Validate reports every invalid field of c, defaults applied.
func (c *Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("addr %q: %w", c.Addr, err))
	}
	if c.Window < 1 {
		errs = append(errs, fmt.Errorf("window %d must be positive", c.Window))
	}
	if c.TailInterval < 0 {
		errs = append(errs, fmt.Errorf("tail interval %v must not be negative", c.TailInterval))
	}
	r := c.Registration
	if r.AdvertiseAddr != "" {
		if _, _, err := net.SplitHostPort(r.AdvertiseAddr); err != nil {
			errs = append(errs, fmt.Errorf("advertise addr %q: %w", r.AdvertiseAddr, err))
		}
	}
	for _, d := range []struct {
		name string
		val  time.Duration
	}{
		{"check interval", r.CheckInterval}, {"deregister after", r.DeregisterAfter}, {"retry interval", r.RetryInterval},
	} {
		if d.val < 0 {
			errs = append(errs, fmt.Errorf("%s %v must not be negative", d.name, d.val))
		}
	}
	return errors.Join(errs...)
}
