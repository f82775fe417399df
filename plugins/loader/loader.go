package loader

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/structs"
	"github.com/caravan-sched/caravan/version"
	"github.com/hashicorp/go-hclog"
)

// PluginConfig is an external algorithm plugin as the agent configuration
// declares it (`plugin "name" { path checksum config {} }`).
type PluginConfig struct {
	// Name is the name operators select the algorithm by; it must not be
	// a built-in's.
	Name string
	// Path is the plugin binary.
	Path string
	// Checksum is the binary's SHA-256, in hex. Empty means the binary's
	// checksum when the loader starts: a binary replaced later is refused
	// all the same.
	Checksum string
	// Config are the plugin's options; the scheduler configuration's
	// options override them key by key.
	Config map[string]string
}

// Config is what a Loader needs.
type Config struct {
	// Builtins are the in-process algorithms (default none).
	Builtins map[string]planner.Factory
	Plugins  []*PluginConfig
	// PlanTimeout bounds a plugin's Plan (default 30 s); StartTimeout
	// bounds its start (default 10 s).
	PlanTimeout  time.Duration
	StartTimeout time.Duration
	// Backoff is the first wait before a failed plugin is started again
	// (default 1 s); it doubles with each failure in a row up to
	// MaxBackoff (default 1 min).
	Backoff    time.Duration
	MaxBackoff time.Duration
	Logger     hclog.Logger
}

func (c *Config) setDefaults() {
	if c.PlanTimeout == 0 {
		c.PlanTimeout = 30 * time.Second
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 10 * time.Second
	}
	if c.Backoff == 0 {
		c.Backoff = time.Second
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = time.Minute
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
}

// Loader resolves algorithm names.
type Loader struct {
	cfg      Config
	external map[string]*external
}

// ErrUnknownAlgorithm is wrapped by Algorithm's error for a name that is
// neither a built-in nor a declared plugin.
var ErrUnknownAlgorithm = errors.New("unknown algorithm")

// ErrUnavailable is wrapped by the errors of a plugin that is not running
// and could not be started now.
var ErrUnavailable = errors.New("plugin unavailable")

// New checks the plugin declarations and each binary against its
// checksum, pins the checksums (a binary replaced later never runs), and
// starts the plugins. A plugin that fails to start is no error here: its
// status says why, and it is started again when used.
func New(cfg Config) (*Loader, error) {
	cfg.setDefaults()
	l := &Loader{cfg: cfg, external: map[string]*external{}}
	var errs []error
	for _, pc := range cfg.Plugins {
		if err := l.add(pc); err != nil {
			errs = append(errs, fmt.Errorf("plugin %q: %w", pc.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(l.external)) {
		e := l.external[name]
		e.mu.Lock()
		if _, err := e.readyLocked(); err != nil {
			e.log.Error("failed to start plugin", "error", err)
		}
		e.mu.Unlock()
	}
	return l, nil
}

func (l *Loader) add(pc *PluginConfig) error {
	switch {
	case pc.Name == "":
		return errors.New("no name")
	case l.cfg.Builtins[pc.Name] != nil:
		return errors.New("a built-in algorithm has this name")
	case l.external[pc.Name] != nil:
		return errors.New("declared twice")
	}
	sum, err := fileSHA256(pc.Path)
	if err != nil {
		return err
	}
	if pc.Checksum != "" {
		want, err := hex.DecodeString(pc.Checksum)
		if err != nil || len(want) != sha256.Size {
			return fmt.Errorf("checksum %q is not a SHA-256 in hex (64 hex digits)", pc.Checksum)
		}
		if !bytes.Equal(sum, want) {
			return fmt.Errorf("the binary %s does not match its checksum: its SHA-256 is %x", pc.Path, sum)
		}
	}
	l.external[pc.Name] = newExternal(pc, sum, l.cfg)
	return nil
}

func fileSHA256(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the plugin binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("read the plugin binary: %w", err)
	}
	return h.Sum(nil), nil
}

// Algorithm returns the algorithm called name, configured with options:
// a new instance of a built-in, or a handle on an external plugin. Invalid
// options are an error (for a plugin, its SetConfig's). A built-in that
// panics, here or in its Plan, returns an error naming it and the panic
// value instead, as a crashed plugin's call fails, and plans on a fresh
// instance next time. A plugin that
// cannot start now returns its handle with an error wrapping
// ErrUnavailable: the handle starts it when it is used after its backoff.
func (l *Loader) Algorithm(name string, options map[string]string) (planner.Algorithm, error) {
	if factory, ok := l.cfg.Builtins[name]; ok {
		return newBuiltin(name, factory, options, l.cfg.Logger)
	}
	e, ok := l.external[name]
	if !ok {
		return nil, fmt.Errorf("%w %q; known: %v", ErrUnknownAlgorithm, name, l.Names())
	}
	p := &proxy{e: e, options: mergeOptions(e.cfg.Config, options)}
	if err := p.validate(); err != nil {
		if errors.Is(err, ErrUnavailable) {
			return p, err
		}
		return nil, err
	}
	return p, nil
}

func mergeOptions(base, over map[string]string) map[string]string {
	if len(base) == 0 && len(over) == 0 {
		return nil
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, over)
	return out
}

// Names returns every algorithm's name, sorted.
func (l *Loader) Names() []string {
	names := slices.Collect(maps.Keys(l.cfg.Builtins))
	names = append(names, slices.Collect(maps.Keys(l.external))...)
	slices.Sort(names)
	return names
}

// Plugins returns the status of every algorithm, sorted by name.
func (l *Loader) Plugins() []*structs.PluginStatus {
	var out []*structs.PluginStatus
	for _, name := range l.Names() {
		if e, ok := l.external[name]; ok {
			out = append(out, e.status())
			continue
		}
		b, err := newBuiltin(name, l.cfg.Builtins[name], nil, l.cfg.Logger)
		if err != nil {
			out = append(out, &structs.PluginStatus{
				Name: name, Version: version.Version, Origin: structs.PluginOriginBuiltin, APIVersion: algorithm.APIVersion1,
				Health: structs.PluginUnhealthy, Error: err.Error(),
			})
			continue
		}
		out = append(out, &structs.PluginStatus{
			Name: name, Version: b.info.Version, Origin: structs.PluginOriginBuiltin, APIVersion: algorithm.APIVersion1,
			Health: structs.PluginHealthy, SpeedModels: b.SpeedModels(),
		})
	}
	return out
}

// Shutdown stops every plugin process.
func (l *Loader) Shutdown() {
	for _, e := range l.external {
		e.mu.Lock()
		e.stopLocked()
		e.mu.Unlock()
	}
}
