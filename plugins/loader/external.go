package loader

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/structs"
	"github.com/cenkalti/backoff/v4"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
)

// external is one external plugin: its process, when running, and its
// failures.
type external struct {
	cfg  *PluginConfig
	opts Config
	log  hclog.Logger
	// checksum is the SHA-256 the binary must have.
	checksum []byte

	mu     sync.Mutex
	client *plugin.Client
	alg    algorithm.Algorithm
	info   *algorithm.PluginInfo
	api    string
	// applied are the options last set; nil until set.
	applied map[string]string
	// failures counts failures in a row and restarts all of them (each
	// is followed by a start); retryAt is when the plugin may start
	// again, retry's next interval after it fails again; lastErr is the
	// last failure.
	failures int
	retry    *backoff.ExponentialBackOff
	restarts int
	retryAt  time.Time
	lastErr  error
	// startTime is how long the last start took.
	startTime time.Duration

	// published is the plugin's status as of its last change, and running
	// its process then: status reads them without waiting for mu, which a
	// plan holds for as long as it runs.
	published atomic.Pointer[structs.PluginStatus]
	running   atomic.Pointer[plugin.Client]
}

func newExternal(pc *PluginConfig, checksum []byte, opts Config) *external {
	e := &external{
		cfg: pc, opts: opts, log: opts.Logger.ResetNamed("plugin." + pc.Name), checksum: checksum,
		retry: backoff.NewExponentialBackOff(
			backoff.WithInitialInterval(opts.Backoff),
			backoff.WithMaxInterval(opts.MaxBackoff),
			backoff.WithRandomizationFactor(0),
			backoff.WithMaxElapsedTime(0)),
	}
	e.publishLocked()
	return e
}

// publishLocked records the status after a change.
func (e *external) publishLocked() {
	s := &structs.PluginStatus{
		Name: e.cfg.Name, Origin: structs.PluginOriginExternal, Path: e.cfg.Path,
		Restarts: e.restarts, StartSeconds: e.startTime.Seconds(),
	}
	if e.info != nil {
		s.Version, s.APIVersion, s.SpeedModels = e.info.Version, e.api, e.info.Capabilities.SpeedModels
	}
	if e.lastErr != nil {
		s.Error = e.lastErr.Error()
	}
	e.published.Store(s)
	e.running.Store(e.client)
}

// readyLocked returns the running plugin, starting it if it is not
// running and its backoff has passed.
func (e *external) readyLocked() (algorithm.Algorithm, error) {
	if e.client != nil && !e.client.Exited() {
		return e.alg, nil
	}
	if e.client != nil {
		e.failLocked(errors.New("the plugin process exited"))
	}
	if wait := time.Until(e.retryAt); wait > 0 {
		return nil, fmt.Errorf("%w: plugin %q is down, next start in %s; last error: %w", ErrUnavailable, e.cfg.Name, wait.Round(time.Millisecond), e.lastErr)
	}
	if err := e.startLocked(); err != nil {
		e.failLocked(err)
		return nil, fmt.Errorf("%w: start plugin %q: %w", ErrUnavailable, e.cfg.Name, err)
	}
	return e.alg, nil
}

func (e *external) startLocked() error {
	start := time.Now()
	// go-plugin hashes the binary just before it runs it, at every start.
	secure := &plugin.SecureConfig{Checksum: e.checksum, Hash: sha256.New()}
	cmd := exec.Command(e.cfg.Path)
	dieWithParent(cmd)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  algorithm.Handshake,
		Plugins:          algorithm.PluginSet(nil),
		Cmd:              cmd,
		SecureConfig:     secure,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		GRPCDialOptions:  algorithm.DialOptions(),
		StartTimeout:     e.opts.StartTimeout,
		Logger:           e.log,
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		if errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
			return fmt.Errorf("the binary %s does not match its checksum: %w", e.cfg.Path, err)
		}
		return err
	}
	raw, err := rpc.Dispense(algorithm.PluginName)
	if err != nil {
		client.Kill()
		return err
	}
	alg := raw.(algorithm.Algorithm)
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.StartTimeout)
	info, err := alg.PluginInfo(ctx)
	cancel()
	if err != nil {
		client.Kill()
		return err
	}
	api, err := algorithm.Negotiate(info, algorithm.APIVersions)
	if err != nil {
		client.Kill()
		return err
	}
	e.client, e.alg, e.info, e.api, e.applied = client, alg, info, api, nil
	e.startTime = time.Since(start)
	e.publishLocked()
	e.log.Info("started plugin", "version", info.Version, "api_version", api, "duration", e.startTime)
	return nil
}

// failLocked records a failure, stops the process, and sets when it may
// start again.
func (e *external) failLocked(err error) {
	e.stopLocked()
	e.failures++
	e.restarts++
	wait := e.retry.NextBackOff()
	e.retryAt = time.Now().Add(wait)
	e.lastErr = err
	e.publishLocked()
	e.log.Warn("plugin failed", "error", err, "failures", e.failures, "backoff", wait)
}

func (e *external) stopLocked() {
	if e.client != nil {
		e.client.Kill()
	}
	e.client, e.alg = nil, nil
	e.publishLocked()
}

// configureLocked sets options on the running plugin unless they are
// set already.
func (e *external) configureLocked(alg algorithm.Algorithm, options map[string]string) error {
	if e.applied != nil && maps.Equal(e.applied, options) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.PlanTimeout)
	defer cancel()
	if err := alg.SetConfig(ctx, e.api, options); err != nil {
		e.applied = nil
		if ctx.Err() != nil {
			e.failLocked(fmt.Errorf("no answer to its options within %s: %w", e.opts.PlanTimeout, err))
			return fmt.Errorf("%w: plugin %q: %w", ErrUnavailable, e.cfg.Name, err)
		}
		if e.lostLocked(err) {
			return fmt.Errorf("%w: plugin %q: %w", ErrUnavailable, e.cfg.Name, err)
		}
		return fmt.Errorf("options of plugin %q: %w", e.cfg.Name, err)
	}
	// A declaration may depend on the options: ask again under these.
	info, err := alg.PluginInfo(ctx)
	if err != nil {
		e.applied = nil
		if ctx.Err() != nil {
			e.failLocked(fmt.Errorf("no answer to its plugin info within %s: %w", e.opts.PlanTimeout, err))
			return fmt.Errorf("%w: plugin %q: %w", ErrUnavailable, e.cfg.Name, err)
		}
		if e.lostLocked(err) {
			return fmt.Errorf("%w: plugin %q: %w", ErrUnavailable, e.cfg.Name, err)
		}
		return fmt.Errorf("plugin %q: capabilities under its options: %w", e.cfg.Name, err)
	}
	updated := *e.info
	updated.Capabilities = info.Capabilities
	e.info = &updated
	e.publishLocked()
	e.applied = maps.Clone(options)
	if e.applied == nil {
		e.applied = map[string]string{}
	}
	return nil
}

// status is the plugin's status: healthy while its process runs. It
// does not wait for a plan in flight.
func (e *external) status() *structs.PluginStatus {
	s := *e.published.Load()
	if c := e.running.Load(); c != nil && !c.Exited() {
		s.Health, s.Error = structs.PluginHealthy, ""
	} else {
		s.Health = structs.PluginUnhealthy
	}
	return &s
}

// validateWait is how long Algorithm waits for a plugin's backoff to end.
const validateWait = 5 * time.Second

// proxy is a planner.Algorithm that plans with an external plugin under
// a set of options.
type proxy struct {
	e       *external
	options map[string]string
	// caps is what the plugin declared under these options when they were
	// last set; nil until they were.
	caps atomic.Pointer[planner.Capabilities]
}

var (
	_ planner.Algorithm   = (*proxy)(nil)
	_ planner.ModelDriven = (*proxy)(nil)
	_ planner.Describer   = (*proxy)(nil)
)

func (p *proxy) Name() string { return p.e.cfg.Name }

// SpeedModels reports the plugin's capability as it last said.
func (p *proxy) SpeedModels() bool { return p.Capabilities().SpeedModels }

// Capabilities are what the plugin declared under the proxy's options
// when they were last set on it; before that, only SpeedModels as the
// plugin last said it. They do not wait for a plan in flight.
func (p *proxy) Capabilities() planner.Capabilities {
	if c := p.caps.Load(); c != nil {
		return *c
	}
	return planner.Capabilities{SpeedModels: p.e.published.Load().SpeedModels}
}

// configuredLocked sets the proxy's options on the running plugin and
// records what the plugin declares under them.
func (p *proxy) configuredLocked(alg algorithm.Algorithm) error {
	if err := p.e.configureLocked(alg, p.options); err != nil {
		return err
	}
	c := p.e.info.Capabilities
	p.caps.Store(&c)
	return nil
}

// validate starts the plugin if needed and sets the options, which
// checks them. A plugin due to start again within validateWait is
// waited for.
func (p *proxy) validate() error {
	p.e.mu.Lock()
	defer p.e.mu.Unlock()
	if wait := time.Until(p.e.retryAt); wait > 0 && wait <= validateWait {
		time.Sleep(wait)
	}
	alg, err := p.e.readyLocked()
	if err != nil {
		return err
	}
	return p.configuredLocked(alg)
}

// Plan asks the plugin, within the plan timeout. A plugin that crashed,
// or did not answer in time, is stopped and started again after its
// backoff.
func (p *proxy) Plan(req *planner.Request) (*planner.Decision, error) {
	e := p.e
	e.mu.Lock()
	defer e.mu.Unlock()
	alg, err := e.readyLocked()
	if err != nil {
		return nil, err
	}
	if err := p.configuredLocked(alg); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.PlanTimeout)
	defer cancel()
	dec, err := alg.Plan(ctx, req)
	switch {
	case err == nil:
		e.failures = 0
		e.retry.Reset()
		return dec, nil
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		// The plugin's side may cancel the call at the deadline a moment
		// before the host's own timer fires.
		err = fmt.Errorf("no answer within %s: %w", e.opts.PlanTimeout, err)
		e.failLocked(err)
	default:
		e.lostLocked(err)
	}
	return nil, fmt.Errorf("plugin %q: %w", e.cfg.Name, err)
}

// lostLocked reports whether err means the plugin process died or its
// connection broke, and if so records the failure.
func (e *external) lostLocked(err error) bool {
	if !errors.Is(err, algorithm.ErrConnection) && !e.client.Exited() {
		return false
	}
	e.failLocked(fmt.Errorf("the plugin process exited or its connection broke: %w", err))
	return true
}
