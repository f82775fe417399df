package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/drivers/sim"
)

// Ports is the ports block: the ports the agent listens on, at
// Config.BindAddr. Zero means unset.
type Ports struct {
	// HTTP serves the HTTP API, which servers also use to join each other.
	// Default DefaultHTTPPort (4680).
	HTTP int `hcl:"http,optional"`
	// Raft carries Raft replication between servers. Default
	// DefaultRaftPort (4681).
	Raft int `hcl:"raft,optional"`
}

// DefaultPorts returns the default ports block.
func DefaultPorts() *Ports { return &Ports{HTTP: DefaultHTTPPort, Raft: DefaultRaftPort} }

// Merge returns a copy of p with the ports set in o overriding it. Either
// may be nil; the result is not.
func (p *Ports) Merge(o *Ports) *Ports {
	r := copyOf(p)
	if o != nil {
		r.HTTP = mergeNumber(r.HTTP, o.HTTP)
		r.Raft = mergeNumber(r.Raft, o.Raft)
	}
	return r
}

// Validate checks that both ports are in 1–65535. Config.Validate also
// checks that they differ.
func (p *Ports) Validate() error { return joinProblems(p.problems()) }

func (p *Ports) problems() []problem {
	if p == nil {
		return nil
	}
	var ps []problem
	for _, port := range []struct {
		name string
		v    int
	}{{"http", p.HTTP}, {"raft", p.Raft}} {
		if port.v < 1 || port.v > 65535 {
			ps = append(ps, problemf(port.name, "%d is not a port; use a number from 1 to 65535", port.v))
		}
	}
	return ps
}

// Server is the server block: how the agent takes part in the Raft cluster
// of Caravan servers.
type Server struct {
	// Enabled runs the server. nil means unset; Default sets true, and for
	// now every Caravan agent is a server.
	Enabled *bool `hcl:"enabled,optional"`
	// BootstrapExpect is how many servers must join before the cluster
	// elects its first leader. At least 1; default 1.
	BootstrapExpect int `hcl:"bootstrap_expect,optional"`
	// RetryJoin lists other servers' HTTP addresses, each host:port, to join
	// until one answers; "consul://<service>" stands for the healthy
	// instances of a Consul service. A non-empty list replaces the earlier
	// one in Merge.
	RetryJoin []string `hcl:"retry_join,optional"`
	// RetryInterval is the wait between join attempts as written, such as
	// "15s"; RetryIntervalDuration is its value, which is what the agent and
	// Merge use. Code building a Config by hand sets the Duration.
	RetryInterval         string `hcl:"retry_interval,optional"`
	RetryIntervalDuration time.Duration

	// JobGCThreshold is how long a job stays in the state after it ended
	// (complete, failed, stopped or rejected) before the leader's job
	// garbage collector purges it with its versions, samples, models and
	// placement history, as Nomad's job_gc_threshold. As written, such as
	// "4h"; JobGCThresholdDuration is its value. Default 4h.
	JobGCThreshold         string `hcl:"job_gc_threshold,optional"`
	JobGCThresholdDuration time.Duration
	// JobGCInterval is how often the collector looks for such jobs, as
	// written, such as "5m"; JobGCIntervalDuration is its value. Default
	// 5m.
	JobGCInterval         string `hcl:"job_gc_interval,optional"`
	JobGCIntervalDuration time.Duration
	// MaxJobSamples, MaxJobPlacements and MaxEvents bound what the
	// replicated state keeps: the samples of each job (older ones are
	// thinned), the entries of each job's placement history and the
	// cluster's events (older ones are dropped). The leader replicates
	// its values, so every server keeps the same. Defaults 1024, 64 and
	// 4096.
	MaxJobSamples    int `hcl:"max_job_samples,optional"`
	MaxJobPlacements int `hcl:"max_job_placements,optional"`
	MaxEvents        int `hcl:"max_events,optional"`
}

// Bounds of the server block's retention options: below the minima, fits
// lack samples and operators lack history; above the maxima, one job or
// the event log holds more memory on every server than it is worth.
const (
	minJobGCThreshold = time.Second
	maxJobGCThreshold = 365 * 24 * time.Hour
	minJobGCInterval  = time.Second
	maxJobGCInterval  = 24 * time.Hour
	minJobSamples     = 64
	maxJobSamples     = 1 << 16
	minJobPlacements  = 1
	maxJobPlacements  = 4096
	minEvents         = 64
	maxEvents         = 1 << 20
)

// DefaultServer returns the default server block.
func DefaultServer() *Server {
	return &Server{
		Enabled:                new(true),
		BootstrapExpect:        1,
		RetryInterval:          "15s",
		RetryIntervalDuration:  15 * time.Second,
		JobGCThreshold:         "4h",
		JobGCThresholdDuration: 4 * time.Hour,
		JobGCInterval:          "5m",
		JobGCIntervalDuration:  5 * time.Minute,
		MaxJobSamples:          1024,
		MaxJobPlacements:       64,
		MaxEvents:              4096,
	}
}

// Merge returns a copy of s with the fields set in o overriding it. Either
// may be nil; the result is not.
func (s *Server) Merge(o *Server) *Server {
	r := copyOf(s)
	r.Enabled = mergePtr(r.Enabled, nil)
	r.RetryJoin = slices.Clone(r.RetryJoin)
	if o == nil {
		return r
	}
	r.Enabled = mergePtr(r.Enabled, o.Enabled)
	r.BootstrapExpect = mergeNumber(r.BootstrapExpect, o.BootstrapExpect)
	if len(o.RetryJoin) > 0 {
		r.RetryJoin = slices.Clone(o.RetryJoin)
	}
	r.RetryInterval, r.RetryIntervalDuration = mergeDuration(
		r.RetryInterval, r.RetryIntervalDuration, o.RetryInterval, o.RetryIntervalDuration)
	r.JobGCThreshold, r.JobGCThresholdDuration = mergeDuration(
		r.JobGCThreshold, r.JobGCThresholdDuration, o.JobGCThreshold, o.JobGCThresholdDuration)
	r.JobGCInterval, r.JobGCIntervalDuration = mergeDuration(
		r.JobGCInterval, r.JobGCIntervalDuration, o.JobGCInterval, o.JobGCIntervalDuration)
	r.MaxJobSamples = mergeNumber(r.MaxJobSamples, o.MaxJobSamples)
	r.MaxJobPlacements = mergeNumber(r.MaxJobPlacements, o.MaxJobPlacements)
	r.MaxEvents = mergeNumber(r.MaxEvents, o.MaxEvents)
	return r
}

// Validate checks bootstrap_expect, each retry_join address,
// retry_interval, and the retention options against their bounds.
func (s *Server) Validate() error { return joinProblems(s.problems()) }

func (s *Server) problems() []problem {
	if s == nil {
		return nil
	}
	var ps []problem
	if s.BootstrapExpect < 1 {
		ps = append(ps, problemf("bootstrap_expect", "%d servers cannot elect a leader; use 1 or more (1 for a single server)", s.BootstrapExpect))
	}
	for i, addr := range s.RetryJoin {
		if svc, ok := strings.CutPrefix(addr, "consul://"); ok {
			if !consulService.MatchString(svc) {
				ps = append(ps, problemf(fmt.Sprintf("retry_join[%d]", i),
					"%q does not name a Consul service; use one such as \"consul://caravan\"", addr))
			}
			continue
		}
		if err := checkHostPort(addr); err != nil {
			ps = append(ps, problemf(fmt.Sprintf("retry_join[%d]", i),
				"%q is not host:port (%v); give a server's HTTP address, such as \"10.0.0.2:%d\", or a Consul service, \"consul://caravan\"", addr, err, DefaultHTTPPort))
		}
	}
	if s.RetryIntervalDuration <= 0 {
		ps = append(ps, problemf("retry_interval", "%s is not a positive duration; use one such as \"15s\"", durationString(s.RetryInterval, s.RetryIntervalDuration)))
	}
	if d := s.JobGCThresholdDuration; d < minJobGCThreshold || d > maxJobGCThreshold {
		ps = append(ps, problemf("job_gc_threshold", "%s is not a duration from 1s to 8760h (a year); use one such as \"4h\" (how long an ended job is kept)",
			durationString(s.JobGCThreshold, d)))
	}
	if d := s.JobGCIntervalDuration; d < minJobGCInterval || d > maxJobGCInterval {
		ps = append(ps, problemf("job_gc_interval", "%s is not a duration from 1s to 24h; use one such as \"5m\"",
			durationString(s.JobGCInterval, d)))
	}
	for _, b := range []struct {
		key      string
		v        int
		min, max int
		what     string
	}{
		{"max_job_samples", s.MaxJobSamples, minJobSamples, maxJobSamples, "samples kept per job, such as 1024"},
		{"max_job_placements", s.MaxJobPlacements, minJobPlacements, maxJobPlacements, "placement history entries kept per job, such as 64"},
		{"max_events", s.MaxEvents, minEvents, maxEvents, "events kept, such as 4096"},
	} {
		if b.v < b.min || b.v > b.max {
			ps = append(ps, problemf(b.key, "%d is out of range; use a number from %d to %d of %s", b.v, b.min, b.max, b.what))
		}
	}
	return ps
}

// Scheduler is the scheduler block: the algorithm the leader plans with and
// how often.
type Scheduler struct {
	// Algorithm names the scheduling algorithm. Default "optimus". The
	// agent, not this package, checks that the algorithm exists.
	Algorithm string `hcl:"algorithm,optional"`
	// Interval is the time between scheduling rounds as written, such as
	// "60s"; IntervalDuration is its value, which is what the agent and
	// Merge use. Code building a Config by hand sets the Duration.
	Interval         string `hcl:"interval,optional"`
	IntervalDuration time.Duration
	// Options are the algorithm's settings, passed to it as strings. Merge
	// merges them key by key.
	Options map[string]string `hcl:"options,optional"`
	// FallbackAlgorithm plans a round when the algorithm in force fails
	// and no other has worked yet. Default "optimus".
	FallbackAlgorithm string `hcl:"fallback_algorithm,optional"`
	// ProfileConfigs is how many (ps, workers) configurations a new job
	// without speed priors is profiled at before a model-driven algorithm
	// sizes it; 0 turns profiling off. nil means unset; default 6.
	ProfileConfigs *int `hcl:"profile_configs,optional"`
	// ProfileSteps is how many samples each configuration needs when the
	// driver profiles by running the job there (Nomad). Default 5.
	ProfileSteps int `hcl:"profile_steps,optional"`
	// Straggler is straggler handling, for every algorithm.
	Straggler *Straggler `hcl:"straggler,block"`
}

// Straggler is the scheduler's straggler block: a worker or parameter
// server whose speed stays below Ratio times the median of its role's for
// Window, and in Reports committed usage reports, is moved to another
// node (planner/straggler).
type Straggler struct {
	// Enabled turns straggler handling on. Default false.
	Enabled *bool `hcl:"enabled,optional"`
	// Ratio is the share of the median speed below which a worker is
	// slow. Default 0.5 (Optimus §5.2).
	Ratio float64 `hcl:"ratio,optional"`
	// Window is how long a worker must stay slow, as written ("60s");
	// WindowDuration is its value. Default 60s.
	Window         string `hcl:"window,optional"`
	WindowDuration time.Duration
	// Reports is how many committed usage reports at least it must be
	// slow in. Default 1: a report stands until the next commit, which
	// comes once any task's usage moves by 5%.
	Reports int `hcl:"reports,optional"`
}

// DefaultStraggler returns the default straggler block: off.
func DefaultStraggler() *Straggler {
	return &Straggler{Enabled: new(false), Ratio: 0.5, Window: "60s", WindowDuration: time.Minute, Reports: 1}
}

// On reports whether straggler handling is enabled.
func (s *Straggler) On() bool { return s != nil && s.Enabled != nil && *s.Enabled }

// Merge returns a copy of s with the fields set in o overriding it.
// Either may be nil; the result is not.
func (s *Straggler) Merge(o *Straggler) *Straggler {
	r := copyOf(s)
	if o == nil {
		return r
	}
	r.Enabled = mergePtr(r.Enabled, o.Enabled)
	r.Ratio = mergeNumber(r.Ratio, o.Ratio)
	r.Window, r.WindowDuration = mergeDuration(r.Window, r.WindowDuration, o.Window, o.WindowDuration)
	r.Reports = mergeNumber(r.Reports, o.Reports)
	return r
}

// Validate checks that the ratio is in (0, 1), the window positive and
// the reports at least one.
func (s *Straggler) Validate() error { return joinProblems(s.problems()) }

func (s *Straggler) problems() []problem {
	if s == nil {
		return nil
	}
	var ps []problem
	if !(s.Ratio > 0 && s.Ratio < 1) {
		ps = append(ps, problemf("ratio", "%g is not between 0 and 1; use one such as 0.5 (half the median speed)", s.Ratio))
	}
	if s.WindowDuration <= 0 {
		ps = append(ps, problemf("window", "%s is not a positive duration; use one such as \"60s\"", durationString(s.Window, s.WindowDuration)))
	}
	if s.Reports < 1 {
		ps = append(ps, problemf("reports", "%d is below 1", s.Reports))
	}
	return ps
}

// DefaultScheduler returns the default scheduler block.
func DefaultScheduler() *Scheduler {
	return &Scheduler{
		Algorithm: "optimus", Interval: "60s", IntervalDuration: 60 * time.Second, FallbackAlgorithm: "optimus",
		ProfileConfigs: new(6), ProfileSteps: 5, Straggler: DefaultStraggler(),
	}
}

// Merge returns a copy of s with the fields set in o overriding it, and
// o's options merged into s's key by key. Either may be nil; the result is
// not.
func (s *Scheduler) Merge(o *Scheduler) *Scheduler {
	r := copyOf(s)
	r.Options = mergeMap(r.Options, nil)
	r.ProfileConfigs = mergePtr(r.ProfileConfigs, nil)
	if r.Straggler != nil {
		r.Straggler = r.Straggler.Merge(nil)
	}
	if o == nil {
		return r
	}
	if o.Straggler != nil {
		r.Straggler = r.Straggler.Merge(o.Straggler)
	}
	r.Algorithm = mergeString(r.Algorithm, o.Algorithm)
	r.Interval, r.IntervalDuration = mergeDuration(r.Interval, r.IntervalDuration, o.Interval, o.IntervalDuration)
	r.Options = mergeMap(r.Options, o.Options)
	r.FallbackAlgorithm = mergeString(r.FallbackAlgorithm, o.FallbackAlgorithm)
	r.ProfileConfigs = mergePtr(r.ProfileConfigs, o.ProfileConfigs)
	r.ProfileSteps = mergeNumber(r.ProfileSteps, o.ProfileSteps)
	return r
}

// Validate checks that an algorithm is named, the interval is positive and
// the profiling counts are not negative.
func (s *Scheduler) Validate() error { return joinProblems(s.problems()) }

func (s *Scheduler) problems() []problem {
	if s == nil {
		return nil
	}
	var ps []problem
	if s.Algorithm == "" {
		ps = append(ps, problemf("algorithm", "no algorithm is named; name one such as \"optimus\""))
	}
	if s.IntervalDuration <= 0 {
		ps = append(ps, problemf("interval", "%s is not a positive duration; use one such as \"60s\"", durationString(s.Interval, s.IntervalDuration)))
	}
	if s.ProfileConfigs != nil && *s.ProfileConfigs < 0 {
		ps = append(ps, problemf("profile_configs", "%d is negative; use 0 to turn profiling off", *s.ProfileConfigs))
	}
	if s.ProfileSteps < 0 {
		ps = append(ps, problemf("profile_steps", "%d is negative; use at least 1", s.ProfileSteps))
	}
	return append(ps, within("straggler", s.Straggler.problems())...)
}

// Plugin is a plugin block: an external algorithm plugin,
// `plugin "random" { path = "random" }`.
type Plugin struct {
	// Name is the block's label, the name operators select it by.
	Name string `hcl:"name,label"`
	// Path is the binary: absolute, or relative to plugin_dir. Default the
	// name, under plugin_dir.
	Path string `hcl:"path,optional"`
	// Checksum is the binary's SHA-256 in hex; Caravan refuses to run a
	// binary that does not match. Default: the binary's checksum when the
	// agent starts.
	Checksum string `hcl:"checksum,optional"`
	// Config are the plugin's options, as the scheduler block's options;
	// the replicated scheduler options override them key by key.
	Config map[string]string `hcl:"config,optional"`
}

func (p *Plugin) problems() []problem {
	var ps []problem
	if c := p.Checksum; c != "" {
		if b, err := hex.DecodeString(c); err != nil || len(b) != sha256.Size {
			ps = append(ps, problemf("checksum", "%q is not a SHA-256 in hex; give the 64 hex digits sha256sum prints", c))
		}
	}
	return ps
}

// mergePlugins returns a's plugins with b's added, a plugin of b replacing
// a's of the same name.
func mergePlugins(a, b []*Plugin) []*Plugin {
	var out []*Plugin
	for _, p := range append(slices.Clone(a), b...) {
		q := copyOf(p)
		q.Config = mergeMap(p.Config, nil)
		if i := slices.IndexFunc(out, func(o *Plugin) bool { return o.Name == p.Name }); i >= 0 {
			out[i] = q
			continue
		}
		out = append(out, q)
	}
	return out
}

// Nomad is the nomad block: the Nomad cluster the nomad driver runs jobs
// on. The agent command, not this package, reads NOMAD_ADDR and the like.
type Nomad struct {
	// Address is the Nomad HTTP API's URL. Default "http://127.0.0.1:4646".
	Address string `hcl:"address,optional"`
	// Token is the ACL token; empty means none.
	Token string `hcl:"token,optional"`
	// Region is the Nomad region; empty means the agent's own.
	Region string `hcl:"region,optional"`
	// Namespace is the Nomad namespace of every job; empty means each
	// Caravan job's own namespace.
	Namespace string `hcl:"namespace,optional"`
	// CheckpointDir is the directory, shared by every Nomad client, under
	// which jobs checkpoint (CARAVAN_CHECKPOINT_DIR is
	// <checkpoint_dir>/<namespace>/<job>). Default
	// "/var/lib/caravan/checkpoints".
	CheckpointDir string `hcl:"checkpoint_dir,optional"`
	// ReportAddrs are the Caravan HTTP addresses trainers report samples
	// to (CARAVAN_COLLECTOR_ADDR); empty means this agent's own and those
	// of server.retry_join.
	ReportAddrs []string `hcl:"report_addrs,optional"`
	// CollectorCommand is the caravan binary on the Nomad clients; when
	// set, every task group gets a `caravan collector` sidecar registered
	// in the consul block's Consul, which the leader scrapes.
	CollectorCommand string `hcl:"collector_command,optional"`
	// CoordinatorAddr is the node-local subtask coordinator every Nomad
	// client runs (`caravan collector -coordinator` as a system job on a
	// fixed loopback port, e.g. "127.0.0.1:9190"): tasks get it as
	// CARAVAN_COORDINATOR_ADDR, and co-located jobs take turns for each
	// node's CPU and network through it. Empty means none.
	CoordinatorAddr string `hcl:"coordinator_addr,optional"`
	// UsageInterval is how often the CPU and memory of running tasks are
	// read from Nomad's allocation stats API, as written, such as "10s";
	// UsageIntervalDuration is its value, 0 for the driver's default
	// (10s).
	UsageInterval         string `hcl:"usage_interval,optional"`
	UsageIntervalDuration time.Duration
	// UsageRate bounds the allocation stats calls, per second, whatever
	// the number of allocations; 0 means the driver's default (4).
	UsageRate float64 `hcl:"usage_rate,optional"`
	// CallTimeout bounds every Nomad call that is not a blocking query,
	// as written, such as "10s"; CallTimeoutDuration is its value, 0 for
	// the driver's default (10s).
	CallTimeout         string `hcl:"call_timeout,optional"`
	CallTimeoutDuration time.Duration
	// BatchRestartRatio is how far, as a ratio, the global batch decided
	// for an adaptive job must be from the one its tasks run at for the
	// driver to restart them at it; 0 means the driver's default (1.25).
	BatchRestartRatio float64 `hcl:"batch_restart_ratio,optional"`
	// TypeProfileHold is how long a new job waits, unplaced, for the
	// first of its profiling runs on each GPU type to report, under an
	// algorithm that plans by GPU type (sia, gavel), as written, such as
	// "2m"; TypeProfileHoldDuration is its value, 0 for the driver's
	// default (2m).
	TypeProfileHold         string `hcl:"type_profile_hold,optional"`
	TypeProfileHoldDuration time.Duration
	// ProfileGPUTypes, when false, turns those profiling runs off, for
	// trainers that do not implement CARAVAN_PROFILE_BATCHES; nil means
	// true.
	ProfileGPUTypes *bool `hcl:"profile_gpu_types,optional"`
	// CAFile verifies Nomad's HTTPS certificate; CertFile and KeyFile are
	// the client certificate Caravan presents to it. Empty means the
	// NOMAD_CACERT, NOMAD_CLIENT_CERT and NOMAD_CLIENT_KEY of the
	// agent's environment, as the Nomad API client reads them.
	CAFile   string `hcl:"ca_file,optional"`
	CertFile string `hcl:"cert_file,optional"`
	KeyFile  string `hcl:"key_file,optional"`
}

// maxBatchRestartRatio bounds nomad.batch_restart_ratio: a batch that
// grows 1,000-fold is far outside any job's bounds.
const maxBatchRestartRatio = 1000

// maxUsageRate bounds nomad.usage_rate: more stats calls a second than
// a Nomad server should be asked for by one client.
const maxUsageRate = 1000

// DefaultNomad returns the default nomad block.
func DefaultNomad() *Nomad { return &Nomad{Address: "http://127.0.0.1:4646"} }

// Merge returns a copy of n with the fields set in o overriding it. Either
// may be nil; the result is not.
func (n *Nomad) Merge(o *Nomad) *Nomad {
	r := copyOf(n)
	if o != nil {
		r.Address = mergeString(r.Address, o.Address)
		r.Token = mergeString(r.Token, o.Token)
		r.Region = mergeString(r.Region, o.Region)
		r.Namespace = mergeString(r.Namespace, o.Namespace)
		r.CheckpointDir = mergeString(r.CheckpointDir, o.CheckpointDir)
		if len(o.ReportAddrs) > 0 {
			r.ReportAddrs = o.ReportAddrs
		}
		r.CollectorCommand = mergeString(r.CollectorCommand, o.CollectorCommand)
		r.CoordinatorAddr = mergeString(r.CoordinatorAddr, o.CoordinatorAddr)
		r.UsageInterval, r.UsageIntervalDuration = mergeDuration(
			r.UsageInterval, r.UsageIntervalDuration, o.UsageInterval, o.UsageIntervalDuration)
		if o.BatchRestartRatio != 0 {
			r.BatchRestartRatio = o.BatchRestartRatio
		}
		if o.UsageRate != 0 {
			r.UsageRate = o.UsageRate
		}
		r.CallTimeout, r.CallTimeoutDuration = mergeDuration(
			r.CallTimeout, r.CallTimeoutDuration, o.CallTimeout, o.CallTimeoutDuration)
		r.TypeProfileHold, r.TypeProfileHoldDuration = mergeDuration(
			r.TypeProfileHold, r.TypeProfileHoldDuration, o.TypeProfileHold, o.TypeProfileHoldDuration)
		r.ProfileGPUTypes = mergePtr(r.ProfileGPUTypes, o.ProfileGPUTypes)
		r.CAFile = mergeString(r.CAFile, o.CAFile)
		r.CertFile = mergeString(r.CertFile, o.CertFile)
		r.KeyFile = mergeString(r.KeyFile, o.KeyFile)
	}
	return r
}

// Validate checks that the address is an http, https or unix URL, as the
// Nomad API client requires, and that checkpoint_dir is absolute.
func (n *Nomad) Validate() error { return joinProblems(n.problems()) }

func (n *Nomad) problems() []problem {
	if n == nil {
		return nil
	}
	var ps []problem
	u, err := url.Parse(n.Address)
	ok := err == nil && (u.Scheme == "unix" || (u.Scheme == "http" || u.Scheme == "https") && u.Host != "")
	if !ok {
		ps = append(ps, problemf("address", "%q is not a URL of the Nomad API; use one such as \"http://127.0.0.1:4646\" (http, https or unix)", n.Address))
	}
	if n.CheckpointDir != "" && !filepath.IsAbs(n.CheckpointDir) {
		ps = append(ps, problemf("checkpoint_dir", "%q is a relative path; give an absolute path every Nomad client sees, such as \"/mnt/shared/caravan\"", n.CheckpointDir))
	}
	if n.CoordinatorAddr != "" {
		if _, _, err := net.SplitHostPort(n.CoordinatorAddr); err != nil {
			ps = append(ps, problemf("coordinator_addr", "%q is not host:port; use the loopback address every Nomad client's coordinator listens on, such as \"127.0.0.1:9190\"", n.CoordinatorAddr))
		}
	}
	if n.UsageIntervalDuration < 0 || n.UsageInterval != "" && n.UsageIntervalDuration == 0 {
		ps = append(ps, problemf("usage_interval", "%s is not a positive duration; use one such as \"10s\"", durationString(n.UsageInterval, n.UsageIntervalDuration)))
	}
	if r := n.UsageRate; r != 0 && !(r > 0 && r <= maxUsageRate) {
		ps = append(ps, problemf("usage_rate", "%g is not a rate between 0 and %g calls a second; use one such as 4", r, float64(maxUsageRate)))
	}
	if n.CallTimeoutDuration < 0 || n.CallTimeout != "" && n.CallTimeoutDuration == 0 {
		ps = append(ps, problemf("call_timeout", "%s is not a positive duration; use one such as \"10s\"", durationString(n.CallTimeout, n.CallTimeoutDuration)))
	}
	if n.TypeProfileHoldDuration < 0 || n.TypeProfileHold != "" && n.TypeProfileHoldDuration == 0 {
		ps = append(ps, problemf("type_profile_hold", "%s is not a positive duration; use one such as \"2m\"", durationString(n.TypeProfileHold, n.TypeProfileHoldDuration)))
	}
	if r := n.BatchRestartRatio; r != 0 && !(r >= 1 && r <= maxBatchRestartRatio) {
		ps = append(ps, problemf("batch_restart_ratio", "%g is not a ratio between 1 and %g; use one such as 1.25 (1 restarts a job for any new batch)", r, float64(maxBatchRestartRatio)))
	}
	return append(ps, clientCertProblems(n.CertFile, n.KeyFile)...)
}

// Consul is the consul block: the Consul agent Caravan registers with.
type Consul struct {
	// Address is the Consul agent's HTTP address, host:port or a URL.
	// Default "127.0.0.1:8500".
	Address string `hcl:"address,optional"`
	// Token is the ACL token; empty means none.
	Token string `hcl:"token,optional"`
	// ServiceName is the service servers register as, and the one
	// server_auto_join looks for. Default "caravan".
	ServiceName string `hcl:"service_name,optional"`
	// AutoAdvertise registers the server in Consul. nil means unset;
	// Default sets false.
	AutoAdvertise *bool `hcl:"auto_advertise,optional"`
	// ServerAutoJoin adds "consul://<service_name>" to server.retry_join.
	// nil means unset; Default sets false.
	ServerAutoJoin *bool `hcl:"server_auto_join,optional"`
	// CAFile verifies Consul's HTTPS certificate; CertFile and KeyFile are
	// the client certificate Caravan presents to it. Empty means the
	// CONSUL_CACERT, CONSUL_CLIENT_CERT and CONSUL_CLIENT_KEY of the
	// agent's environment, as the Consul API client reads them.
	CAFile   string `hcl:"ca_file,optional"`
	CertFile string `hcl:"cert_file,optional"`
	KeyFile  string `hcl:"key_file,optional"`
}

// DefaultConsul returns the default consul block.
func DefaultConsul() *Consul {
	return &Consul{Address: "127.0.0.1:8500", ServiceName: "caravan", AutoAdvertise: new(false), ServerAutoJoin: new(false)}
}

// Used reports whether the agent talks to Consul at all.
func (c *Consul) Used() bool {
	return c != nil && (c.AutoAdvertise != nil && *c.AutoAdvertise || c.ServerAutoJoin != nil && *c.ServerAutoJoin)
}

// Merge returns a copy of c with the fields set in o overriding it. Either
// may be nil; the result is not.
func (c *Consul) Merge(o *Consul) *Consul {
	r := copyOf(c)
	if o != nil {
		r.Address = mergeString(r.Address, o.Address)
		r.Token = mergeString(r.Token, o.Token)
		r.ServiceName = mergeString(r.ServiceName, o.ServiceName)
		r.AutoAdvertise = mergePtr(r.AutoAdvertise, o.AutoAdvertise)
		r.ServerAutoJoin = mergePtr(r.ServerAutoJoin, o.ServerAutoJoin)
		r.CAFile = mergeString(r.CAFile, o.CAFile)
		r.CertFile = mergeString(r.CertFile, o.CertFile)
		r.KeyFile = mergeString(r.KeyFile, o.KeyFile)
	}
	return r
}

// Validate checks the service name; the Consul client accepts an address
// with or without a scheme.
func (c *Consul) Validate() error { return joinProblems(c.problems()) }

// consulService is what Consul accepts as a service name that DNS can
// also resolve.
var consulService = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$`)

func (c *Consul) problems() []problem {
	if c == nil {
		return nil
	}
	ps := clientCertProblems(c.CertFile, c.KeyFile)
	if c.ServiceName == "" || consulService.MatchString(c.ServiceName) {
		return ps
	}
	return append(ps, problemf("service_name", "%q is not a Consul service name; use letters, digits and dashes, such as \"caravan\"", c.ServiceName))
}

// Sim is the sim block: the embedded simulated cluster of the sim driver.
type Sim struct {
	// Cluster is the cluster's shape as `caravan sim -cluster` takes it
	// (sim.ParseCluster): "NODESxGPUS" ("4x4", nodes of the agent's
	// default GPUs), or groups of the catalog's GPU types
	// "NODESxTYPE[:GPUS]" ("6xt4,3xrtx,2xa100"), every node with at least
	// one GPU. Default "4x4". ParseCluster reads it.
	Cluster string `hcl:"cluster,optional"`
	// Speed is how many virtual seconds pass per wall-clock second; more than
	// 0. Default 1.
	Speed float64 `hcl:"speed,optional"`
	// Seed seeds the simulator's randomness, so runs reproduce. nil means
	// unset; 0 is a seed like any other. Default 1.
	Seed *uint64 `hcl:"seed,optional"`
}

// DefaultSim returns the default sim block.
func DefaultSim() *Sim { return &Sim{Cluster: "4x4", Speed: 1, Seed: new(uint64(1))} }

// Merge returns a copy of s with the fields set in o overriding it. Either
// may be nil; the result is not.
func (s *Sim) Merge(o *Sim) *Sim {
	r := copyOf(s)
	r.Seed = mergePtr(r.Seed, nil)
	if o != nil {
		r.Cluster = mergeString(r.Cluster, o.Cluster)
		r.Speed = mergeNumber(r.Speed, o.Speed)
		r.Seed = mergePtr(r.Seed, o.Seed)
	}
	return r
}

// ParseCluster returns the shape of s.Cluster (see ParseCluster).
func (s *Sim) ParseCluster() (sim.ClusterSpec, error) { return ParseCluster(s.Cluster) }

// Validate checks the cluster's shape and that speed is positive.
func (s *Sim) Validate() error { return joinProblems(s.problems()) }

func (s *Sim) problems() []problem {
	if s == nil {
		return nil
	}
	var ps []problem
	if _, err := ParseCluster(s.Cluster); err != nil {
		ps = append(ps, problem{path: "cluster", detail: err.Error()})
	}
	if !(s.Speed > 0) {
		ps = append(ps, problemf("speed", "%v is not a speed; use a number of virtual seconds per wall-clock second greater than 0, such as 1 or 60", s.Speed))
	}
	return ps
}

// ParseCluster parses a simulated cluster's shape as `caravan sim
// -cluster` does (sim.ParseCluster: "4x4", or typed groups such as
// "6xt4,3xrtx,2xa100" or "6xt4:2"), and refuses nodes without GPUs,
// which the agent's simulated cluster does not run.
func ParseCluster(s string) (sim.ClusterSpec, error) {
	spec, err := sim.ParseCluster(s)
	if err != nil {
		return sim.ClusterSpec{}, err
	}
	for _, g := range spec.Groups {
		if g.GPUsPerNode < 1 {
			return sim.ClusterSpec{}, fmt.Errorf("cluster %q: group %dx%d has nodes without GPUs; give every node at least 1, such as \"4x4\"", s, g.Nodes, g.GPUsPerNode)
		}
	}
	return spec, nil
}

// positive parses a string of decimal digits worth at least 1.
func positive(s string) (int, bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 1
}

// checkHostPort checks a host:port address with a non-empty host and a
// numeric port in 1–65535.
func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if ae, ok := errors.AsType[*net.AddrError](err); ok {
			return errors.New(ae.Err)
		}
		return err
	}
	if host == "" {
		return errors.New("the host is empty")
	}
	if n, ok := positive(port); !ok || n > 65535 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return nil
}

// mergeDuration merges a duration argument: o's value overrides when
// non-zero, and brings its string along, or its formatted value when o was
// built by hand without one.
func mergeDuration(s string, d time.Duration, os string, od time.Duration) (string, time.Duration) {
	if od == 0 {
		return s, d
	}
	if os == "" {
		os = od.String()
	}
	return os, od
}

// durationString shows a duration in a message: as written when it was,
// quoted, else formatted.
func durationString(s string, d time.Duration) string {
	if s != "" {
		return strconv.Quote(s)
	}
	return strconv.Quote(d.String())
}

// copyOf returns a shallow copy of *p, or a new zero T when p is nil.
func copyOf[T any](p *T) *T {
	var r T
	if p != nil {
		r = *p
	}
	return &r
}
