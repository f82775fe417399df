package loader

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"
)

// syncBuffer is a logger's output that tests read while plugins write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newLoader loads plugins with short timeouts, and stops them when the
// test ends.
func newLoader(t *testing.T, logs *syncBuffer, plugins ...*PluginConfig) *Loader {
	t.Helper()
	logger := hclog.New(&hclog.LoggerOptions{Name: "agent", Level: hclog.Debug, Output: logs})
	l, err := New(Config{
		Builtins: builtin.Algorithms, Plugins: plugins, Logger: logger,
		PlanTimeout: 2 * time.Second, Backoff: 100 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	})
	must.NoError(t, err)
	t.Cleanup(l.Shutdown)
	return l
}

// request is a small cluster with two jobs.
func request(t *testing.T) *planner.Request {
	h := planner.NewHarness(t)
	h.AddNodes("n", 3, 8000, 32768, 0)
	return &planner.Request{Nodes: h.Nodes, Now: 42, Jobs: []*planner.Job{
		{Job: planner.MockJob("a", structs.Bounds{Min: 1, Max: 2}, structs.Bounds{Min: 1, Max: 4})},
		{Job: planner.MockJob("b", structs.Bounds{Min: 1, Max: 2}, structs.Bounds{Min: 1, Max: 4})},
	}}
}

func status(l *Loader, name string) *structs.PluginStatus {
	for _, s := range l.Plugins() {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// TestLoader_External runs the example plugin: it starts, says who it is,
// validates its options, plans deterministically within the rules, and
// logs as plugin.random.
func TestLoader_External(t *testing.T) {
	logs := &syncBuffer{}
	bin := BuildPlugin(t, "examples/plugin-random")
	l := newLoader(t, logs, &PluginConfig{Name: "random", Path: bin, Config: map[string]string{"seed": "1"}})

	s := status(l, "random")
	must.NotNil(t, s)
	must.Eq(t, structs.PluginHealthy, s.Health)
	must.Eq(t, "0.1.0", s.Version)
	must.Eq(t, "v1", s.APIVersion)
	must.Eq(t, structs.PluginOriginExternal, s.Origin)
	must.Positive(t, s.StartSeconds)
	t.Logf("plugin start: %.1f ms", s.StartSeconds*1000)
	must.Eq(t, structs.PluginOriginBuiltin, status(l, "optimus").Origin)
	must.True(t, status(l, "optimus").SpeedModels)
	want := append(builtin.Names(), "random")
	slices.Sort(want)
	must.Eq(t, want, l.Names())

	alg, err := l.Algorithm("random", map[string]string{"seed": "7"})
	must.NoError(t, err)
	must.Eq(t, "random", alg.Name())
	req := request(t)
	first, err := alg.Plan(req)
	must.NoError(t, err)
	must.NoError(t, planner.CheckDecision(req, first))
	again, err := alg.Plan(req)
	must.NoError(t, err)
	must.Eq(t, first, again, must.Sprint("the same request gets the same answer"))

	_, err = l.Algorithm("random", map[string]string{"colour": "red"})
	must.ErrorContains(t, err, `unknown option "colour"`)
	_, err = l.Algorithm("nope", nil)
	must.ErrorIs(t, err, ErrUnknownAlgorithm)
	_, err = l.Algorithm("fifo", map[string]string{"x": "1"})
	must.ErrorContains(t, err, `algorithm "fifo" takes no options`)
	must.StrContains(t, logs.String(), "plugin.random: started plugin")
}

// TestLoader_Checksum: a binary that does not match its checksum never
// runs, nor does one replaced after the agent pinned its checksum.
func TestLoader_Checksum(t *testing.T) {
	bin := BuildPlugin(t, "examples/plugin-random")
	_, err := New(Config{Plugins: []*PluginConfig{{Name: "random", Path: bin, Checksum: strings.Repeat("00", 32)}}})
	must.ErrorContains(t, err, `plugin "random": the binary `+bin+` does not match its checksum`)

	_, err = New(Config{Plugins: []*PluginConfig{{Name: "random", Path: bin, Checksum: "abc"}}})
	must.ErrorContains(t, err, `checksum "abc" is not a SHA-256 in hex`)
	_, err = New(Config{Builtins: builtin.Algorithms, Plugins: []*PluginConfig{{Name: "drf", Path: bin}}})
	must.ErrorContains(t, err, "a built-in algorithm has this name")

	// Pinned at load, then replaced by another binary.
	other := BuildPlugin(t, "plugins/loader/internal/misbehave")
	data, err := os.ReadFile(bin)
	must.NoError(t, err)
	sum := sha256.Sum256(data)
	copied := t.TempDir() + "/random"
	must.NoError(t, os.WriteFile(copied, data, 0o755))
	l := newLoader(t, &syncBuffer{}, &PluginConfig{Name: "random", Path: copied, Checksum: hex.EncodeToString(sum[:])})
	_, err = l.Algorithm("random", nil)
	must.NoError(t, err)
	l.Shutdown()
	replaced, err := os.ReadFile(other)
	must.NoError(t, err)
	must.NoError(t, os.WriteFile(copied, replaced, 0o755))
	_, err = l.Algorithm("random", nil)
	must.ErrorIs(t, err, ErrUnavailable)
	must.ErrorIs(t, err, plugin.ErrChecksumsDoNotMatch)
	s := status(l, "random")
	must.Eq(t, structs.PluginUnhealthy, s.Health)
	must.StrContains(t, s.Error, "checksum")
}

// TestLoader_Misbehaving: a plugin that panics or hangs is stopped, its
// Plan fails with the reason, and it is started again after its backoff.
func TestLoader_Misbehaving(t *testing.T) {
	bin := BuildPlugin(t, "plugins/loader/internal/misbehave")
	l := newLoader(t, &syncBuffer{}, &PluginConfig{Name: "misbehave", Path: bin})
	req := request(t)

	for _, tc := range []struct{ mode, err string }{
		{"panic", "plugin connection lost"},
		{"hang", "no answer within 2s"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			bad, err := l.Algorithm("misbehave", map[string]string{"mode": tc.mode})
			must.NoError(t, err)
			restarts := status(l, "misbehave").Restarts
			_, err = bad.Plan(req)
			must.ErrorContains(t, err, tc.err)
			s := status(l, "misbehave")
			must.Eq(t, structs.PluginUnhealthy, s.Health)
			must.Eq(t, restarts+1, s.Restarts)

			good, err := l.Algorithm("misbehave", map[string]string{"mode": "fine"})
			if err != nil {
				must.ErrorIs(t, err, ErrUnavailable, must.Sprint("within the backoff"))
			}
			must.Wait(t, wait.InitialSuccess(wait.ErrorFunc(func() error {
				_, err := good.Plan(req)
				return err
			}), wait.Timeout(10*time.Second), wait.Gap(50*time.Millisecond)))
			must.Eq(t, structs.PluginHealthy, status(l, "misbehave").Health)
		})
	}
}

// TestLoader_LargeRequest sends a plugin process a request of 8,000 jobs
// on 16,000 nodes (5.8 MB), larger than gRPC's default message limit.
func TestLoader_LargeRequest(t *testing.T) {
	l, err := New(Config{
		Plugins:     []*PluginConfig{{Name: "ext", Path: BuildPlugin(t, "plugins/builtin/algorithm/fifo")}},
		PlanTimeout: 2 * time.Minute, // the race detector slows the conversions tenfold
	})
	must.NoError(t, err)
	t.Cleanup(l.Shutdown)
	alg, err := l.Algorithm("ext", nil)
	must.NoError(t, err)
	req := planner.LargeRequest(t, 16000, 8000)
	dec, err := alg.Plan(req)
	must.NoError(t, err)
	must.SliceLen(t, 8000, dec.Placements)
}

// panicky is a built-in for TestLoader_BuiltinPanics: it panics in the
// call its option "in" names (New, SetConfig, SpeedModels, Plan), and in
// Plan only while *plans is positive, counting it down.
type panicky struct {
	in    string
	plans *atomic.Int32
}

func (p *panicky) Name() string { return "panicky" }

func (p *panicky) SetConfig(options map[string]string) error {
	p.in = options["in"]
	if p.in == "SetConfig" {
		panic("bad options")
	}
	return nil
}

func (p *panicky) SpeedModels() bool {
	if p.in == "SpeedModels" {
		panic("no capabilities")
	}
	return true
}

func (p *panicky) Plan(req *planner.Request) (*planner.Decision, error) {
	if p.in == "Plan" && p.plans.Add(-1) >= 0 {
		var nodes []*structs.Node
		_ = nodes[len(req.Jobs)+1] // a runtime error: index out of range
	}
	return &planner.Decision{}, nil
}

// TestLoader_BuiltinPanics: a built-in that panics returns an error
// naming it, the call and the panic value, logs the stack, and does not
// take the loader down: the next call works, and the next Plan runs on
// a fresh instance.
func TestLoader_BuiltinPanics(t *testing.T) {
	var news, plans atomic.Int32
	newFails := false
	builtins := maps.Clone(builtin.Algorithms)
	builtins["panicky"] = func() planner.Algorithm {
		news.Add(1)
		if newFails {
			panic("cannot build")
		}
		return &panicky{plans: &plans}
	}
	logs := &syncBuffer{}
	l, err := New(Config{Builtins: builtins, Logger: hclog.New(&hclog.LoggerOptions{Output: logs})})
	must.NoError(t, err)
	req := request(t)

	for _, tc := range []struct{ in, err string }{
		{"SetConfig", `options of algorithm "panicky": algorithm "panicky" panicked in SetConfig: bad options`},
		{"SpeedModels", `algorithm "panicky" panicked in PluginInfo: no capabilities`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := l.Algorithm("panicky", map[string]string{"in": tc.in})
			must.EqError(t, err, tc.err)
			fifo, err := l.Algorithm("fifo", nil)
			must.NoError(t, err)
			_, err = fifo.Plan(req)
			must.NoError(t, err)
		})
	}

	t.Run("Plan", func(t *testing.T) {
		alg, err := l.Algorithm("panicky", map[string]string{"in": "Plan"})
		must.NoError(t, err)
		must.True(t, alg.(planner.ModelDriven).SpeedModels())
		built := news.Load()
		plans.Store(1)
		_, err = alg.Plan(req)
		must.ErrorContains(t, err, `algorithm "panicky" panicked in Plan: runtime error: index out of range`)
		var rerr runtime.Error
		must.True(t, errors.As(err, &rerr), must.Sprint("the panic value is wrapped"))
		must.StrContains(t, logs.String(), "[ERROR] algorithm panicked: algorithm=panicky call=Plan")
		must.StrContains(t, logs.String(), "runtime/debug.Stack")

		dec, err := alg.Plan(req)
		must.NoError(t, err)
		must.NotNil(t, dec)
		must.Eq(t, built+1, news.Load(), must.Sprint("the instance that panicked is replaced"))
		_, err = alg.Plan(req)
		must.NoError(t, err)
		must.Eq(t, built+1, news.Load(), must.Sprint("a working instance is kept"))

		plans.Store(1)
		_, err = alg.Plan(req)
		must.Error(t, err)
		newFails = true
		_, err = alg.Plan(req)
		must.EqError(t, err, `algorithm "panicky" panicked in New: cannot build`)
		newFails = false
		_, err = alg.Plan(req)
		must.NoError(t, err)
	})

	t.Run("status", func(t *testing.T) {
		newFails = true
		defer func() { newFails = false }()
		s := status(l, "panicky")
		must.Eq(t, structs.PluginUnhealthy, s.Health)
		must.Eq(t, `algorithm "panicky" panicked in New: cannot build`, s.Error)
		must.Eq(t, structs.PluginHealthy, status(l, "optimus").Health)
	})
}
