package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/hashicorp/hcl/v2"
	"github.com/shoenig/test/must"
)

// fullExample is the configuration of the package's README, with every key.
const fullExample = `
name      = "server-1"
data_dir  = "/var/lib/caravan"
bind_addr = "10.0.0.1"
log_level = "debug"
log_json  = true
driver    = "sim"

ports {
  http = 5680
  raft = 5681
}

server {
  enabled          = false
  bootstrap_expect = 3
  retry_join       = ["10.0.0.2:4680", "[fd00::3]:4680", "consul://caravan"]
  retry_interval   = "30s"

  job_gc_threshold   = "24h"
  job_gc_interval    = "10m"
  max_job_samples    = 2048
  max_job_placements = 32
  max_events         = 10000
}

scheduler {
  algorithm = "drf"
  interval  = "2m"
  options   = { young_factor = "0.95", window = 8 }

  profile_configs = 0
  profile_steps   = 3

  straggler {
    enabled = true
    ratio   = 0.4
    window  = "2m"
    reports = 5
  }
}

nomad {
  address = "https://nomad.service:4646"
  token   = "nomad-token"
  region  = "eu"

  namespace      = "ml"
  checkpoint_dir = "/mnt/shared/caravan"
  report_addrs   = ["http://10.0.0.1:4680", "http://10.0.0.2:4680"]

  coordinator_addr    = "127.0.0.1:9190"
  batch_restart_ratio = 1.5
  usage_rate          = 8
  call_timeout        = "5s"
  type_profile_hold   = "90s"
  profile_gpu_types   = false
}

consul {
  address          = "10.0.0.1:8500"
  token            = "consul-token"
  service_name     = "caravan-ml"
  auto_advertise   = true
  server_auto_join = true
}

sim {
  cluster = "16x8"
  speed   = 60
  seed    = 0
}

jobs {
  drivers        = ["docker", "exec"]
  denied_drivers = []
  namespaces     = ["default", "ml"]
}
`

// writeFile writes src to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, src string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	must.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	return path
}

func TestLoadFile_Full(t *testing.T) {
	path := writeFile(t, t.TempDir(), "agent.hcl", fullExample)
	c, diags := LoadFile(path)
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	must.Eq(t, &Config{
		Name:     "server-1",
		DataDir:  "/var/lib/caravan",
		BindAddr: "10.0.0.1",
		LogLevel: "debug",
		LogJSON:  new(true),
		Driver:   "sim",
		Ports:    &Ports{HTTP: 5680, Raft: 5681},
		Server: &Server{
			Enabled:               new(false),
			BootstrapExpect:       3,
			RetryJoin:             []string{"10.0.0.2:4680", "[fd00::3]:4680", "consul://caravan"},
			RetryInterval:         "30s",
			RetryIntervalDuration: 30 * time.Second,
			JobGCThreshold:        "24h", JobGCThresholdDuration: 24 * time.Hour,
			JobGCInterval: "10m", JobGCIntervalDuration: 10 * time.Minute,
			MaxJobSamples: 2048, MaxJobPlacements: 32, MaxEvents: 10000,
		},
		Scheduler: &Scheduler{
			Algorithm:        "drf",
			Interval:         "2m",
			IntervalDuration: 2 * time.Minute,
			Options:          map[string]string{"young_factor": "0.95", "window": "8"},
			ProfileConfigs:   new(0),
			ProfileSteps:     3,
			Straggler:        &Straggler{Enabled: new(true), Ratio: 0.4, Window: "2m", WindowDuration: 2 * time.Minute, Reports: 5},
		},
		Nomad: &Nomad{
			Address: "https://nomad.service:4646", Token: "nomad-token", Region: "eu",
			Namespace: "ml", CheckpointDir: "/mnt/shared/caravan", ReportAddrs: []string{"http://10.0.0.1:4680", "http://10.0.0.2:4680"},
			CoordinatorAddr: "127.0.0.1:9190", BatchRestartRatio: 1.5,
			UsageRate: 8, CallTimeout: "5s", CallTimeoutDuration: 5 * time.Second,
			TypeProfileHold: "90s", TypeProfileHoldDuration: 90 * time.Second, ProfileGPUTypes: new(false),
		},
		Consul: &Consul{Address: "10.0.0.1:8500", Token: "consul-token", ServiceName: "caravan-ml", AutoAdvertise: new(true), ServerAutoJoin: new(true)},
		Sim:    &Sim{Cluster: "16x8", Speed: 60, Seed: new(uint64(0))},
		Jobs:   &Jobs{Drivers: []string{"docker", "exec"}, DeniedDrivers: []string{}, Namespaces: []string{"default", "ml"}},
		Files:  []string{path},
	}, c)

	// Every value of the file overrides the defaults, and the result is valid.
	merged := Default().Merge(c)
	must.NoError(t, merged.Validate())
	must.Eq(t, c.Sim, merged.Sim)
	must.Eq(t, c.Server, merged.Server)
	must.Eq(t, c.Jobs, merged.Jobs)
}

// TestLoadFile_Partial checks that a file holds only what it sets: unset
// blocks and pointers stay nil, so that merging it overrides nothing else.
func TestLoadFile_Partial(t *testing.T) {
	path := writeFile(t, t.TempDir(), "agent.hcl", "server {\n  bootstrap_expect = 3\n}\n")
	c, diags := LoadFile(path)
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	must.Eq(t, &Config{Server: &Server{BootstrapExpect: 3}, Files: []string{path}}, c)
}

func TestDefault(t *testing.T) {
	host, err := os.Hostname()
	must.NoError(t, err)
	want := &Config{
		Name:     host,
		BindAddr: "0.0.0.0",
		LogLevel: "INFO",
		LogJSON:  new(false),
		Driver:   DriverNomad,
		Ports:    &Ports{HTTP: 4680, Raft: 4681},
		Server: &Server{
			Enabled:               new(true),
			BootstrapExpect:       1,
			RetryInterval:         "15s",
			RetryIntervalDuration: 15 * time.Second,
			JobGCThreshold:        "4h", JobGCThresholdDuration: 4 * time.Hour,
			JobGCInterval: "5m", JobGCIntervalDuration: 5 * time.Minute,
			MaxJobSamples: 1024, MaxJobPlacements: 64, MaxEvents: 4096,
		},
		Scheduler: &Scheduler{Algorithm: "optimus", Interval: "60s", IntervalDuration: time.Minute, FallbackAlgorithm: "optimus", ProfileConfigs: new(6), ProfileSteps: 5,
			Straggler: &Straggler{Enabled: new(false), Ratio: 0.5, Window: "60s", WindowDuration: time.Minute, Reports: 1}},
		Nomad:  &Nomad{Address: "http://127.0.0.1:4646"},
		Consul: DefaultConsul(),
		Sim:    &Sim{Cluster: "4x4", Speed: 1, Seed: new(uint64(1))},
		Region: "global",
		TLS:    &TLS{HTTP: new(false), RPC: new(false), VerifyServerHostname: new(true), VerifyHTTPSClient: new(true)},
		ACL:    &ACL{Enabled: new(false)},
		Jobs:   &Jobs{Drivers: []string{"*"}, DeniedDrivers: []string{"raw_exec"}, Namespaces: []string{"*"}},
	}
	must.Eq(t, want, Default())
	must.Eq(t, "0.0.0.0:4680", Default().HTTPAddr())
	must.Eq(t, "0.0.0.0:4681", Default().RaftAddr())

	// Without a data_dir, only a dev agent is valid.
	must.ErrorContains(t, Default().Validate(), "data_dir: a server needs a directory")
	withDir := Default()
	withDir.DataDir = t.TempDir()
	must.NoError(t, withDir.Validate())
}

func TestDevDefault(t *testing.T) {
	want := Default()
	want.DevMode = true
	want.BindAddr = "127.0.0.1"
	want.Driver = DriverSim
	want.Server.BootstrapExpect = 1
	want.Jobs.DeniedDrivers = []string{}
	dev := DevDefault()
	must.Eq(t, want, dev)
	must.Eq(t, "", dev.DataDir)
	must.Eq(t, "INFO", dev.LogLevel)
	must.Eq(t, "127.0.0.1:4680", dev.HTTPAddr())
	must.NoError(t, dev.Validate())
}

func TestMerge(t *testing.T) {
	cases := []struct {
		name    string
		c, o    *Config
		want    *Config
		compare func(*Config) any // the part of the result to compare; nil: all
	}{
		{
			name: "set strings and numbers override",
			c:    &Config{Name: "a", DataDir: "/a", Ports: &Ports{HTTP: 1, Raft: 2}},
			o:    &Config{Name: "b", Ports: &Ports{Raft: 3}},
			want: (&Config{Name: "b", DataDir: "/a", Ports: &Ports{HTTP: 1, Raft: 3}}).Merge(nil),
		},
		{
			name: "zero values do not override",
			c:    Default(),
			o:    &Config{Server: &Server{}, Scheduler: &Scheduler{}, Sim: &Sim{}, Nomad: &Nomad{}},
			want: Default(),
		},
		{
			name: "pointers override with false and 0",
			c:    Default(),
			o: &Config{
				LogJSON: new(false),
				Server:  &Server{Enabled: new(false)},
				Sim:     &Sim{Seed: new(uint64(0))},
			},
			compare: func(c *Config) any { return []any{*c.LogJSON, *c.Server.Enabled, *c.Sim.Seed} },
			want:    &Config{LogJSON: new(false), Server: &Server{Enabled: new(false)}, Sim: &Sim{Seed: new(uint64(0))}},
		},
		{
			name:    "nil pointers do not override",
			c:       &Config{LogJSON: new(true), Server: &Server{Enabled: new(false)}},
			o:       &Config{Server: &Server{BootstrapExpect: 2}},
			compare: func(c *Config) any { return []any{*c.LogJSON, *c.Server.Enabled, c.Server.BootstrapExpect} },
			want:    &Config{LogJSON: new(true), Server: &Server{Enabled: new(false), BootstrapExpect: 2}},
		},
		{
			name:    "options merge key by key",
			c:       &Config{Scheduler: &Scheduler{Options: map[string]string{"a": "1", "b": "2"}}},
			o:       &Config{Scheduler: &Scheduler{Options: map[string]string{"b": "3", "c": "4"}}},
			compare: func(c *Config) any { return c.Scheduler.Options },
			want:    &Config{Scheduler: &Scheduler{Options: map[string]string{"a": "1", "b": "3", "c": "4"}}},
		},
		{
			name:    "non-empty retry_join replaces",
			c:       &Config{Server: &Server{RetryJoin: []string{"a:1", "b:1"}}},
			o:       &Config{Server: &Server{RetryJoin: []string{"c:1"}}},
			compare: func(c *Config) any { return c.Server.RetryJoin },
			want:    &Config{Server: &Server{RetryJoin: []string{"c:1"}}},
		},
		{
			name:    "empty retry_join keeps",
			c:       &Config{Server: &Server{RetryJoin: []string{"a:1"}}},
			o:       &Config{Server: &Server{RetryJoin: []string{}}},
			compare: func(c *Config) any { return c.Server.RetryJoin },
			want:    &Config{Server: &Server{RetryJoin: []string{"a:1"}}},
		},
		{
			name: "durations override by value and bring their string",
			c:    Default(),
			o: &Config{
				Server:    &Server{RetryInterval: "1m", RetryIntervalDuration: time.Minute},
				Scheduler: &Scheduler{IntervalDuration: 90 * time.Second}, // from a flag
			},
			compare: func(c *Config) any {
				return []any{c.Server.RetryInterval, c.Server.RetryIntervalDuration, c.Scheduler.Interval, c.Scheduler.IntervalDuration}
			},
			want: &Config{
				Server:    &Server{RetryInterval: "1m", RetryIntervalDuration: time.Minute},
				Scheduler: &Scheduler{Interval: "1m30s", IntervalDuration: 90 * time.Second},
			},
		},
		{
			name:    "dev mode and files accumulate",
			c:       &Config{DevMode: true, Files: []string{"a.hcl"}},
			o:       &Config{Files: []string{"b.hcl", "c.json"}},
			compare: func(c *Config) any { return []any{c.DevMode, c.Files} },
			want:    &Config{DevMode: true, Files: []string{"a.hcl", "b.hcl", "c.json"}},
		},
		{
			name: "nil on both sides",
			c:    nil,
			o:    nil,
			want: &Config{Ports: &Ports{}, Server: &Server{}, Scheduler: &Scheduler{}, Nomad: &Nomad{}, Consul: &Consul{}, Sim: &Sim{}, TLS: &TLS{}, ACL: &ACL{}, Jobs: &Jobs{}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.c.Merge(tc.o)
			if tc.compare == nil {
				must.Eq(t, tc.want, got)
				return
			}
			must.Eq(t, tc.compare(tc.want.Merge(nil)), tc.compare(got))
		})
	}
}

// TestMerge_NoAliasing checks that changing a merged config changes neither
// input.
func TestMerge_NoAliasing(t *testing.T) {
	c := Default()
	c.Scheduler.Options = map[string]string{"a": "1"}
	c.Server.RetryJoin = []string{"a:1"}
	o := &Config{LogJSON: new(true), Sim: &Sim{Seed: new(uint64(7))}}

	r := c.Merge(o)
	r.Scheduler.Options["a"] = "changed"
	r.Server.RetryJoin[0] = "changed:1"
	*r.LogJSON = false
	*r.Sim.Seed = 8
	*r.Server.Enabled = false
	r.Ports.HTTP = 1

	must.Eq(t, "1", c.Scheduler.Options["a"])
	must.Eq(t, "a:1", c.Server.RetryJoin[0])
	must.True(t, *o.LogJSON)
	must.Eq(t, 7, *o.Sim.Seed)
	must.True(t, *c.Server.Enabled)
	must.Eq(t, DefaultHTTPPort, c.Ports.HTTP)
}

func TestLoad_MergeOrder(t *testing.T) {
	dir := t.TempDir()
	first := writeFile(t, dir, "first.hcl", `
data_dir = "/first"
driver   = "sim"
server {
  bootstrap_expect = 3
  retry_join       = ["a:4680"]
}
scheduler {
  options = { a = "1", b = "1" }
}
`)
	second := writeFile(t, dir, "second.hcl", `
data_dir = "/second"
log_json = false
server {
  enabled = false
}
scheduler {
  options = { b = "2" }
}
`)

	t.Run("files in the order given", func(t *testing.T) {
		c, diags := Load(first, second)
		must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
		must.Eq(t, "/second", c.DataDir)
		must.Eq(t, "sim", c.Driver)
		must.False(t, *c.LogJSON)
		must.False(t, *c.Server.Enabled)
		must.Eq(t, 3, c.Server.BootstrapExpect)
		must.Eq(t, []string{"a:4680"}, c.Server.RetryJoin)
		must.Eq(t, map[string]string{"a": "1", "b": "2"}, c.Scheduler.Options)
		must.Eq(t, []string{first, second}, c.Files)

		c, diags = Load(second, first)
		must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
		must.Eq(t, "/first", c.DataDir)
		must.Eq(t, map[string]string{"a": "1", "b": "1"}, c.Scheduler.Options)
	})

	t.Run("a directory in lexical order", func(t *testing.T) {
		dir := t.TempDir()
		// Written out of order; read 10-b.hcl, 20-c.json, 30-a.hcl.
		writeFile(t, dir, "30-a.hcl", `data_dir = "/a"`+"\n")
		writeFile(t, dir, "10-b.hcl", `data_dir = "/b"`+"\nname = \"b\"\n")
		writeFile(t, dir, "20-c.json", `{"data_dir": "/c", "bind_addr": "10.0.0.9"}`)
		// Not configuration: skipped even though they would not parse.
		writeFile(t, dir, "notes.txt", "not hcl {")
		writeFile(t, dir, "40-d.hcl~", "not hcl {")
		writeFile(t, dir, ".#40-d.hcl", "not hcl {")
		writeFile(t, dir, "#40-d.hcl#", "not hcl {")
		must.NoError(t, os.Mkdir(filepath.Join(dir, "sub.hcl"), 0o755))

		c, diags := Load(dir)
		must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
		must.Eq(t, "/a", c.DataDir)
		must.Eq(t, "b", c.Name)
		must.Eq(t, "10.0.0.9", c.BindAddr)
		must.Eq(t, []string{
			filepath.Join(dir, "10-b.hcl"), filepath.Join(dir, "20-c.json"), filepath.Join(dir, "30-a.hcl"),
		}, c.Files)

		// A file after the directory overrides it.
		c, diags = Load(dir, first)
		must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
		must.Eq(t, "/first", c.DataDir)
		must.Eq(t, "b", c.Name)
	})

	t.Run("defaults then files then flags", func(t *testing.T) {
		loaded, diags := Load(first, second)
		must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
		flags := &Config{DataDir: "/flag"}
		c := Default().Merge(loaded).Merge(flags)
		must.Eq(t, "/flag", c.DataDir)
		must.Eq(t, 3, c.Server.BootstrapExpect)
		must.Eq(t, 15*time.Second, c.Server.RetryIntervalDuration) // default kept
		must.Eq(t, DefaultHTTPPort, c.Ports.HTTP)
		must.NoError(t, c.Validate())
	})

	t.Run("nothing to load", func(t *testing.T) {
		c, diags := Load(t.TempDir())
		must.SliceEmpty(t, diags)
		must.Eq(t, (&Config{}).Merge(nil), c)
		must.Eq(t, Default(), Default().Merge(c))
	})
}

func TestLoadFile_JSON(t *testing.T) {
	dir := t.TempDir()
	hclPath := writeFile(t, dir, "agent.hcl", `
data_dir = "/var/lib/caravan"
log_json = true
server {
  bootstrap_expect = 3
  retry_join       = ["10.0.0.2:4680"]
  retry_interval   = "20s"
}
scheduler {
  options = { young_factor = "0.95" }
}
sim {
  seed = 0
}
`)
	jsonPath := writeFile(t, dir, "agent.json", `{
  "data_dir": "/var/lib/caravan",
  "log_json": true,
  "server": {
    "bootstrap_expect": 3,
    "retry_join": ["10.0.0.2:4680"],
    "retry_interval": "20s"
  },
  "scheduler": { "options": { "young_factor": "0.95" } },
  "sim": { "seed": 0 }
}`)
	fromHCL, diags := LoadFile(hclPath)
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	fromJSON, diags := LoadFile(jsonPath)
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	must.Eq(t, 20*time.Second, fromJSON.Server.RetryIntervalDuration)
	fromJSON.Files = fromHCL.Files
	must.Eq(t, fromHCL, fromJSON)
}

// TestLoadFile_Invalid checks that each wrong value is a diagnostic at the
// value, saying what is wrong and what is allowed.
func TestLoadFile_Invalid(t *testing.T) {
	cases := []struct {
		name      string
		file      string // its extension picks the syntax
		src       string
		summary   string
		line, col int
		at        string   // the source text the subject starts with
		detail    []string // substrings of the detail
	}{
		{
			name: "unparseable duration", src: "server {\n  retry_interval = \"soon\"\n}\n",
			summary: "Invalid server.retry_interval", line: 2, col: 20, at: `"soon"`,
			detail: []string{`"soon" is not a duration`, `such as "15s"`},
		},
		{
			name: "zero duration", src: "scheduler {\n  interval = \"0s\"\n}\n",
			summary: "Invalid scheduler.interval", line: 2, col: 14, at: `"0s"`,
			detail: []string{`"0s" is not a positive duration`, `such as "60s"`},
		},
		{
			name: "negative profile count", src: "scheduler {\n  profile_configs = -2\n}\n",
			summary: "Invalid scheduler.profile_configs", line: 2, col: 21, at: `-2`,
			detail: []string{"-2 is negative", "0 to turn profiling off"},
		},
		{
			name: "straggler ratio", src: "scheduler {\n  straggler {\n    ratio = 2\n  }\n}\n",
			summary: "Invalid scheduler.straggler.ratio", line: 3, col: 13, at: `2`,
			detail: []string{"2 is not between 0 and 1"},
		},
		{
			name: "straggler window", src: "scheduler {\n  straggler {\n    window = \"soon\"\n  }\n}\n",
			summary: "Invalid scheduler.straggler.window", line: 3, col: 14, at: `"soon"`,
			detail: []string{`"soon" is not a duration`},
		},
		{
			name: "negative duration", src: "server {\n  retry_interval = \"-5s\"\n}\n",
			summary: "Invalid server.retry_interval", line: 2, col: 20, at: `"-5s"`,
			detail: []string{`"-5s" is not a positive duration`},
		},
		{
			name: "job gc threshold unparseable", src: "server {\n  job_gc_threshold = \"a while\"\n}\n",
			summary: "Invalid server.job_gc_threshold", line: 2, col: 22, at: `"a while"`,
			detail: []string{`"a while" is not a duration`},
		},
		{
			name: "job gc threshold zero", src: "server {\n  job_gc_threshold = \"0s\"\n}\n",
			summary: "Invalid server.job_gc_threshold", line: 2, col: 22, at: `"0s"`,
			detail: []string{`"0s" is not a duration from 1s to 8760h (a year)`, `such as "4h"`},
		},
		{
			name: "job gc threshold negative", src: "server {\n  job_gc_threshold = \"-1h\"\n}\n",
			summary: "Invalid server.job_gc_threshold", line: 2, col: 22, at: `"-1h"`,
			detail: []string{`"-1h" is not a duration from 1s`},
		},
		{
			name: "job gc threshold huge", src: "server {\n  job_gc_threshold = \"100000h\"\n}\n",
			summary: "Invalid server.job_gc_threshold", line: 2, col: 22, at: `"100000h"`,
			detail: []string{`"100000h" is not a duration from 1s to 8760h`},
		},
		{
			name: "job gc interval too short", src: "server {\n  job_gc_interval = \"10ms\"\n}\n",
			summary: "Invalid server.job_gc_interval", line: 2, col: 21, at: `"10ms"`,
			detail: []string{`"10ms" is not a duration from 1s to 24h`, `such as "5m"`},
		},
		{
			name: "max job samples zero", src: "server {\n  max_job_samples = 0\n}\n",
			summary: "Invalid server.max_job_samples", line: 2, col: 21, at: `0`,
			detail: []string{"0 is out of range", "from 64 to 65536"},
		},
		{
			name: "max job placements negative", src: "server {\n  max_job_placements = -3\n}\n",
			summary: "Invalid server.max_job_placements", line: 2, col: 24, at: `-3`,
			detail: []string{"-3 is out of range", "from 1 to 4096"},
		},
		{
			name: "max events huge", src: "server {\n  max_events = 100000000\n}\n",
			summary: "Invalid server.max_events", line: 2, col: 16, at: `100000000`,
			detail: []string{"100000000 is out of range", "from 64 to 1048576"},
		},
		{
			name: "unknown log level", src: "log_level = \"VERBOSE\"\n",
			summary: "Invalid log_level", line: 1, col: 13, at: `"VERBOSE"`,
			detail: []string{`"VERBOSE" is not a log level`, "TRACE, DEBUG, INFO, WARN, ERROR"},
		},
		{
			name: "unknown driver", src: "name = \"x\"\ndriver = \"docker\"\n",
			summary: "Invalid driver", line: 2, col: 10, at: `"docker"`,
			detail: []string{`"docker" is not a driver`, `"nomad" or "sim"`},
		},
		{
			name: "port too high", src: "ports {\n  http = 4680\n  raft = 70000\n}\n",
			summary: "Invalid ports.raft", line: 3, col: 10, at: "70000",
			detail: []string{"70000 is not a port", "from 1 to 65535"},
		},
		{
			name: "port zero", src: "ports {\n  http = 0\n}\n",
			summary: "Invalid ports.http", line: 2, col: 10, at: "0",
			detail: []string{"0 is not a port", "from 1 to 65535"},
		},
		{
			name: "bootstrap_expect zero", src: "server {\n  bootstrap_expect = 0\n}\n",
			summary: "Invalid server.bootstrap_expect", line: 2, col: 22, at: "0",
			detail: []string{"0 servers cannot elect a leader", "1 or more"},
		},
		{
			name: "speed zero", src: "sim {\n  speed = 0\n}\n",
			summary: "Invalid sim.speed", line: 2, col: 11, at: "0",
			detail: []string{"0 is not a speed", "greater than 0"},
		},
		{
			name: "speed negative", src: "sim {\n  speed = -2.5\n}\n",
			summary: "Invalid sim.speed", line: 2, col: 11, at: "-2.5",
			detail: []string{"-2.5 is not a speed", "greater than 0"},
		},
		{
			name: "cluster without x", src: "sim {\n  cluster = \"4by4\"\n}\n",
			summary: "Invalid sim.cluster", line: 2, col: 13, at: `"4by4"`,
			detail: []string{`group "4by4" is not NODESxGPUS (16x4) or NODESxTYPE[:GPUS] (6xt4)`},
		},
		{
			name: "cluster with no GPUs", src: "sim {\n  cluster = \"4x0\"\n}\n",
			summary: "Invalid sim.cluster", line: 2, col: 13, at: `"4x0"`,
			detail: []string{`group 4x0 has nodes without GPUs`, `"4x4"`},
		},
		{
			name: "cluster of an unknown GPU type", src: "sim {\n  speed = 1\n  cluster = \"6xt4,2xh100\"\n}\n",
			summary: "Invalid sim.cluster", line: 3, col: 13, at: `"6xt4,2xh100"`,
			detail: []string{`group "2xh100": "h100" is neither a GPU count nor a GPU type`, "a100, quad, rtx, t4"},
		},
		{
			name: "retry_join entry without port",
			src:  "server {\n  retry_join = [\"10.0.0.2:4680\", \"10.0.0.3\"]\n}\n",
			// The second element, not the list.
			summary: "Invalid server.retry_join[1]", line: 2, col: 34, at: `"10.0.0.3"`,
			detail: []string{`"10.0.0.3" is not host:port`, "missing port", `such as "10.0.0.2:4680"`},
		},
		{
			name:    "retry_join entry with a bad port",
			src:     "server {\n  retry_join = [\n    \"a:http\",\n  ]\n}\n",
			summary: "Invalid server.retry_join[0]", line: 3, col: 5, at: `"a:http"`,
			detail: []string{`"a:http" is not host:port`, `port "http" is not a number from 1 to 65535`},
		},
		{
			name:    "retry_join Consul entry without a service",
			src:     "server {\n  retry_join = [\"consul://\"]\n}\n",
			summary: "Invalid server.retry_join[0]", line: 2, col: 17, at: `"consul://"`,
			detail: []string{`"consul://" does not name a Consul service`, `"consul://caravan"`},
		},
		{
			name:    "consul service_name with a space",
			src:     "consul {\n  service_name = \"my caravan\"\n}\n",
			summary: "Invalid consul.service_name", line: 2, col: 18, at: `"my caravan"`,
			detail: []string{`"my caravan" is not a Consul service name`},
		},
		{
			name: "bind_addr not an IP", src: "bind_addr = \"localhost\"\n",
			summary: "Invalid bind_addr", line: 1, col: 13, at: `"localhost"`,
			detail: []string{`"localhost" is not an IP address`, `"0.0.0.0"`},
		},
		{
			name: "relative data_dir", src: "data_dir = \"data\"\n",
			summary: "Invalid data_dir", line: 1, col: 12, at: `"data"`,
			detail: []string{`"data" is a relative path`, "absolute path"},
		},
		{
			name: "nomad address without scheme", src: "nomad {\n  address = \"127.0.0.1:4646\"\n}\n",
			summary: "Invalid nomad.address", line: 2, col: 13, at: `"127.0.0.1:4646"`,
			detail: []string{`"127.0.0.1:4646" is not a URL`, `"http://127.0.0.1:4646"`},
		},
		{
			name: "relative checkpoint_dir", src: "nomad {\n  checkpoint_dir = \"ckpt\"\n}\n",
			summary: "Invalid nomad.checkpoint_dir", line: 2, col: 20, at: `"ckpt"`,
			detail: []string{`"ckpt" is a relative path`, "every Nomad client sees"},
		},
		{
			name: "coordinator_addr without a port", src: "nomad {\n  coordinator_addr = \"localhost\"\n}\n",
			summary: "Invalid nomad.coordinator_addr", line: 2, col: 22, at: `"localhost"`,
			detail: []string{`"localhost" is not host:port`, `"127.0.0.1:9190"`},
		},
		{
			name: "batch_restart_ratio below 1", src: "nomad {\n  batch_restart_ratio = 0.8\n}\n",
			summary: "Invalid nomad.batch_restart_ratio", line: 2, col: 25, at: `0.8`,
			detail: []string{"0.8 is not a ratio between 1 and 1000", "1.25"},
		},
		{
			name: "usage_rate not positive", src: "nomad {\n  usage_rate = -1\n}\n",
			summary: "Invalid nomad.usage_rate", line: 2, col: 16, at: `-1`,
			detail: []string{"-1 is not a rate between 0 and 1000", "4"},
		},
		{
			name: "call_timeout not a duration", src: "nomad {\n  call_timeout = \"soon\"\n}\n",
			summary: "Invalid nomad.call_timeout", line: 2, col: 18, at: `"soon"`,
		},
		{
			name: "empty algorithm", src: "scheduler {\n  algorithm = \"\"\n}\n",
			summary: "Invalid scheduler.algorithm", line: 2, col: 15, at: `""`,
			detail: []string{"No algorithm is named", `"optimus"`},
		},
		{
			name: "wrong type is reported once", src: "server {\n  bootstrap_expect = \"three\"\n}\n",
			summary: "Unsuitable value type", line: 2, col: 23, at: `three"`, // HCL points inside the quotes
			detail: []string{"a number is required"},
		},
		{
			name: "negative seed is reported once", src: "sim {\n  seed = -1\n}\n",
			summary: "Unsuitable value type", line: 2, col: 10, at: "-1",
		},
		{
			name: "duplicate block is not checked further", src: "ports {}\nports {\n  http = 0\n}\n",
			summary: "Duplicate ports block", line: 2, col: 1, at: "ports {",
			detail: []string{"Only one ports block is allowed"},
		},
		{
			name: "JSON", file: "agent.json", src: "{\n  \"ports\": {\n    \"raft\": 70000\n  }\n}\n",
			summary: "Invalid ports.raft", line: 3, col: 13, at: "70000",
			detail: []string{"70000 is not a port"},
		},
		{
			name: "JSON list element", file: "agent.json",
			src:     "{\"server\": {\"retry_join\": [\"a:1\", \"b\"]}}",
			summary: "Invalid server.retry_join[1]", line: 1, col: 35, at: `"b"`,
			detail: []string{`"b" is not host:port`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.file
			if file == "" {
				file = "agent.hcl"
			}
			path := writeFile(t, t.TempDir(), file, tc.src)
			c, diags := LoadFile(path)
			must.Nil(t, c)
			must.SliceLen(t, 1, diags, must.Sprint(diags.Error()))
			d := diags[0]
			must.Eq(t, hcl.DiagError, d.Severity)
			must.Eq(t, tc.summary, d.Summary)
			must.NotNil(t, d.Subject)
			must.Eq(t, path, d.Subject.Filename)
			must.Eq(t, tc.line, d.Subject.Start.Line, must.Sprint(d.Error()))
			must.Eq(t, tc.col, d.Subject.Start.Column, must.Sprint(d.Error()))
			must.StrHasPrefix(t, tc.at, tc.src[d.Subject.Start.Byte:])
			for _, s := range tc.detail {
				must.StrContains(t, d.Detail, s)
			}
			if strings.HasPrefix(d.Summary, "Invalid ") {
				must.StrHasSuffix(t, ".", d.Detail)
			}
		})
	}
}

// TestLoadFile_AllErrors checks that every mistake of a file is reported,
// HCL's and the package's, in source order.
func TestLoadFile_AllErrors(t *testing.T) {
	src := `name      = "x"
log_level = "loud"
colour    = "blue"
ports {
  http = 4680
  raft = -1
}
server {
  bootstrap_expect = 0
  retry_join       = ["ok:4680", "bad", ":4680"]
  retry_interval   = "often"
}
scheduler {
  interval = "60"
}
telemetry {
}
sim {
  cluster = "4x"
  speed   = 0
}
`
	path := writeFile(t, t.TempDir(), "agent.hcl", src)
	c, diags := LoadFile(path)
	must.Nil(t, c)
	must.Eq(t, []string{
		"2:13 Invalid log_level",
		"3:1 Unsupported argument",
		"6:10 Invalid ports.raft",
		"9:22 Invalid server.bootstrap_expect",
		"10:34 Invalid server.retry_join[1]",
		"10:41 Invalid server.retry_join[2]",
		"11:22 Invalid server.retry_interval",
		"14:14 Invalid scheduler.interval",
		"16:1 Unsupported block type",
		"19:13 Invalid sim.cluster",
		"20:13 Invalid sim.speed",
	}, positions(diags))
}

// TestLoad_ErrorsOfEveryFile checks that Load reports the errors of all the
// files, not only the first bad one, and returns no Config.
func TestLoad_ErrorsOfEveryFile(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.hcl", "driver = \"k8s\"\n")
	writeFile(t, dir, "b.hcl", "data_dir = \"/ok\"\n")
	b := writeFile(t, dir, "c.json", "{\"ports\": {\"http\": 0}}")
	d := writeFile(t, t.TempDir(), "d.hcl", "server {\n  bootstrap_expect = -1\n}\n")
	missing := filepath.Join(dir, "missing.hcl")

	c, diags := Load(dir, d, missing)
	must.Nil(t, c)
	must.SliceLen(t, 4, diags, must.Sprint(diags.Error()))
	must.Eq(t, a, diags[0].Subject.Filename)
	must.Eq(t, "Invalid driver", diags[0].Summary)
	must.Eq(t, b, diags[1].Subject.Filename)
	must.Eq(t, "Invalid ports.http", diags[1].Summary)
	must.Eq(t, d, diags[2].Subject.Filename)
	must.Eq(t, "Invalid server.bootstrap_expect", diags[2].Summary)
	must.Nil(t, diags[3].Subject)
	must.Eq(t, "Failed to read configuration", diags[3].Summary)
	must.StrContains(t, diags[3].Detail, "missing.hcl")
}

func TestLoadFile_Unreadable(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"missing file": filepath.Join(dir, "missing.hcl"),
		"syntax error": writeFile(t, dir, "bad.hcl", "server {\n"),
		"bad JSON":     writeFile(t, dir, "bad.json", "{\"server\": "),
	}
	for name, path := range cases {
		t.Run(name, func(t *testing.T) {
			c, diags := LoadFile(path)
			must.Nil(t, c)
			must.True(t, diags.HasErrors())
		})
	}
}

func TestLoader_Files(t *testing.T) {
	path := writeFile(t, t.TempDir(), "agent.hcl", "driver = \"docker\"\n")
	l := NewLoader()
	_, diags := l.LoadFile(path)
	must.True(t, diags.HasErrors())
	var b strings.Builder
	w := hcl.NewDiagnosticTextWriter(&b, l.Files(), 80, false)
	must.NoError(t, w.WriteDiagnostics(diags))
	must.StrContains(t, b.String(), "on "+path+" line 1")
	must.StrContains(t, b.String(), `driver = "docker"`)
}

func TestValidate(t *testing.T) {
	valid := func() *Config {
		c := Default()
		c.DataDir = "/var/lib/caravan"
		return c
	}
	cases := []struct {
		name string
		c    func() *Config
		want []string // one substring per error; none: valid
	}{
		{name: "defaults with a data_dir", c: valid},
		{name: "dev defaults", c: DevDefault},
		{
			name: "dev with a data_dir and lower-case level",
			c: func() *Config {
				c := DevDefault()
				c.DataDir = "/tmp/caravan"
				c.LogLevel = "trace"
				return c
			},
		},
		{
			name: "data_dir required outside dev",
			c:    Default,
			want: []string{"data_dir: a server needs a directory for its state"},
		},
		{
			name: "same ports after merging",
			c:    func() *Config { return valid().Merge(&Config{Ports: &Ports{Raft: DefaultHTTPPort}}) },
			want: []string{"ports: http and raft are both 4680; they must differ"},
		},
		{
			name: "interval set to zero by hand",
			c: func() *Config {
				c := valid()
				c.Scheduler.Interval, c.Scheduler.IntervalDuration = "", 0
				c.Server.RetryIntervalDuration = -time.Second
				c.Server.RetryInterval = ""
				return c
			},
			want: []string{
				`server.retry_interval: "-1s" is not a positive duration`,
				`scheduler.interval: "0s" is not a positive duration`,
			},
		},
		{
			name: "dev mode with several servers",
			c:    func() *Config { return DevDefault().Merge(&Config{Server: &Server{BootstrapExpect: 3}}) },
			want: []string{"server.bootstrap_expect: dev mode runs a single server, so it must be 1, not 3"},
		},
		{
			name: "no name",
			c:    func() *Config { c := valid(); c.Name = ""; return c },
			want: []string{"name: the node name is empty"},
		},
		{
			name: "flags out of range are caught too",
			c: func() *Config {
				return valid().Merge(&Config{
					LogLevel: "loud",
					Driver:   "docker",
					Ports:    &Ports{HTTP: 70000},
					Server:   &Server{BootstrapExpect: -1, RetryJoin: []string{"nohost"}},
					Sim:      &Sim{Cluster: "big", Speed: -1},
				})
			},
			want: []string{
				`log_level: "loud" is not a log level`,
				`driver: "docker" is not a driver`,
				"ports.http: 70000 is not a port",
				"server.bootstrap_expect: -1 servers cannot elect a leader",
				`server.retry_join[0]: "nohost" is not host:port`,
				`sim.cluster: cluster "big": group "big" is not NODESxGPUS`,
				"sim.speed: -1 is not a speed",
			},
		},
		{
			name: "empty blocks are checked",
			c:    func() *Config { return &Config{Name: "n", DataDir: "/d"} },
			want: []string{
				`bind_addr: "" is not an IP address`,
				`log_level: "" is not a log level`,
				`driver: "" is not a driver`,
				"ports.http: 0 is not a port",
				"ports.raft: 0 is not a port",
				"server.bootstrap_expect: 0 servers",
				"server.retry_interval:",
				`server.job_gc_threshold: "0s" is not a duration from 1s to 8760h`,
				`server.job_gc_interval: "0s" is not a duration from 1s to 24h`,
				"server.max_job_samples: 0 is out of range; use a number from 64 to 65536",
				"server.max_job_placements: 0 is out of range; use a number from 1 to 4096",
				"server.max_events: 0 is out of range; use a number from 64 to 1048576",
				"scheduler.algorithm: no algorithm is named",
				"scheduler.interval:",
				`nomad.address: "" is not a URL`,
				"sim.cluster: cluster is empty; want NODESxGPUS",
				"sim.speed: 0 is not a speed",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c().Validate()
			if len(tc.want) == 0 {
				must.NoError(t, err)
				return
			}
			must.Error(t, err)
			lines := strings.Split(err.Error(), "\n")
			must.SliceLen(t, len(tc.want), lines, must.Sprint(err))
			for i, want := range tc.want {
				must.StrContains(t, lines[i], want)
			}
		})
	}
}

func TestBlockValidate(t *testing.T) {
	must.NoError(t, DefaultPorts().Validate())
	must.NoError(t, DefaultServer().Validate())
	must.NoError(t, DefaultScheduler().Validate())
	must.NoError(t, DefaultNomad().Validate())
	must.NoError(t, DefaultConsul().Validate())
	must.NoError(t, DefaultSim().Validate())
	must.EqError(t, (&Ports{HTTP: 1, Raft: 0}).Validate(), "raft: 0 is not a port; use a number from 1 to 65535")
	must.ErrorContains(t, (&Server{BootstrapExpect: 1, RetryIntervalDuration: time.Second, RetryJoin: []string{"[::1]:4680", "x:0"}}).Validate(),
		`retry_join[1]: "x:0" is not host:port (port "0" is not a number from 1 to 65535)`)
}

func TestAddrs(t *testing.T) {
	cases := []struct {
		bind, http, raft string
	}{
		{"0.0.0.0", "0.0.0.0:4680", "0.0.0.0:4681"},
		{"::1", "[::1]:4680", "[::1]:4681"},
	}
	for _, tc := range cases {
		t.Run(tc.bind, func(t *testing.T) {
			c := Default().Merge(&Config{BindAddr: tc.bind})
			must.Eq(t, tc.http, c.HTTPAddr())
			must.Eq(t, tc.raft, c.RaftAddr())
		})
	}
}

// TestParseCluster: sim.cluster takes `caravan sim -cluster`'s shapes,
// NODESxGPUS and typed groups, and refuses nodes without GPUs.
func TestParseCluster(t *testing.T) {
	cases := []struct {
		in   string
		want []sim.NodeGroup
		err  string
	}{
		{in: "4x4", want: []sim.NodeGroup{{Nodes: 4, GPUsPerNode: 4}}},
		{in: "128x8", want: []sim.NodeGroup{{Nodes: 128, GPUsPerNode: 8}}},
		{in: "6xt4,3xrtx,2xa100", want: []sim.NodeGroup{
			{Nodes: 6, GPUsPerNode: 4, Type: "t4"}, {Nodes: 3, GPUsPerNode: 8, Type: "rtx"}, {Nodes: 2, GPUsPerNode: 8, Type: "a100"}}},
		{in: "6xt4:2", want: []sim.NodeGroup{{Nodes: 6, GPUsPerNode: 2, Type: "t4"}}},
		{in: "2xA100,1x4", want: []sim.NodeGroup{{Nodes: 2, GPUsPerNode: 8, Type: "a100"}, {Nodes: 1, GPUsPerNode: 4}}},
		{in: "4x0", err: `cluster "4x0": group 4x0 has nodes without GPUs; give every node at least 1, such as "4x4"`},
		{in: "2xt4,1x0", err: `cluster "2xt4,1x0": group 1x0 has nodes without GPUs; give every node at least 1, such as "4x4"`},
		{in: "0x4", err: `cluster "0x4": group "0x4": node count "0" is not a positive number`},
		{in: "4by4", err: `cluster "4by4": group "4by4" is not NODESxGPUS (16x4) or NODESxTYPE[:GPUS] (6xt4)`},
		{in: "4xh100", err: `cluster "4xh100": group "4xh100": "h100" is neither a GPU count nor a GPU type; the types are a100, quad, rtx, t4`},
		{in: "6xt4:0", err: `cluster "6xt4:0": group "6xt4:0": GPUs per node "0" is not a positive number`},
		{in: "4x-4", err: `cluster "4x-4": group "4x-4": GPUs per node -4 is negative`},
		{in: "", err: "cluster is empty; want NODESxGPUS (16x4) or groups NODESxTYPE[:GPUS] (6xt4,3xrtx,2xa100)"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			spec, err := (&Sim{Cluster: tc.in}).ParseCluster()
			if tc.err != "" {
				must.EqError(t, err, tc.err)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, spec.Groups)
		})
	}
}

// TestREADME checks that the examples of README.md load and that its
// example of every key holds the defaults it claims.
func TestREADME(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	must.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```(hcl|json)\n(.*?)```").FindAllSubmatch(readme, -1)
	must.SliceLen(t, 3, blocks) // every key, JSON, and the jobs block that allows raw_exec
	dir := t.TempDir()
	var loaded []*Config
	for i, b := range blocks {
		path := writeFile(t, dir, fmt.Sprintf("example%d.%s", i, b[1]), string(b[2]))
		c, diags := LoadFile(path)
		must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
		loaded = append(loaded, c)
	}

	// The HCL example holds the defaults but for the keys it marks.
	want := Default().Merge(&Config{
		Name:    "server-1",
		DataDir: "/var/lib/caravan",
		Server: &Server{
			BootstrapExpect: 3,
			RetryJoin:       []string{"10.0.0.2:4680", "10.0.0.3:4680"},
		},
		Scheduler: &Scheduler{Options: map[string]string{"young_factor": "0.95"}},
		PluginDir: "/opt/caravan/plugins",
		Plugins: []*Plugin{{Name: "random", Path: "random", Config: map[string]string{"seed": "7"},
			Checksum: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}},
		TLS: &TLS{CAFile: "/etc/caravan/caravan-agent-ca.pem", CertFile: "/etc/caravan/global-server-caravan.pem",
			KeyFile: "/etc/caravan/global-server-caravan-key.pem"},
	})
	want.Files = loaded[0].Files
	must.Eq(t, want, Default().Merge(loaded[0]))
	must.NoError(t, want.Validate())
}

// positions renders diagnostics as "line:col summary".
func positions(diags hcl.Diagnostics) []string {
	out := make([]string, len(diags))
	for i, d := range diags {
		out[i] = fmt.Sprintf("%d:%d %s", d.Subject.Start.Line, d.Subject.Start.Column, d.Summary)
	}
	return out
}

// TestPlugins: plugin blocks load by name, a later file's block of the same
// name replaces the earlier one, paths resolve under plugin_dir, and a bad
// checksum is a diagnostic at its value.
func TestPlugins(t *testing.T) {
	dir := t.TempDir()
	first := writeFile(t, dir, "first.hcl", `
plugin_dir = "/opt/caravan/plugins"
plugin "random" {
  config = { seed = 7 }
}
plugin "mine" {
  path     = "/usr/local/bin/mine"
  checksum = "`+strings.Repeat("ab", 32)+`"
}
`)
	second := writeFile(t, dir, "second.hcl", `
plugin "random" {
  path   = "random-v2"
  config = { seed = 8 }
}
`)
	c, diags := Load(first, second)
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	must.SliceLen(t, 2, c.Plugins)
	must.Eq(t, &Plugin{Name: "random", Path: "random-v2", Config: map[string]string{"seed": "8"}}, c.Plugins[0])
	must.Eq(t, "mine", c.Plugins[1].Name)
	path, err := c.PluginPath(c.Plugins[0])
	must.NoError(t, err)
	must.Eq(t, "/opt/caravan/plugins/random-v2", path)
	path, err = c.PluginPath(c.Plugins[1])
	must.NoError(t, err)
	must.Eq(t, "/usr/local/bin/mine", path)
	must.NoError(t, Default().Merge(c).Merge(&Config{DataDir: "/d"}).Validate())

	noDir := Default().Merge(&Config{DataDir: "/d", Plugins: []*Plugin{{Name: "random"}}})
	must.ErrorContains(t, noDir.Validate(), `plugin.random.path: "random" is not an absolute path and plugin_dir is not set`)

	bad := writeFile(t, dir, "bad.hcl", "plugin \"x\" {\n  checksum = \"abc\"\n}\n")
	_, diags = LoadFile(bad)
	must.Eq(t, []string{"2:14 Invalid plugin.x.checksum"}, positions(diags))
	must.StrContains(t, diags[0].Detail, "not a SHA-256 in hex")
}

func TestACL_Config(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "agent.hcl", `acl {
  enabled      = true
  server_token = "short"
}
server {
  bootstrap_expect = 3
}
`)
	_, diags := LoadFile(path)
	must.True(t, diags.HasErrors())
	must.StrContains(t, diags.Error(), "server_token")

	on := &Config{Name: "n", DevMode: true, ACL: &ACL{Enabled: new(true)}}
	must.NoError(t, Default().Merge(on).Validate(), must.Sprint("a single server needs no server token"))
	c := Default().Merge(&Config{Name: "n", DataDir: "/tmp", ACL: &ACL{Enabled: new(true)}, Server: &Server{BootstrapExpect: 3}})
	err := c.Validate()
	must.ErrorContains(t, err, "acl.server_token: servers that join each other")
	c = c.Merge(&Config{ACL: &ACL{ServerToken: "0123456789abcdef0123", ReportToken: "r"}})
	must.NoError(t, c.Validate())
	must.True(t, c.ACL.On())
	must.False(t, Default().ACL.On())
	must.Eq(t, "r", c.Merge(&Config{ACL: &ACL{Enabled: new(false)}}).ACL.ReportToken)
}
