package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/drivers/sim"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestLeader_RestartOnlyWhileLeading asks every server of a cluster to
// restart its leader loop, as a snapshot restore does: the leader runs a
// new loop, and a follower, which Raft told it does not lead, runs none.
func TestLeader_RestartOnlyWhileLeading(t *testing.T) {
	servers := cluster(t, 3, newStaticDriver())
	leader := leaderOf(t, servers...)
	for _, s := range servers {
		s.restartLeader()
		must.Eq(t, s == leader, s.loopRunning.Load(), must.Sprintf("server %s leads: %t", s.ID(), s == leader))
	}
}

// versionedDriver is a sim driver whose nodes change when tests say so:
// it counts the leader's reads of them, and hides one node until shown.
type versionedDriver struct {
	*sim.Driver
	version, reads atomic.Uint64
	hide           atomic.Bool
}

func (d *versionedDriver) NodesVersion() uint64 { return d.version.Load() }

func (d *versionedDriver) Nodes(ctx context.Context) ([]*structs.Node, error) {
	d.reads.Add(1)
	nodes, err := d.Driver.Nodes(ctx)
	if d.hide.Load() && len(nodes) > 0 {
		nodes = nodes[1:]
	}
	return nodes, err
}

// TestLeader_NodesReadWhenVersionMoves: a NodesVersioner's nodes are read
// once per version, not at every step, and a change they hold at a new
// version is committed.
func TestLeader_NodesReadWhenVersionMoves(t *testing.T) {
	cluster := sim.DefaultConfig()
	cluster.Nodes = 3
	d := &versionedDriver{Driver: sim.NewDriver(sim.DriverConfig{Cluster: cluster})}
	d.version.Store(1)
	cfg := TestConfig(t, d)
	cfg.Manual = true
	s := TestServer(t, cfg)
	ctx := context.Background()
	agent.WaitFor(t, 10*time.Second, "the server leads", func() error { return s.Step(ctx) })
	committed := func() int {
		nodes, err := state.Nodes(s.State().Txn(), nil)
		must.NoError(t, err)
		return len(nodes)
	}
	must.Eq(t, 3, committed())
	reads := d.reads.Load()
	for range 5 {
		must.NoError(t, s.Step(ctx))
	}
	must.Eq(t, reads, d.reads.Load(), must.Sprint("no read while the version stays"))

	d.hide.Store(true)
	must.NoError(t, s.Step(ctx))
	must.Eq(t, 3, committed(), must.Sprint("a change at the same version is not seen"))
	d.version.Add(1)
	must.NoError(t, s.Step(ctx))
	must.Eq(t, reads+1, d.reads.Load())
	must.Eq(t, 2, committed(), must.Sprint("the change at the new version is committed"))
}
