package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"
)

// TestSupports_GateOnEveryServer: a message type 0.2.0 added is written
// only once every server of the Raft configuration records 0.2.0 or later.
// A second server in the configuration (a non-voter at an address nobody
// answers, standing for a server of 0.1.0) closes the gate until its
// member record says a version that applies the type.
func TestSupports_GateOnEveryServer(t *testing.T) {
	s := leaderOf(t, TestServer(t, TestConfig(t, simDriver(t, 1))))
	ctx := context.Background()
	// The leader's own member record is committed just after it is
	// elected: until then, its gate is closed too.
	agent.WaitFor(t, 10*time.Second, "the leader's member record", func() error {
		if got := s.sampleType(); got != fsm.SampleAppendType {
			return fmt.Errorf("one server of this version commits samples as %s", got)
		}
		return nil
	})

	must.NoError(t, s.raft.AddNonvoter("old", "127.0.0.1:1", 0, 0).Error())
	record := func(version string) {
		t.Helper()
		_, _, err := s.apply(ctx, fsm.MemberUpsertType, &fsm.MemberUpsertRequest{Member: &structs.Member{ID: "old", RaftAddr: "127.0.0.1:1", HTTPAddr: "127.0.0.1:2", Version: version}})
		must.NoError(t, err)
	}
	intervalJob := structs.MockJob()
	intervalJob.Elastic.Checkpoint = &structs.Checkpoint{Interval: time.Minute}
	intervalJob.Canonicalize()
	for _, tc := range []struct {
		name, version string // "-" for no member record
		open          bool
	}{
		{name: "no record", version: "-"},
		{name: "a record of 0.1.0 (no version)", version: ""},
		{name: "an earlier version", version: "0.1.9"},
		{name: "garbage", version: "new"},
		{name: "a prerelease of 0.2.0", version: "0.2.0-dev", open: true},
		{name: "a later version", version: "0.3.1", open: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.version != "-" {
				record(tc.version)
			}
			_, _, err := s.apply(ctx, fsm.SampleAppendType, &fsm.SampleBatchRequest{Samples: []structs.Sample{{JobID: "none", Time: 1}}})
			if !tc.open {
				must.ErrorIs(t, err, ErrUpgradeInProgress)
				must.ErrorContains(t, err, `SampleAppend entries need every server at 0.2.0 or later, and server old records`)
				must.Eq(t, fsm.SampleBatchType, s.sampleType())
				_, _, err = s.apply(ctx, fsm.ACLBootstrapResetType, &fsm.ACLBootstrapResetRequest{Token: &structs.ACLToken{}})
				must.ErrorIs(t, err, ErrUpgradeInProgress)
				_, err = s.registerJob(ctx, intervalJob, false)
				must.ErrorIs(t, err, ErrUpgradeInProgress, must.Sprint("an older server would drop the checkpoint interval"))
				req := httptest.NewRequest(http.MethodPut, "/v1/acl/policy/queues", strings.NewReader(`{"Rules": "queue { policy = \"read\" }"}`))
				req.SetPathValue("name", "queues")
				_, err = s.aclPolicyApply(httptest.NewRecorder(), req)
				must.ErrorContains(t, err, "has a queue rule, which some servers do not know yet", must.Sprint("an older server would grant its tokens nothing"))
				return
			}
			must.NoError(t, err)
			must.Eq(t, fsm.SampleAppendType, s.sampleType())
			_, err = s.registerJob(ctx, intervalJob, false)
			must.NoError(t, err)
		})
	}
	must.NoError(t, s.raft.RemoveServer(raft.ServerID("old"), 0, 0).Error())
}
