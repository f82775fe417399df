package algorithm

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/caravan-sched/caravan/planner"
	"github.com/hashicorp/go-plugin"
)

// APIVersion1 is the version of the contract in proto/v1.
const APIVersion1 = "v1"

// APIVersions lists the contract versions this build speaks, newest first.
var APIVersions = []string{APIVersion1}

// PluginName is the algorithm's key in go-plugin's plugin set.
const PluginName = "algorithm"

// Handshake is the handshake every algorithm plugin and Caravan share. Its
// magic cookie keeps a plugin binary from being run by hand by mistake; it
// is no security measure (SecureConfig checksums are).
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "CARAVAN_ALGORITHM_PLUGIN",
	MagicCookieValue: "4d1f6b0c-caravan-algorithm",
}

// PluginInfo describes an algorithm.
type PluginInfo struct {
	// Name is the name operators select the algorithm by.
	Name    string
	Version string
	// APIVersions lists the contract versions the algorithm speaks.
	APIVersions []string
	// Capabilities are what the algorithm declares under the options
	// last set; the host asks again after every SetConfig.
	Capabilities Capabilities
}

// Capabilities are what the host should know of how an algorithm decides:
// the declaration a built-in makes as a planner.Describer, which a plugin
// makes in its PluginInfo.
type Capabilities = planner.Capabilities

// Algorithm is the contract every algorithm meets, built-in or plugin.
// Implementations are called by one goroutine at a time.
type Algorithm interface {
	// PluginInfo names the algorithm and what it speaks.
	PluginInfo(ctx context.Context) (*PluginInfo, error)
	// SetConfig validates options and applies them all, or none: an
	// invalid option returns an error naming it and changes nothing.
	// apiVersion is the contract version the host negotiated.
	SetConfig(ctx context.Context, apiVersion string, options map[string]string) error
	// Plan decides a placement for every job of req, under
	// planner.Algorithm's rules. It must not modify req. In every call
	// the host gives up when ctx is done.
	Plan(ctx context.Context, req *planner.Request) (*planner.Decision, error)
}

// ErrNoCommonVersion is returned by Negotiate when the plugin and the host
// share no API version.
var ErrNoCommonVersion = errors.New("no API version in common")

// Negotiate returns the newest of the host's versions that the plugin
// also speaks, as Nomad's plugin loader negotiates device and driver
// plugin APIs.
func Negotiate(info *PluginInfo, host []string) (string, error) {
	for _, v := range host {
		if slices.Contains(info.APIVersions, v) {
			return v, nil
		}
	}
	return "", fmt.Errorf("plugin %q speaks %v, Caravan speaks %v: %w", info.Name, info.APIVersions, host, ErrNoCommonVersion)
}

// FromPlanner returns a planner.Algorithm under the contract, as the
// built-ins run in-process and in their plugin binaries. SetConfig passes
// options to a planner.Configurable and refuses them otherwise;
// PluginInfo's capabilities are planner.CapabilitiesOf the algorithm as it
// is configured then.
func FromPlanner(alg planner.Algorithm, version string) Algorithm {
	return &inProcess{alg: alg, version: version}
}

type inProcess struct {
	alg     planner.Algorithm
	version string
}

func (a *inProcess) PluginInfo(context.Context) (*PluginInfo, error) {
	return &PluginInfo{
		Name: a.alg.Name(), Version: a.version, APIVersions: APIVersions,
		Capabilities: planner.CapabilitiesOf(a.alg),
	}, nil
}

func (a *inProcess) SetConfig(_ context.Context, _ string, options map[string]string) error {
	if c, ok := a.alg.(planner.Configurable); ok {
		return c.SetConfig(options)
	}
	if len(options) > 0 {
		return fmt.Errorf("algorithm %q takes no options", a.alg.Name())
	}
	return nil
}

func (a *inProcess) Plan(ctx context.Context, req *planner.Request) (*planner.Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return a.alg.Plan(req)
}
