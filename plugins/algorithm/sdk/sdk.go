// Package sdk is what an algorithm plugin's author needs: a Plan function,
// a Plugin that wraps it, and Serve, which runs it as a go-plugin binary
// that Caravan launches:
//
//	func main() {
//		sdk.Serve(&sdk.Plugin{Name: "random", Version: "0.1.0", Func: plan})
//	}
//
// A plan reads the planner's request: nodes with their capacity, jobs with
// their specs, current placements, and the models the server fitted
// (planner.Job's Loss and Speed, with RemainingSteps, Speed.At and
// Loss.At the very functions the server fits). planner.NewCluster tracks
// free capacity and constraints; planner/placement spreads a job's tasks
// over nodes as the built-ins do. The decision must hold one placement per
// job; the server checks it (planner.CheckDecision) and falls back to
// another algorithm when it breaks a rule.
package sdk

import (
	"context"
	"fmt"
	"os"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// PlanFunc decides placements for every job of req; options are the
// plugin's settings as last set.
type PlanFunc func(req *planner.Request, options map[string]string) (*planner.Decision, error)

// Plugin is an algorithm made of a PlanFunc. It implements
// algorithm.Algorithm.
type Plugin struct {
	Name    string
	Version string
	Func    PlanFunc
	// Validate checks options before SetConfig applies them; nil means
	// the plugin takes none.
	Validate func(options map[string]string) error
	// SpeedModels: Plan sizes jobs from their fitted speed models, so
	// Caravan should profile new jobs first.
	SpeedModels bool
	// Capabilities, when not nil, declares what Plan reads and does under
	// options (planner.Capabilities; its SpeedModels is ORed with the
	// field above). Nil declares that Plan reads only the jobs' specs and
	// placements and sizes jobs within their elastic bounds.
	Capabilities func(options map[string]string) algorithm.Capabilities

	options map[string]string
}

var _ algorithm.Algorithm = (*Plugin)(nil)

// Log is the plugin's logger. Caravan shows its lines in its own log,
// named plugin.<name>.
var Log = hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: os.Stderr, JSONFormat: true})

// PluginInfo implements algorithm.Algorithm.
func (p *Plugin) PluginInfo(context.Context) (*algorithm.PluginInfo, error) {
	var c algorithm.Capabilities
	if p.Capabilities != nil {
		c = p.Capabilities(p.options)
	}
	c.SpeedModels = c.SpeedModels || p.SpeedModels
	return &algorithm.PluginInfo{
		Name: p.Name, Version: p.Version, APIVersions: algorithm.APIVersions,
		Capabilities: c,
	}, nil
}

// SetConfig implements algorithm.Algorithm.
func (p *Plugin) SetConfig(_ context.Context, _ string, options map[string]string) error {
	switch {
	case p.Validate != nil:
		if err := p.Validate(options); err != nil {
			return err
		}
	case len(options) > 0:
		return fmt.Errorf("algorithm %q takes no options", p.Name)
	}
	p.options = options
	return nil
}

// Plan implements algorithm.Algorithm.
func (p *Plugin) Plan(ctx context.Context, req *planner.Request) (*planner.Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return p.Func(req, p.options)
}

// Serve runs alg as a plugin until Caravan ends it. Call it from main;
// the binary is useless run by hand.
func Serve(alg algorithm.Algorithm) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: algorithm.Handshake,
		Plugins:         algorithm.PluginSet(alg),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return plugin.DefaultGRPCServer(append(opts, algorithm.ServerOptions()...))
		},
		Logger: Log,
	})
}
