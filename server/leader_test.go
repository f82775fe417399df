package server

import (
	"testing"

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
