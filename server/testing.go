package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/caravan-sched/caravan/api"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// TestConfig returns a Config for tests: loopback addresses on free ports,
// Raft timeouts short enough to elect a leader in well under a second, a
// data dir under t.TempDir(), one-second rounds and fast polling.
//
// A driver that is also a MetricsSource or a Profiler, or has a clock of
// its own (the sim driver), is wired as those too.
func TestConfig(t testing.TB, driver Driver) Config {
	metrics, _ := driver.(MetricsSource)
	profiler, _ := driver.(Profiler)
	var clock func() time.Time
	if c, ok := driver.(interface{ Now() time.Time }); ok {
		clock = c.Now
	}
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout = 500 * time.Millisecond
	rc.ElectionTimeout = 500 * time.Millisecond
	rc.LeaderLeaseTimeout = 250 * time.Millisecond
	rc.CommitTimeout = 5 * time.Millisecond
	return Config{
		NodeName:      t.Name(),
		DataDir:       t.TempDir(),
		HTTPAddr:      "127.0.0.1:0",
		RaftAddr:      "127.0.0.1:0",
		RetryInterval: 100 * time.Millisecond,
		Interval:      time.Second,
		Poll:          50 * time.Millisecond,
		Driver:        driver,
		Metrics:       metrics,
		Profiler:      profiler,
		Clock:         clock,
		Logger:        testLogger(t),
		RaftConfig:    rc,
	}
}

// testLogger logs at the level CARAVAN_TEST_LOG_LEVEL names, to stderr;
// tests are silent by default.
func testLogger(t testing.TB) hclog.Logger {
	level := hclog.LevelFromString(os.Getenv("CARAVAN_TEST_LOG_LEVEL"))
	if level == hclog.NoLevel {
		level = hclog.Off
	}
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: level, Output: os.Stderr})
}

// TestServer starts a server and shuts it down when the test ends.
func TestServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { s.Shutdown() })
	return s
}

// ErrTestDriverDown is what a TestOutageDriver answers while it is down:
// what Nomad's API client answers when Nomad's servers are down.
var ErrTestDriverDown = errors.New("dial tcp 127.0.0.1:4646: connection refused")

// TestOutageDriver is a driver whose cluster tests can make unreachable:
// while Down is set, Nodes and Status fail, and so does Enact, unless
// only EnactDown is set, which fails plans alone.
type TestOutageDriver struct {
	Driver
	Down, EnactDown atomic.Bool
}

func (d *TestOutageDriver) Nodes(ctx context.Context) ([]*structs.Node, error) {
	if d.Down.Load() {
		return nil, ErrTestDriverDown
	}
	return d.Driver.Nodes(ctx)
}

func (d *TestOutageDriver) Status(ctx context.Context) ([]*structs.JobReport, error) {
	if d.Down.Load() {
		return nil, ErrTestDriverDown
	}
	return d.Driver.Status(ctx)
}

func (d *TestOutageDriver) Enact(ctx context.Context, plan *structs.Plan, jobs []*structs.Job) ([]*structs.JobReport, error) {
	if d.Down.Load() || d.EnactDown.Load() {
		return nil, ErrTestDriverDown
	}
	return d.Driver.Enact(ctx, plan, jobs)
}

// TestQueueJob is an all-reduce job of namespace ns whose workers take one
// GPU each, from min to max of them, that trains for a long time: the
// queue tests' (server, ui).
func TestQueueJob(id, ns string, min, max int) *api.JobRegisterRequest {
	hcl := fmt.Sprintf(`
job %q {
  namespace = %q
  training {
    architecture      = "allreduce"
    global_batch_size = 256
    steps_per_epoch   = 100
    convergence {
      max_epochs = 100000
    }
  }
  elastic {
    workers {
      min = %d
      max = %d
    }
  }
  worker {
    driver = "raw_exec"
    config {
      command = "train"
    }
    resources {
      cpu    = 100
      memory = 64
      device "gpu" {
        count = 1
      }
    }
  }
}
`, id, ns, min, max)
	return &api.JobRegisterRequest{JobHCL: hcl, Filename: id + ".hcl"}
}
