package config

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Drivers a Caravan agent can run jobs with; see Config.Driver.
const (
	// DriverNomad runs jobs on a Nomad cluster (the nomad block).
	DriverNomad = "nomad"
	// DriverSim runs jobs on the embedded simulated cluster (the sim block).
	DriverSim = "sim"
)

// Default ports of the agent; see Ports.
const (
	DefaultHTTPPort = 4680
	DefaultRaftPort = 4681
)

// drivers and logLevels are the allowed values of Config.Driver and
// Config.LogLevel, in the order error messages list them.
var (
	drivers   = []string{DriverNomad, DriverSim}
	logLevels = []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR"}
)

// Config is the configuration of a Caravan agent. A Config decoded from one
// file holds only what that file sets: an unset string or number is its zero
// value, an unset block or pointer is nil. Default().Merge(c) fills the rest.
//
// A Config is a plain value: it is not safe to mutate concurrently, and Merge
// never aliases its inputs' maps, slices or pointers.
type Config struct {
	// Name is the node's name in the cluster. Default: the hostname.
	Name string `hcl:"name,optional"`
	// DataDir is where the agent keeps its Raft log and snapshots. It must be
	// an absolute path. Required unless DevMode, where empty means the state
	// lives in memory only.
	DataDir string `hcl:"data_dir,optional"`
	// BindAddr is the IP address the HTTP and Raft listeners bind to.
	// Default "0.0.0.0"; dev "127.0.0.1".
	BindAddr string `hcl:"bind_addr,optional"`
	// LogLevel is TRACE, DEBUG, INFO, WARN or ERROR, in any case; it is kept
	// as written, and hclog.LevelFromString accepts it. Default "INFO".
	LogLevel string `hcl:"log_level,optional"`
	// LogJSON makes the agent log JSON lines. nil means unset (false).
	LogJSON *bool `hcl:"log_json,optional"`
	// Driver is where jobs run: DriverNomad or DriverSim. Default "nomad";
	// dev "sim".
	Driver string `hcl:"driver,optional"`
	// PluginDir is where the binaries of plugin blocks without an
	// absolute path are. Default none.
	PluginDir string `hcl:"plugin_dir,optional"`
	// Region is the cluster's region, a DNS label: every server
	// certificate names "server.<region>.caravan". Default
	// DefaultRegion ("global").
	Region string `hcl:"region,optional"`

	Ports     *Ports     `hcl:"ports,block"`
	Server    *Server    `hcl:"server,block"`
	Scheduler *Scheduler `hcl:"scheduler,block"`
	Nomad     *Nomad     `hcl:"nomad,block"`
	Consul    *Consul    `hcl:"consul,block"`
	Sim       *Sim       `hcl:"sim,block"`
	TLS       *TLS       `hcl:"tls,block"`
	ACL       *ACL       `hcl:"acl,block"`
	Jobs      *Jobs      `hcl:"jobs,block"`
	// Plugins declare external algorithm plugins, by name; Merge lets a
	// later plugin of the same name replace the earlier one.
	Plugins []*Plugin `hcl:"plugin,block"`

	// DevMode marks the configuration of `caravan agent -dev`: a single
	// server whose state may live in memory. No file can set it; DevDefault
	// sets it, and Merge keeps it once set by either side. Validate reads it.
	DevMode bool
	// Files lists the files the configuration was loaded from, in the order
	// they were merged. Merge appends o's files to c's.
	Files []string
}

// Default returns the configuration of an agent that no file or flag has
// changed. Its Name is the hostname, or empty if the hostname cannot be
// read (Validate then reports it). DataDir is empty: a server must be given
// one.
func Default() *Config {
	name, _ := os.Hostname()
	return &Config{
		Name:      name,
		BindAddr:  "0.0.0.0",
		LogLevel:  "INFO",
		LogJSON:   new(false),
		Driver:    DriverNomad,
		Ports:     DefaultPorts(),
		Server:    DefaultServer(),
		Scheduler: DefaultScheduler(),
		Nomad:     DefaultNomad(),
		Consul:    DefaultConsul(),
		Sim:       DefaultSim(),
		Region:    DefaultRegion,
		TLS:       DefaultTLS(),
		ACL:       DefaultACL(),
		Jobs:      DefaultJobs(),
	}
}

// DevDefault returns the defaults of `caravan agent -dev`: Default with
// DevMode set, bind_addr 127.0.0.1, the sim driver, a single server
// (bootstrap_expect 1) and no denied task driver (jobs.denied_drivers
// []): the simulated cluster runs no task, and the examples use raw_exec.
// DataDir stays empty, which in dev mode means the state is kept in
// memory.
func DevDefault() *Config {
	c := Default()
	c.DevMode = true
	c.BindAddr = "127.0.0.1"
	c.Driver = DriverSim
	c.Server.BootstrapExpect = 1
	c.Jobs.DeniedDrivers = []string{}
	return c
}

// Merge returns a new Config in which every field set in o overrides c's.
// Set means non-zero, except for pointer fields (LogJSON, Server.Enabled,
// Sim.Seed), where non-nil is set, so that false and 0 can override; and
// durations, where the parsed time.Duration decides. Scheduler.Options merge
// key by key; Server.RetryJoin from o replaces c's when non-empty. Either c
// or o may be nil. The result has every block non-nil and shares no memory
// with c or o.
func (c *Config) Merge(o *Config) *Config {
	if c == nil {
		c = &Config{}
	}
	if o == nil {
		o = &Config{}
	}
	r := *c
	r.Name = mergeString(c.Name, o.Name)
	r.DataDir = mergeString(c.DataDir, o.DataDir)
	r.BindAddr = mergeString(c.BindAddr, o.BindAddr)
	r.LogLevel = mergeString(c.LogLevel, o.LogLevel)
	r.LogJSON = mergePtr(c.LogJSON, o.LogJSON)
	r.Driver = mergeString(c.Driver, o.Driver)
	r.PluginDir = mergeString(c.PluginDir, o.PluginDir)
	r.Plugins = mergePlugins(c.Plugins, o.Plugins)
	r.Ports = c.Ports.Merge(o.Ports)
	r.Server = c.Server.Merge(o.Server)
	r.Scheduler = c.Scheduler.Merge(o.Scheduler)
	r.Nomad = c.Nomad.Merge(o.Nomad)
	r.Consul = c.Consul.Merge(o.Consul)
	r.Sim = c.Sim.Merge(o.Sim)
	r.Region = mergeString(c.Region, o.Region)
	r.TLS = c.TLS.Merge(o.TLS)
	r.ACL = c.ACL.Merge(o.ACL)
	r.Jobs = c.Jobs.Merge(o.Jobs)
	r.DevMode = c.DevMode || o.DevMode
	r.Files = append(slices.Clone(c.Files), o.Files...)
	return &r
}

// Validate checks a merged configuration, as Default().Merge(...) returns
// it, and returns every problem found, joined with errors.Join; each names
// the key at fault ("server.bootstrap_expect: ..."). Beyond the checks
// LoadFile makes on each file, it checks what only the merged whole shows:
// name and data_dir are set (data_dir only outside DevMode), the HTTP and
// Raft ports differ, and a dev agent expects a single server. A block left
// nil is checked as if empty.
func (c *Config) Validate() error {
	full := c.Merge(nil) // every block non-nil
	var errs []error
	for _, p := range full.problems() {
		errs = append(errs, p)
	}
	if full.Name == "" {
		errs = append(errs, errors.New("name: the node name is empty and the hostname could not be read; set name"))
	}
	if full.DataDir == "" && !full.DevMode {
		errs = append(errs, errors.New("data_dir: a server needs a directory for its state; set data_dir, or run in dev mode to keep the state in memory"))
	}
	if full.Ports.HTTP != 0 && full.Ports.HTTP == full.Ports.Raft {
		errs = append(errs, fmt.Errorf("ports: http and raft are both %d; they must differ", full.Ports.HTTP))
	}
	for _, p := range full.Plugins {
		if _, err := full.PluginPath(p); err != nil {
			errs = append(errs, err)
		}
	}
	if full.ACL.On() && full.ACL.ServerToken == "" && (full.Server.BootstrapExpect > 1 || len(full.Server.RetryJoin) > 0) {
		errs = append(errs, errors.New("acl.server_token: servers that join each other with ACLs enabled need a shared secret to do so; set the same server_token, such as a UUID, on every server"))
	}
	if full.DevMode && full.Server.BootstrapExpect > 1 {
		errs = append(errs, fmt.Errorf("server.bootstrap_expect: dev mode runs a single server, so it must be 1, not %d", full.Server.BootstrapExpect))
	}
	return errors.Join(errs...)
}

// PluginPath returns the binary of plugin p: its path when absolute, else
// under plugin_dir.
func (c *Config) PluginPath(p *Plugin) (string, error) {
	path := cmp.Or(p.Path, p.Name)
	switch {
	case filepath.IsAbs(path):
		return path, nil
	case c.PluginDir == "":
		return "", fmt.Errorf("plugin.%s.path: %q is not an absolute path and plugin_dir is not set; set either", p.Name, path)
	}
	return filepath.Join(c.PluginDir, path), nil
}

// HTTPAddr returns the address the HTTP API listens on, bind_addr:ports.http.
// c must have a Ports block, as a merged configuration does.
func (c *Config) HTTPAddr() string {
	return net.JoinHostPort(c.BindAddr, strconv.Itoa(c.Ports.HTTP))
}

// RaftAddr returns the address Raft listens on, bind_addr:ports.raft. c must
// have a Ports block, as a merged configuration does.
func (c *Config) RaftAddr() string {
	return net.JoinHostPort(c.BindAddr, strconv.Itoa(c.Ports.Raft))
}

// problems checks the values of c's top-level arguments and of its non-nil
// blocks, each on its own. Unset strings are checked too (an empty driver is
// unknown): LoadFile keeps only the problems of keys a file sets.
func (c *Config) problems() []problem {
	var ps []problem
	if c.DataDir != "" && !filepath.IsAbs(c.DataDir) {
		ps = append(ps, problemf("data_dir", "%q is a relative path; give an absolute path such as \"/var/lib/caravan\"", c.DataDir))
	}
	if net.ParseIP(c.BindAddr) == nil {
		ps = append(ps, problemf("bind_addr", "%q is not an IP address; use one such as \"0.0.0.0\" (all interfaces) or \"127.0.0.1\"", c.BindAddr))
	}
	if !slices.Contains(logLevels, strings.ToUpper(c.LogLevel)) {
		ps = append(ps, problemf("log_level", "%q is not a log level; use one of %s (in any case)", c.LogLevel, strings.Join(logLevels, ", ")))
	}
	if !slices.Contains(drivers, c.Driver) {
		ps = append(ps, problemf("driver", "%q is not a driver; use %q or %q", c.Driver, DriverNomad, DriverSim))
	}
	ps = append(ps, within("ports", c.Ports.problems())...)
	ps = append(ps, within("server", c.Server.problems())...)
	ps = append(ps, within("scheduler", c.Scheduler.problems())...)
	ps = append(ps, within("nomad", c.Nomad.problems())...)
	ps = append(ps, within("consul", c.Consul.problems())...)
	ps = append(ps, within("sim", c.Sim.problems())...)
	ps = append(ps, within("tls", c.TLS.problems())...)
	if c.Region != "" {
		ps = append(ps, regionProblems(c.Region)...)
	}
	ps = append(ps, within("acl", c.ACL.problems())...)
	ps = append(ps, within("jobs", c.Jobs.problems())...)
	if c.PluginDir != "" && !filepath.IsAbs(c.PluginDir) {
		ps = append(ps, problemf("plugin_dir", "%q is a relative path; give an absolute path such as \"/opt/caravan/plugins\"", c.PluginDir))
	}
	for _, p := range c.Plugins {
		ps = append(ps, within("plugin."+p.Name, p.problems())...)
	}
	return ps
}

// problem is one invalid value: the key it is at, and what is wrong and
// what is allowed. LoadFile turns it into a diagnostic at the key's value,
// Validate into an error.
type problem struct {
	// path is the key, "server.bootstrap_expect", or an element of a list,
	// "server.retry_join[1]".
	path string
	// detail is a lower-case phrase without a final period.
	detail string
}

func problemf(path, format string, args ...any) problem {
	return problem{path: path, detail: fmt.Sprintf(format, args...)}
}

// Error makes a problem an error of Validate.
func (p problem) Error() string { return p.path + ": " + p.detail }

// key returns the argument a problem is about, without a list index.
func (p problem) key() string {
	k, _, _ := strings.Cut(p.path, "[")
	return k
}

// within prefixes the paths of a block's problems with the block's name.
func within(block string, ps []problem) []problem {
	for i := range ps {
		ps[i].path = block + "." + ps[i].path
	}
	return ps
}

// joinProblems is the Validate of a block: its problems as one error.
func joinProblems(ps []problem) error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errors.Join(errs...)
}

func mergeString(a, b string) string {
	if b != "" {
		return b
	}
	return a
}

func mergeNumber[T int | float64](a, b T) T {
	if b != 0 {
		return b
	}
	return a
}

// mergePtr returns a copy of b when set, else of a, so that the result
// aliases neither.
func mergePtr[T any](a, b *T) *T {
	if b != nil {
		a = b
	}
	if a == nil {
		return nil
	}
	v := *a
	return &v
}

// mergeMap merges b into a copy of a, key by key.
func mergeMap(a, b map[string]string) map[string]string {
	if a == nil && b == nil {
		return nil
	}
	r := maps.Clone(a)
	if r == nil {
		r = make(map[string]string, len(b))
	}
	maps.Copy(r, b)
	return r
}
