package loader

import (
	"context"
	"testing"

	"github.com/caravan-sched/caravan/planner"
	"github.com/caravan-sched/caravan/planner/builtin"
	"github.com/caravan-sched/caravan/plugins/algorithm"
	"github.com/caravan-sched/caravan/version"
	"github.com/hashicorp/go-hclog"
)

// BenchmarkPlan runs one request of 1,000 jobs on 2,000 nodes through a
// built-in three ways, side by side: in-process; over go-plugin's gRPC
// transport within the process (conversion, encoding and the loopback
// connection); and in the built-in's plugin binary, a separate process,
// as the server runs external plugins.
func BenchmarkPlan(b *testing.B) {
	req := planner.LargeRequest(b, 2000, 1000)
	for _, name := range []string{"fifo", "optimus"} {
		local := builtin.Algorithms[name]()
		b.Run(name+"/in-process", func(b *testing.B) {
			for b.Loop() {
				if _, err := local.Plan(req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/grpc", func(b *testing.B) {
			remote := algorithm.TestClient(b, algorithm.FromPlanner(builtin.Algorithms[name](), version.Version))
			for b.Loop() {
				if _, err := remote.Plan(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/plugin-process", func(b *testing.B) {
			l, err := New(Config{Plugins: []*PluginConfig{{Name: "ext", Path: BuildPlugin(b, "plugins/builtin/algorithm/"+name)}}})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Shutdown()
			alg, err := l.Algorithm("ext", nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := alg.Plan(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPluginStart measures starting a plugin process until it
// answered PluginInfo and took its options: what the loader does at agent
// start and after a plugin failed.
func BenchmarkPluginStart(b *testing.B) {
	bin := BuildPlugin(b, "examples/plugin-random")
	logger := hclog.NewNullLogger()
	for b.Loop() {
		l, err := New(Config{Plugins: []*PluginConfig{{Name: "random", Path: bin}}, Logger: logger})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Algorithm("random", nil); err != nil {
			b.Fatal(err)
		}
		l.Shutdown()
	}
}
