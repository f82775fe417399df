package loader

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/version"
	"github.com/hashicorp/go-hclog"
)

// inProcess is a built-in algorithm as a Loader hands it out, under a set
// of options. It runs in-process, so a panic in the algorithm would take
// the server down: every call into the algorithm recovers one and returns
// it as an error naming the algorithm, as a crashed plugin's call fails,
// and the next Plan runs on a fresh instance with the same options, as a
// crashed plugin is started again. Calls into the instance are not
// serialized: the algorithm's own concurrency contract holds.
type inProcess struct {
	name    string
	factory planner.Factory
	options map[string]string
	// info is what the algorithm said of itself when built.
	info *algorithm.PluginInfo
	log  hclog.Logger

	mu sync.Mutex
	// alg is the instance Plan runs; nil after a panic until the next
	// Plan builds another.
	alg planner.Algorithm
}

var (
	_ planner.Algorithm   = (*inProcess)(nil)
	_ planner.ModelDriven = (*inProcess)(nil)
	_ planner.Describer   = (*inProcess)(nil)
)

// newBuiltin builds the algorithm, sets its options and reads its
// capabilities, any of which may fail or panic.
func newBuiltin(name string, factory planner.Factory, options map[string]string, log hclog.Logger) (*inProcess, error) {
	b := &inProcess{name: name, factory: factory, options: options, log: log}
	alg, err := b.instance()
	if err != nil {
		return nil, err
	}
	var info *algorithm.PluginInfo
	if err := b.guard("PluginInfo", func() (err error) {
		info, err = algorithm.FromPlanner(alg, version.Version).PluginInfo(context.Background())
		return err
	}); err != nil {
		return nil, err
	}
	b.alg, b.info = alg, info
	return b, nil
}

// instance returns a new instance of the algorithm with the options set.
func (b *inProcess) instance() (planner.Algorithm, error) {
	var alg planner.Algorithm
	if err := b.guard("New", func() error {
		alg = b.factory()
		return nil
	}); err != nil {
		return nil, err
	}
	if err := b.guard("SetConfig", func() error {
		return algorithm.FromPlanner(alg, version.Version).SetConfig(context.Background(), algorithm.APIVersion1, b.options)
	}); err != nil {
		return nil, fmt.Errorf("options of algorithm %q: %w", b.name, err)
	}
	return alg, nil
}

// Name is the name the algorithm is registered under.
func (b *inProcess) Name() string { return b.name }

// SpeedModels reports the algorithm's capability as it said when built.
func (b *inProcess) SpeedModels() bool { return b.info.Capabilities.SpeedModels }

// Capabilities are what the algorithm declared when built, under the
// handle's options.
func (b *inProcess) Capabilities() planner.Capabilities { return b.info.Capabilities }

// Plan runs the algorithm. A panic is returned as an error, and the
// instance that panicked is never used again.
func (b *inProcess) Plan(req *planner.Request) (*planner.Decision, error) {
	b.mu.Lock()
	alg := b.alg
	b.mu.Unlock()
	if alg == nil {
		fresh, err := b.instance()
		if err != nil {
			return nil, err
		}
		alg = fresh
		b.mu.Lock()
		b.alg = fresh
		b.mu.Unlock()
	}
	var dec *planner.Decision
	err := b.guard("Plan", func() (err error) {
		dec, err = alg.Plan(req)
		return err
	})
	if pe := (*panicError)(nil); errors.As(err, &pe) {
		b.mu.Lock()
		if b.alg == alg {
			b.alg = nil
		}
		b.mu.Unlock()
	}
	return dec, err
}

// panicError is a panic recovered from an algorithm.
type panicError struct {
	name, call string
	value      any
}

func (e *panicError) Error() string {
	return fmt.Sprintf("algorithm %q panicked in %s: %v", e.name, e.call, e.value)
}

// Unwrap returns the panic value when it is an error, such as a
// runtime.Error.
func (e *panicError) Unwrap() error {
	err, _ := e.value.(error)
	return err
}

// guard runs fn, one call into the algorithm, and turns a panic into a
// *panicError, logging the stack.
func (b *inProcess) guard(call string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			b.log.Error("algorithm panicked", "algorithm", b.name, "call", call, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = &panicError{name: b.name, call: call, value: r}
		}
	}()
	return fn()
}
