package algorithm_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/planner/dorm"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	pb "github.com/caravan-sched/caravan/plugins/algorithm/proto/v1"
	"github.com/caravan-sched/caravan/version"
	"github.com/shoenig/test/must"
)

// TestContract_Builtins runs every built-in in-process and through
// go-plugin's gRPC transport on the same random requests: the decisions
// are identical, and valid.
func TestContract_Builtins(t *testing.T) {
	for _, name := range builtin.Names() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			local := algorithm.FromPlanner(builtin.Algorithms[name](), version.Version)
			remote := algorithm.TestClient(t, algorithm.FromPlanner(builtin.Algorithms[name](), version.Version))

			info, err := remote.PluginInfo(ctx)
			must.NoError(t, err)
			want, _ := local.PluginInfo(ctx)
			must.Eq(t, want, info)
			api, err := algorithm.Negotiate(info, algorithm.APIVersions)
			must.NoError(t, err)
			must.NoError(t, remote.SetConfig(ctx, api, nil))

			rng := rand.New(rand.NewPCG(7, uint64(len(name))))
			for i := range 50 {
				req := planner.RandomRequest(rng)
				if name == dorm.Name && (len(req.Jobs) > 8 || len(req.Nodes) > 8) {
					continue // as in planner/builtin's property test
				}
				in, err := local.Plan(context.Background(), req)
				must.NoError(t, err)
				over, err := remote.Plan(context.Background(), req)
				must.NoError(t, err)
				must.Eq(t, in, over, must.Sprintf("request %d", i))
				must.NoError(t, planner.CheckDecision(req, over))
			}
		})
	}
}

// TestContract_Config: options reach the plugin's SetConfig and its
// validation errors come back with their message.
func TestContract_Config(t *testing.T) {
	remote := algorithm.TestClient(t, algorithm.FromPlanner(builtin.Algorithms["optimus"](), version.Version))
	ctx := context.Background()
	must.NoError(t, remote.SetConfig(ctx, algorithm.APIVersion1, map[string]string{"young_factor": "0.9"}))
	err := remote.SetConfig(ctx, algorithm.APIVersion1, map[string]string{"young_factor": "two"})
	must.ErrorContains(t, err, "young_factor")

	fifo := algorithm.TestClient(t, algorithm.FromPlanner(builtin.Algorithms["fifo"](), version.Version))
	must.ErrorContains(t, fifo.SetConfig(ctx, algorithm.APIVersion1, map[string]string{"x": "1"}), `algorithm "fifo" takes no options`)
}

// TestContract_Capabilities: a plugin's declaration crosses the wire
// whole and follows its options, as a built-in's does in-process.
func TestContract_Capabilities(t *testing.T) {
	ctx := context.Background()
	remote := algorithm.TestClient(t, algorithm.FromPlanner(builtin.Algorithms["specon"](), version.Version))
	info, err := remote.PluginInfo(ctx)
	must.NoError(t, err)
	must.Eq(t, planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorProgress}, FixedSize: true}, info.Capabilities)

	must.NoError(t, remote.SetConfig(ctx, algorithm.APIVersion1, map[string]string{"base": "goodput-las"}))
	info, err = remote.PluginInfo(ctx)
	must.NoError(t, err)
	must.Eq(t, planner.Capabilities{
		Reads:        []planner.Estimator{planner.EstimatorAttainedService, planner.EstimatorGoodput, planner.EstimatorProgress},
		ChoosesBatch: true,
	}, info.Capabilities)
}

// TestCapabilitiesFromProto: the host keeps the estimators it knows, once
// each, and drops the others.
func TestCapabilitiesFromProto(t *testing.T) {
	got := algorithm.CapabilitiesFromProto(&pb.Capabilities{
		Reads:         []string{"usage", "gpu_temperature", "usage", "loss", ""},
		FixedSize:     true,
		Uncoordinated: true,
	})
	must.Eq(t, planner.Capabilities{Reads: []planner.Estimator{planner.EstimatorUsage, planner.EstimatorLoss}, FixedSize: true, Uncoordinated: true}, got)
	must.Eq(t, planner.Capabilities{}, algorithm.CapabilitiesFromProto(nil))
	all := planner.Capabilities{Reads: planner.Estimators, SpeedModels: true, FixedSize: true, ChoosesBatch: true, Uncoordinated: true}
	must.Eq(t, all, algorithm.CapabilitiesFromProto(algorithm.CapabilitiesToProto(all)))
}

func TestNegotiate(t *testing.T) {
	v, err := algorithm.Negotiate(&algorithm.PluginInfo{Name: "p", APIVersions: []string{"v0", "v1", "v2"}}, []string{"v2", "v1"})
	must.NoError(t, err)
	must.Eq(t, "v2", v)
	_, err = algorithm.Negotiate(&algorithm.PluginInfo{Name: "p", APIVersions: []string{"v9"}}, algorithm.APIVersions)
	must.ErrorIs(t, err, algorithm.ErrNoCommonVersion)
	must.ErrorContains(t, err, `plugin "p" speaks [v9], Caravan speaks [v1]`)
}
