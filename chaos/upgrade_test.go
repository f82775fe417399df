package chaos

import (
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
)

// TestChaos_RollingUpgrade starts three agents of the previous release
// (tools/previous-release, built by `make tools` into
// .tools/bin/caravan-previous), with ACLs and mutual TLS, under four
// clients, and upgrades them to this checkout's build one at a time,
// followers first and the leader last: a follower interrupted (it leaves
// and joins again), a follower SIGKILLed (it comes back with its Raft
// state), the leader interrupted. After each step the server answers
// with the new version and the cluster has a leader and three voters
// before the next. It checks that no acknowledged write was lost or made
// twice, that every read of a write just acknowledged found it, and that
// every server runs the new build at the end.
func TestChaos_RollingUpgrade(tt *testing.T) {
	t := &lastWords{TB: tt}
	tt.Cleanup(t.repeat)
	prev := agent.PreviousCaravan(t)
	nw := NewNetwork(t, 3)
	next := agent.BuildCaravan(t)
	from, to := agent.Version(t, prev.Bin), agent.Version(t, next)
	if from == to {
		t.Fatalf("the previous release (%s) and this build both say %q: an upgrade must be visible in /v1/agent/self", prev.Tag, from)
	}
	t.Logf("upgrading from %s (%s %s) to %s", from, prev.Tag, prev.Commit, to)

	secure := NewSecure(t)
	c := StartCluster(t, nw, prev.Bin, agentBody+secure.Body())
	secure.Apply(t, c)

	start := time.Now()
	r := Run(t, c, Schedule{Writers: 4, Upgrade: &Upgrade{To: next, Version: to, Stops: []StopMode{Leave, Crash, Leave}}})
	t.Logf("UPGRADE %s to %s under load, in %s:\n%s", prev.Tag, to, time.Since(start).Round(time.Second), r)
	if !r.OK() {
		t.Errorf("the cluster broke its promises during the upgrade:\n%s", r)
	}
	if r.AckedJobs == 0 || r.AckedSamples == 0 {
		t.Errorf("nothing was acknowledged: %d jobs, %d samples", r.AckedJobs, r.AckedSamples)
	}
	if len(r.Rejoins) != c.N() {
		t.Errorf("%d upgrade steps, want %d", len(r.Rejoins), c.N())
	}
	for i, v := range r.Versions {
		if v != to {
			t.Errorf("server %d runs %q at the end, want %q", i, v, to)
		}
	}
	if len(r.Versions) != c.N() {
		t.Errorf("%d servers said their version, want %d", len(r.Versions), c.N())
	}
}
