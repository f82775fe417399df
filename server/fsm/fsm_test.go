package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"
)

// testFSM applies entries at increasing indexes.
type testFSM struct {
	*FSM
	t     testing.TB
	index uint64
	// entries are the log entries applied, in order.
	entries [][]byte
}

func newTestFSM(t testing.TB) *testFSM {
	f, err := New(hclog.NewNullLogger(), nil)
	must.NoError(t, err)
	return &testFSM{FSM: f, t: t}
}

func (f *testFSM) apply(typ MessageType, req any) any {
	f.t.Helper()
	buf, err := Encode(typ, req)
	if _, known := commands[typ&^IgnoreUnknownTypeFlag]; !known {
		// An entry of a newer version's type: Encode knows no such type.
		var b bytes.Buffer
		b.WriteByte(byte(typ))
		buf, err = nil, codec.NewEncoder(&b, structs.MsgpackHandle).Encode(req)
		buf = b.Bytes()
	}
	must.NoError(f.t, err)
	f.index++
	f.entries = append(f.entries, buf)
	return f.Apply(&raft.Log{Index: f.index, Type: raft.LogCommand, Data: buf})
}

func (f *testFSM) mustApply(typ MessageType, req any) {
	f.t.Helper()
	if err, ok := f.apply(typ, req).(error); ok {
		f.t.Fatalf("apply %s: %v", typ, err)
	}
}

func mockJob(id string) *structs.Job {
	j := structs.MockJob()
	j.ID = id
	j.Canonicalize()
	return j
}

func placement(id string, workers int, node string) *structs.Placement {
	return &structs.Placement{
		Namespace: structs.DefaultNamespace, JobID: id, NumPS: 1, NumWorkers: workers,
		Nodes: []*structs.NodeTasks{{NodeID: node, PS: 1, Workers: workers}}, Reason: "test",
	}
}

// populate applies one entry of every message type.
func populate(f *testFSM) {
	f.mustApply(JobRegisterType, &JobRegisterRequest{Job: mockJob("a"), MustBeNew: true, Time: 10})
	f.mustApply(JobRegisterType, &JobRegisterRequest{Job: mockJob("b"), MustBeNew: true, Time: 11})
	f.mustApply(NodesReplaceType, &NodesReplaceRequest{Nodes: []*structs.Node{{ID: "n1", Status: structs.NodeStatusReady, Eligible: true, CPU: 1000, MemoryMB: 1000}}})
	f.mustApply(PlanApplyType, &PlanApplyRequest{
		Plan:   &structs.Plan{Algorithm: "optimus", CreateTime: 20, Placements: []*structs.Placement{placement("a", 2, "n1"), placement("b", 1, "n1")}},
		Models: []*structs.JobModel{{Namespace: structs.DefaultNamespace, JobID: "a", Loss: []float64{0.2, 1, 0.1}, SpeedKind: "sync", Speed: []float64{1, 2, 3, 4, 5}, Step: 40}},
	})
	f.mustApply(DecisionApplyType, &DecisionApplyRequest{Algorithm: "optimus", Time: 21, Placements: []*structs.Placement{placement("b", 2, "n1")},
		Models: []*structs.JobModel{{Namespace: structs.DefaultNamespace, JobID: "b", Loss: []float64{0.3, 1, 0.1}}}})
	f.mustApply(ObservedUpsertType, &ObservedUpsertRequest{Time: 22, Observed: []*structs.Observed{
		{Namespace: structs.DefaultNamespace, JobID: "a", Placement: placement("a", 2, "n1")},
		{Namespace: structs.DefaultNamespace, JobID: "b", Placement: placement("b", 1, "n1"), Change: &structs.Change{Target: placement("b", 2, "n1"), PlanIndex: 5, Phase: structs.ChangeCheckpointing}},
	}})
	f.mustApply(UsageUpsertType|IgnoreUnknownTypeFlag, &UsageUpsertRequest{Time: 23, Usage: []*structs.JobUsage{usage("a", 100, 30)}})
	f.mustApply(SampleBatchType, &SampleBatchRequest{Samples: []structs.Sample{{JobID: "a", Step: 40, Loss: 1.5, StepTimeS: 0.5, NumPS: 1, NumWorkers: 2}}, Cursor: 7})
	again := structs.Sample{JobID: "a", Step: 41, Loss: 1.4, StepTimeS: 0.5, NumPS: 1, NumWorkers: 2, Time: 24}
	f.mustApply(SampleAppendType, &SampleBatchRequest{Samples: []structs.Sample{again, again}, Cursor: 8})
	f.mustApply(SchedulerConfigType, &SchedulerConfigRequest{Config: &structs.SchedulerConfig{Algorithm: "drf", Options: map[string]string{"k": "v"}}, Time: 30})
	f.mustApply(MemberUpsertType, &MemberUpsertRequest{Member: &structs.Member{ID: "s1", RaftAddr: "127.0.0.1:1", HTTPAddr: "127.0.0.1:2"}})
	f.mustApply(MemberUpsertType, &MemberUpsertRequest{Member: &structs.Member{ID: "s2", RaftAddr: "127.0.0.1:3", HTTPAddr: "127.0.0.1:4"}})
	f.mustApply(MemberDeleteType, &MemberDeleteRequest{ID: "s2"})
	f.mustApply(EventAppendType, &EventAppendRequest{Event: &structs.Event{Time: 40, Type: structs.EventAlgorithmFallback, Message: "test"}})
	f.mustApply(JobStatusType, &JobStatusRequest{Namespace: structs.DefaultNamespace, JobID: "b", Status: structs.JobStatusComplete, Description: "converged", Time: 50})
	f.mustApply(JobStopType, &JobStopRequest{Namespace: structs.DefaultNamespace, JobID: "a", Time: 60})
	f.mustApply(JobRejectType, &JobRejectRequest{Namespace: structs.DefaultNamespace, JobID: "r", Name: "r", NomadIndex: 7,
		Description: "r.nomad.hcl:3:5: Unsupported argument", Time: 65})
	populateGC(f)
	populateACL(f)
	populateQueues(f)
	boot, err := state.ACLBootstrapped(f.State().Txn())
	must.NoError(f.t, err)
	f.mustApply(ACLBootstrapResetType, &ACLBootstrapResetRequest{Time: 80, ResetIndex: boot.Index,
		Token: &structs.ACLToken{AccessorID: "acc-reset", SecretID: "sec-reset", Name: "Bootstrap Token", Type: structs.ACLManagementToken, CreateTime: 80}})
}

// populateGC applies one entry of each retention message type: job g
// ends and is collected, and bounds are set.
func populateGC(f *testFSM) {
	f.mustApply(JobRegisterType, &JobRegisterRequest{Job: mockJob("g"), MustBeNew: true, Time: 66})
	f.mustApply(JobStatusType, &JobStatusRequest{Namespace: structs.DefaultNamespace, JobID: "g", Status: structs.JobStatusFailed, Description: "tasks failed", Time: 67})
	f.mustApply(JobGCType, &JobGCRequest{Time: 68, Jobs: []state.Collectable{{Namespace: structs.DefaultNamespace, JobID: "g", ModifyIndex: f.index}}})
	f.mustApply(RetentionSetType, &RetentionSetRequest{Retention: &structs.Retention{MaxJobSamples: 512, MaxJobPlacements: 32, MaxEvents: 2048}})
}

// populateACL applies one entry of every ACL message type, flagged as the
// leader sends them.
func populateACL(f *testFSM) {
	f.mustApply(ACLBootstrapType|IgnoreUnknownTypeFlag, &ACLBootstrapRequest{Time: 70,
		Token: &structs.ACLToken{AccessorID: "acc-root", SecretID: "sec-root", Name: "Bootstrap Token", Type: structs.ACLManagementToken, CreateTime: 70}})
	f.mustApply(ACLPolicyUpsertType|IgnoreUnknownTypeFlag, &ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "dev", Rules: `namespace "default" { policy = "write" }`}, {Name: "old", Rules: `agent { policy = "read" }`}}})
	f.mustApply(ACLPolicyDeleteType|IgnoreUnknownTypeFlag, &ACLPolicyDeleteRequest{Names: []string{"old"}})
	f.mustApply(ACLTokenUpsertType|IgnoreUnknownTypeFlag, &ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
		{AccessorID: "acc-dev", SecretID: "sec-dev", Name: "dev", Type: structs.ACLClientToken, Policies: []string{"dev"}, CreateTime: 71},
		{AccessorID: "acc-gone", SecretID: "sec-gone", Name: "gone", Type: structs.ACLManagementToken, CreateTime: 71}}})
	f.mustApply(ACLTokenDeleteType|IgnoreUnknownTypeFlag, &ACLTokenDeleteRequest{AccessorIDs: []string{"acc-gone"}})
}

// populateQueues applies one entry of every queue message type.
func populateQueues(f *testFSM) {
	f.mustApply(QueueUpsertType, &QueueUpsertRequest{Queues: []*structs.Queue{testQueue("nlp", "nlp", "nlp-*"), testQueue("cv", "cv"), testQueue("gone", "gone")}})
	f.mustApply(QueueDeleteType, &QueueDeleteRequest{Names: []string{"gone"}})
}

func testQueue(name string, namespaces ...string) *structs.Queue {
	lend := 2
	return &structs.Queue{Name: name, Namespaces: namespaces, Cohort: "research", Weight: 2,
		Quota: structs.QueueQuota{GPU: []*structs.GPUQuota{{Type: "A100", Nominal: 8, LendingLimit: &lend}, {Type: "*", Nominal: 1}}, CPU: 4000, MemoryMB: 8192}}
}

func TestFSM_ACL(t *testing.T) {
	f := newTestFSM(t)
	populateACL(f)
	txn := f.State().Txn()
	b, err := state.ACLBootstrapped(txn)
	must.NoError(t, err)
	must.Eq(t, 1, b.Index)
	root, err := state.ACLTokenBySecret(txn, "sec-root")
	must.NoError(t, err)
	must.Eq(t, "acc-root", root.AccessorID)
	must.Eq(t, 1, root.CreateIndex)
	dev, err := state.ACLTokenBySecret(txn, "sec-dev")
	must.NoError(t, err)
	must.Eq(t, []string{"dev"}, dev.Policies)
	gone, err := state.ACLTokenByAccessor(txn, nil, "acc-gone")
	must.NoError(t, err)
	must.Nil(t, gone)
	pols, err := state.ACLPolicies(txn, nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, pols)
	must.Eq(t, "dev", pols[0].Name)
	must.Eq(t, 2, pols[0].CreateIndex)

	// Bootstrapping again, a client token naming a missing policy and
	// deleting what does not exist are rejected and change nothing.
	before := f.State().Index()
	cases := []struct {
		name string
		typ  MessageType
		req  any
		want error
	}{
		{"bootstrap twice", ACLBootstrapType, &ACLBootstrapRequest{Token: &structs.ACLToken{AccessorID: "x", SecretID: "y", Type: structs.ACLManagementToken}}, state.ErrACLBootstrapped},
		{"missing policy", ACLTokenUpsertType, &ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{{AccessorID: "x", SecretID: "y", Type: structs.ACLClientToken, Policies: []string{"nope"}}}}, state.ErrACLPolicyNotFound},
		{"delete missing policy", ACLPolicyDeleteType, &ACLPolicyDeleteRequest{Names: []string{"nope"}}, state.ErrACLPolicyNotFound},
		{"delete missing token", ACLTokenDeleteType, &ACLTokenDeleteRequest{AccessorIDs: []string{"nope"}}, state.ErrACLTokenNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err, _ := f.apply(tc.typ|IgnoreUnknownTypeFlag, tc.req).(error)
			must.ErrorIs(t, err, tc.want)
			must.Eq(t, before, f.State().Index())
		})
	}
	_, err = state.ACLTokenBySecret(f.State().Txn(), "y")
	must.NoError(t, err)
}

// TestFSM_ACLBootstrapReset: a reset applies only when it names the index
// of the bootstrap in force; it keeps the other tokens and the report key,
// and the next reset must name its own index.
func TestFSM_ACLBootstrapReset(t *testing.T) {
	f := newTestFSM(t)
	mgmt := func(id string) *structs.ACLToken {
		return &structs.ACLToken{AccessorID: "acc-" + id, SecretID: "sec-" + id, Type: structs.ACLManagementToken}
	}
	reset := func(index uint64, id string) any {
		return f.apply(ACLBootstrapResetType, &ACLBootstrapResetRequest{ResetIndex: index, Token: mgmt(id), ReportKey: []byte("other key")})
	}
	err, _ := reset(0, "early").(error)
	must.ErrorIs(t, err, state.ErrACLResetIndex, must.Sprint("no bootstrap to reset"))
	f.mustApply(ACLBootstrapType, &ACLBootstrapRequest{Token: mgmt("root"), ReportKey: []byte("report key")})
	first := f.index
	f.mustApply(ACLTokenDeleteType, &ACLTokenDeleteRequest{AccessorIDs: []string{"acc-root"}})
	f.mustApply(ACLTokenUpsertType, &ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{mgmt("kept")}})

	cases := []struct {
		name  string
		index uint64
		want  error
	}{
		{"no index", 0, state.ErrACLResetIndex},
		{"another index", first + 1, state.ErrACLResetIndex},
		{"the bootstrap's index", first, nil},
		{"the same index again", first, state.ErrACLResetIndex},
	}
	var resetAt uint64
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.State().Index()
			err, _ := reset(tc.index, fmt.Sprint("new-", tc.index)).(error)
			must.ErrorIs(t, err, tc.want)
			if tc.want != nil {
				must.Eq(t, before, f.State().Index(), must.Sprint("a refused reset changes nothing"))
			} else {
				resetAt = f.index
			}
		})
	}
	txn := f.State().Txn()
	boot, err := state.ACLBootstrapped(txn)
	must.NoError(t, err)
	must.Eq(t, resetAt, boot.Index, must.Sprint("the reset is the bootstrap in force"))
	must.Eq(t, []byte("report key"), boot.ReportKey)
	for secret, want := range map[string]bool{"sec-root": false, "sec-kept": true, fmt.Sprint("sec-new-", first): true} {
		tok, err := state.ACLTokenBySecret(txn, secret)
		must.NoError(t, err)
		must.Eq(t, want, tok != nil, must.Sprint(secret))
	}
}

func TestFSM_ApplyEveryType(t *testing.T) {
	f := newTestFSM(t)
	populate(f)
	must.MapLen(t, 25, messageNames, must.Sprint("a test entry for every message type"))

	txn := f.State().Txn()
	a, err := state.JobByID(txn, nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, structs.JobStatusStopped, a.Status)
	must.Eq(t, 10, a.SubmitTime)
	b, err := state.JobByID(txn, nil, structs.DefaultNamespace, "b")
	must.NoError(t, err)
	must.Eq(t, structs.JobStatusComplete, b.Status)
	must.Eq(t, "converged", b.StatusDescription)

	r, err := state.JobByID(txn, nil, structs.DefaultNamespace, "r")
	must.NoError(t, err)
	must.Eq(t, structs.JobStatusRejected, r.Status)
	must.Eq(t, "r.nomad.hcl:3:5: Unsupported argument", r.StatusDescription)
	must.Eq(t, 7, r.Nomad.JobModifyIndex)

	plan, err := state.LatestPlan(txn, nil)
	must.NoError(t, err)
	must.Eq(t, 5, plan.Index)
	must.SliceEmpty(t, plan.Placements, must.Sprint("no job is active"))
	da, err := state.Desired(txn, nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, 4, da.PlanIndex, must.Sprint("a whole-cluster plan of an earlier version becomes desired placements"))
	db, err := state.Desired(txn, nil, structs.DefaultNamespace, "b")
	must.NoError(t, err)
	must.Eq(t, 5, db.PlanIndex)
	must.Eq(t, 2, db.Placement.NumWorkers)
	hist, err := state.Placements(txn, nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.SliceLen(t, 1, hist)
	must.Eq(t, 2, hist[0].Placement.NumWorkers)
	ob, err := state.ObservedOf(txn, nil, structs.DefaultNamespace, "b")
	must.NoError(t, err)
	must.Eq(t, 1, ob.Placement.NumWorkers, must.Sprint("what runs, not what was decided"))
	must.Eq(t, structs.ChangeCheckpointing, ob.Change.Phase)

	smp, err := state.Samples(txn, nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.SliceLen(t, 2, smp.Samples, must.Sprint("SampleAppend stores a repeated sample once"))
	ua, err := state.UsageOf(txn, nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, 23, ua.Time)
	must.Eq(t, 90, ua.Tasks[1].CPUMHz)
	model, err := state.Model(txn, nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, []float64{0.2, 1, 0.1}, model.Loss)

	nodes, err := state.Nodes(txn, nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, nodes)
	cfg, err := state.SchedulerConfig(txn, nil)
	must.NoError(t, err)
	must.Eq(t, "drf", cfg.Algorithm)
	members, err := state.Members(txn, nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, members)
	must.Eq(t, "s1", members[0].ID)
	queues, err := state.Queues(txn, nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, queues)
	must.Eq(t, "cv", queues[0].Name)
	must.Eq(t, testQueue("nlp", "nlp", "nlp-*").Quota, queues[1].Quota)

	events, err := state.Events(txn, nil, 0)
	must.NoError(t, err)
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	must.Eq(t, []string{
		structs.EventJobRegistered, structs.EventJobRegistered,
		structs.EventJobPlaced, // b's change is in flight: nothing ran that it asked for
		structs.EventAlgorithmChanged, structs.EventAlgorithmFallback,
		structs.EventJobCompleted, structs.EventJobStopped, structs.EventJobRejected,
		structs.EventJobRegistered, structs.EventJobFailed, // g, collected without an event
	}, types)
	g, err := state.JobByID(txn, nil, structs.DefaultNamespace, "g")
	must.NoError(t, err)
	must.Nil(t, g, must.Sprint("collected"))
	ret, err := state.Retention(txn, nil)
	must.NoError(t, err)
	must.Eq(t, 2048, ret.MaxEvents)
}

// TestFSM_JobGC: a JobGC entry purges only the jobs that are as the
// collector found them, ended and unchanged, and says how many; a
// retention entry that would keep nothing is refused without change.
func TestFSM_JobGC(t *testing.T) {
	f := newTestFSM(t)
	for _, id := range []string{"a", "b", "c"} {
		f.mustApply(JobRegisterType, &JobRegisterRequest{Job: mockJob(id), MustBeNew: true, Time: 1})
		f.mustApply(JobStatusType, &JobStatusRequest{Namespace: structs.DefaultNamespace, JobID: id, Status: structs.JobStatusComplete, Time: 2})
	}
	found := map[string]uint64{}
	for _, id := range []string{"a", "b", "c"} {
		j, err := state.JobByID(f.State().Txn(), nil, structs.DefaultNamespace, id)
		must.NoError(t, err)
		found[id] = j.ModifyIndex
	}
	// b is registered again between the collector's look and its entry.
	f.mustApply(JobRegisterType, &JobRegisterRequest{Job: mockJob("b"), Time: 3})
	var jobs []state.Collectable
	for _, id := range []string{"a", "b", "c"} {
		jobs = append(jobs, state.Collectable{Namespace: structs.DefaultNamespace, JobID: id, ModifyIndex: found[id]})
	}
	must.Eq(t, any(JobGCResponse{Collected: 2}), f.apply(JobGCType, &JobGCRequest{Jobs: jobs, Time: 4}))
	must.Eq(t, any(JobGCResponse{Collected: 0}), f.apply(JobGCType, &JobGCRequest{Jobs: jobs, Time: 5}), must.Sprint("applying it again purges nothing"))
	all, err := state.Jobs(f.State().Txn(), nil, "")
	must.NoError(t, err)
	must.SliceLen(t, 1, all)
	must.Eq(t, "b", all[0].ID)
	must.Eq(t, structs.JobStatusPending, all[0].Status)

	err, _ = f.apply(RetentionSetType, &RetentionSetRequest{Retention: &structs.Retention{MaxJobSamples: 1, MaxJobPlacements: 1, MaxEvents: 1}}).(error)
	must.ErrorIs(t, err, state.ErrInvalidRetention)
	err, _ = f.apply(RetentionSetType, &RetentionSetRequest{}).(error)
	must.ErrorIs(t, err, state.ErrInvalidRetention)
	ret, err := state.Retention(f.State().Txn(), nil)
	must.NoError(t, err)
	must.Eq(t, structs.DefaultRetention(), ret)
}

// usage is job id's usage: one parameter server using psCPU and two
// workers using workerCPU±10 MHz, the first killed once for memory.
func usage(id string, workerCPU, psCPU float64) *structs.JobUsage {
	return &structs.JobUsage{Namespace: structs.DefaultNamespace, JobID: id, Tasks: []*structs.TaskUsage{
		{Role: structs.RolePS, NodeID: "n1", CPUMHz: psCPU, MemoryMB: 50, CPULimitMHz: 500, MemoryLimitMB: 256, Source: structs.UsageSourceNomad},
		{Role: structs.RoleWorker, NodeID: "n1", CPUMHz: workerCPU - 10, MemoryMB: 120, MaxMemoryMB: 127, CPULimitMHz: 500, MemoryLimitMB: 128,
			OOMKills: 1, LastOOM: 7, Restarts: 1, Source: structs.UsageSourceNomad},
		{Role: structs.RoleWorker, Rank: 1, NodeID: "n1", CPUMHz: workerCPU + 10, MemoryMB: 60, CPULimitMHz: 500, MemoryLimitMB: 128, Source: structs.UsageSourceNomad},
	}}
}

// TestFSM_UsageUpsert: committed usage is stamped, its per-shape means are
// computed in apply at the shape observed running (not taken from the
// request), not while a change is in flight, and bad usage is rejected
// with state unchanged.
func TestFSM_UsageUpsert(t *testing.T) {
	f := newTestFSM(t)
	f.mustApply(JobRegisterType, &JobRegisterRequest{Job: mockJob("a"), MustBeNew: true, Time: 1})
	f.mustApply(JobRegisterType, &JobRegisterRequest{Job: mockJob("b"), MustBeNew: true, Time: 1})
	f.mustApply(ObservedUpsertType, &ObservedUpsertRequest{Time: 2, Observed: []*structs.Observed{
		{Namespace: structs.DefaultNamespace, JobID: "a", Placement: placement("a", 2, "n1")},
		{Namespace: structs.DefaultNamespace, JobID: "b", Placement: placement("b", 2, "n1"), Change: &structs.Change{Target: placement("b", 3, "n1"), Phase: structs.ChangeStarting}},
	}})
	bogus := usage("a", 0, 0)
	bogus.ByShape = []structs.ShapeUsage{{Shape: structs.Shape{PS: 9, Workers: 9}, WorkerCPUMHz: 1, Measurements: 100}}
	bogus.Tasks = nil
	f.mustApply(UsageUpsertType, &UsageUpsertRequest{Time: 3, Usage: []*structs.JobUsage{usage("a", 100, 30), usage("b", 100, 30), usage("gone", 10, 1)}})
	f.mustApply(UsageUpsertType, &UsageUpsertRequest{Time: 4, Usage: []*structs.JobUsage{usage("a", 200, 60)}})

	txn := f.State().Txn()
	a, err := state.UsageOf(txn, nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, 4, a.Time)
	must.Eq(t, 5, a.ModifyIndex)
	must.Eq(t, []structs.ShapeUsage{{Shape: structs.Shape{PS: 1, Workers: 2}, WorkerCPUMHz: 150, PSCPUMHz: 45, Measurements: 2}}, a.ByShape)
	must.Eq(t, 1, a.Tasks[1].OOMKills)
	must.Eq(t, 127, a.Tasks[1].MaxMemoryMB)
	b, err := state.UsageOf(txn, nil, structs.DefaultNamespace, "b")
	must.NoError(t, err)
	must.SliceEmpty(t, b.ByShape, must.Sprint("no means while a change is in flight"))
	gone, err := state.UsageOf(txn, nil, structs.DefaultNamespace, "gone")
	must.NoError(t, err)
	must.Nil(t, gone, must.Sprint("usage of an unknown job is dropped"))

	// Usage that only the caller's ByShape would fill keeps the committed means.
	f.mustApply(UsageUpsertType, &UsageUpsertRequest{Time: 5, Usage: []*structs.JobUsage{bogus}})
	a, err = state.UsageOf(f.State().Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.Eq(t, 2, a.ByShape[0].Measurements)
	must.SliceLen(t, 1, a.ByShape)

	before := f.State().Index()
	bad := []struct {
		name, want string
		edit       func(*structs.JobUsage)
	}{
		{"NaN", "Tasks[1].CPUMHz", func(u *structs.JobUsage) { u.Tasks[1].CPUMHz = math.NaN() }},
		{"infinite", "Tasks[0].MemoryMB", func(u *structs.JobUsage) { u.Tasks[0].MemoryMB = math.Inf(1) }},
		{"negative", "Tasks[2].OOMKills", func(u *structs.JobUsage) { u.Tasks[2].OOMKills = -1 }},
		{"huge", "Tasks[1].MaxMemoryMB", func(u *structs.JobUsage) { u.Tasks[1].MaxMemoryMB = 1e12 }},
		{"unknown role", "Tasks[0].Role", func(u *structs.JobUsage) { u.Tasks[0].Role = "chief" }},
		{"too many tasks", "Tasks:", func(u *structs.JobUsage) {
			for len(u.Tasks) <= structs.MaxUsageTasks {
				c := *u.Tasks[2]
				u.Tasks = append(u.Tasks, &c)
			}
		}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			u := usage("a", 10, 1)
			tc.edit(u)
			// A valid usage beside it is not committed either.
			err, _ := f.apply(UsageUpsertType, &UsageUpsertRequest{Time: 9, Usage: []*structs.JobUsage{usage("b", 10, 1), u}}).(error)
			must.ErrorContains(t, err, tc.want)
			must.ErrorContains(t, err, `usage of job "a"`)
			must.Eq(t, before, f.State().Index(), must.Sprint("rejected usage changes nothing"))
			b, err := state.UsageOf(f.State().Txn(), nil, structs.DefaultNamespace, "b")
			must.NoError(t, err)
			must.Eq(t, 3, b.Time)
		})
	}
}

func TestFSM_RejectsWithoutChange(t *testing.T) {
	f := newTestFSM(t)
	f.mustApply(JobRegisterType, &JobRegisterRequest{Job: mockJob("a"), MustBeNew: true, Time: 1})
	before := f.State().Index()

	changed := mockJob("a")
	changed.Priority = 70
	err, _ := f.apply(JobRegisterType, &JobRegisterRequest{Job: changed, MustBeNew: true, Time: 2}).(error)
	must.ErrorIs(t, err, state.ErrJobExists)
	err, _ = f.apply(JobStopType, &JobStopRequest{Namespace: structs.DefaultNamespace, JobID: "nope", Time: 3}).(error)
	must.ErrorIs(t, err, state.ErrJobNotFound)
	must.Eq(t, before, f.State().Index(), must.Sprint("rejected entries change nothing"))

	// The same spec again is idempotent, new or not.
	for _, mustBeNew := range []bool{true, false} {
		out := f.apply(JobRegisterType, &JobRegisterRequest{Job: mockJob("a"), MustBeNew: mustBeNew, Time: 4})
		must.Eq(t, any(JobRegisterResponse{Version: 0, Unchanged: true}), out)
		must.Eq(t, before, f.State().Index(), must.Sprint("an unchanged registration changes nothing"))
	}

	// An update makes a new version and keeps the status.
	out := f.apply(JobRegisterType, &JobRegisterRequest{Job: changed, Time: 5})
	must.Eq(t, any(JobRegisterResponse{Version: 1}), out)
	versions, err := state.JobVersions(f.State().Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.SliceLen(t, 2, versions)
	must.Eq(t, 1, versions[0].Version)
	must.Eq(t, 5, versions[0].SubmitTime)
	must.Eq(t, structs.JobStatusPending, versions[0].Status)
}

// deepConfig returns a driver config nesting depth maps.
func deepConfig(depth int) map[string]any {
	v := map[string]any{"a": 1}
	for range depth - 1 {
		v = map[string]any{"a": v}
	}
	return v
}

// TestEncode_RefusesWhatCannotBeApplied: a request the FSM's decoder would
// refuse (a driver config nesting beyond msgpack's maximum depth) is
// refused when encoded, before anything reaches the log; one just within
// the limit is accepted and applies.
func TestEncode_RefusesWhatCannotBeApplied(t *testing.T) {
	for _, tc := range []struct {
		depth int
		ok    bool
	}{{depth: 900, ok: true}, {depth: 1100}} {
		t.Run(fmt.Sprint(tc.depth), func(t *testing.T) {
			job := mockJob("deep")
			job.Worker.Config = deepConfig(tc.depth)
			buf, err := Encode(JobRegisterType, &JobRegisterRequest{Job: job, Time: 1})
			if !tc.ok {
				must.ErrorIs(t, err, ErrTooComplex)
				must.StrContains(t, err.Error(), "maximum decoding depth")
				return
			}
			must.NoError(t, err)
			f := newTestFSM(t)
			_, ok := f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: buf}).(JobRegisterResponse)
			must.True(t, ok)
		})
	}
	_, err := Encode(JobStopType, &JobRegisterRequest{})
	must.ErrorContains(t, err, "want *fsm.JobStopRequest")
}

// TestFSM_UndecodableEntrySkipped: an entry that does not decode (garbage,
// or nesting beyond the decoder's depth, as an earlier version committed)
// is skipped, with an EntrySkipped event and nothing else changed, and the
// entries after it apply.
func TestFSM_UndecodableEntrySkipped(t *testing.T) {
	job := mockJob("deep")
	job.Worker.Config = deepConfig(1100)
	var deep []byte
	must.NoError(t, codec.NewEncoderBytes(&deep, structs.MsgpackHandle).Encode(&JobRegisterRequest{Job: job, Time: 1}))
	for name, payload := range map[string][]byte{"garbage": {0xc1}, "too deep": deep, "empty": {}} {
		t.Run(name, func(t *testing.T) {
			f := newTestFSM(t)
			populate(f)
			jobs := func() []*structs.Job {
				js, err := state.Jobs(f.State().Txn(), nil, "")
				must.NoError(t, err)
				return js
			}
			before := jobs()
			f.index++
			at := time.Unix(0, 42)
			res := f.Apply(&raft.Log{Index: f.index, Type: raft.LogCommand, AppendedAt: at, Data: append([]byte{byte(JobRegisterType)}, payload...)})
			err, ok := res.(error)
			must.True(t, ok, must.Sprintf("an error, not %#v", res))
			must.ErrorIs(t, err, ErrSkipped)
			must.Eq(t, before, jobs())
			evs, err := state.Events(f.State().Txn(), nil, 0)
			must.NoError(t, err)
			last := evs[len(evs)-1]
			must.Eq(t, structs.EventEntrySkipped, last.Type)
			must.Eq(t, at.UnixNano(), last.Time)
			must.Eq(t, map[string]string{"Index": fmt.Sprint(f.index), "Type": "JobRegister"}, last.Details)
			must.Eq(t, fmt.Sprintf("skipped the JobRegister log entry at index %d: it does not decode", f.index), last.Message,
				must.Sprint("the same text on every build: no decoder message"))

			f.mustApply(JobRegisterType, &JobRegisterRequest{Job: mockJob("after"), Time: 2})
			must.SliceLen(t, len(before)+1, jobs())
		})
	}
}

// TestFSM_UnknownTypes: an entry of a type the FSM does not know is
// skipped with one warning per type when it carries IgnoreUnknownTypeFlag,
// and panics otherwise; a known type with the flag applies as usual.
func TestFSM_UnknownTypes(t *testing.T) {
	future := MessageType(100)
	for _, tc := range []struct {
		name   string
		typ    MessageType
		panics bool
		// changes: the entry changes the state.
		changes bool
	}{
		{name: "unknown, flagged", typ: future | IgnoreUnknownTypeFlag},
		{name: "unknown", typ: future, panics: true},
		{name: "unknown, one below the flag", typ: IgnoreUnknownTypeFlag - 1, panics: true},
		{name: "known, flagged", typ: JobRegisterType | IgnoreUnknownTypeFlag, changes: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			f := newTestFSM(t)
			f.log = hclog.New(&hclog.LoggerOptions{Output: &logs})
			populate(f)
			before, index := dump(t, f.State()), f.State().Index()
			entry := &JobRegisterRequest{Job: mockJob("new"), MustBeNew: true, Time: 70}
			if tc.panics {
				defer func() {
					r := recover()
					must.NotNil(t, r, must.Sprint("an unknown type without the flag panics"))
					must.StrContains(t, fmt.Sprint(r), fmt.Sprintf("unknown message type %d", tc.typ))
					must.Eq(t, before, dump(t, f.State()))
				}()
			}
			res := f.apply(tc.typ, entry)
			if tc.changes {
				_, ok := res.(JobRegisterResponse)
				must.True(t, ok, must.Sprintf("the register answer, not %#v", res))
				j, err := state.JobByID(f.State().Txn(), nil, structs.DefaultNamespace, "new")
				must.NoError(t, err)
				must.NotNil(t, j)
				return
			}
			must.Nil(t, res)
			must.Nil(t, f.apply(tc.typ, entry), must.Sprint("a second entry of the type"))
			must.Eq(t, before, dump(t, f.State()), must.Sprint("an ignored entry changes nothing"))
			must.Eq(t, index, f.State().Index())
			must.Eq(t, 1, strings.Count(logs.String(), "[WARN]  ignoring entries of an unknown message type; upgrade this server: type=100"), must.Sprint(logs.String()))
		})
	}
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "test" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }

// persisted returns a snapshot of f's state as Raft persists it.
func persisted(t testing.TB, f *testFSM) *memSink {
	snap, err := f.Snapshot()
	must.NoError(t, err)
	var sink memSink
	must.NoError(t, snap.Persist(&sink))
	snap.Release()
	return &sink
}

// dump returns every row of the store, encoded, in order.
func dump(t testing.TB, s *state.Store) [][]byte {
	var rows [][]byte
	must.NoError(t, state.Dump(s.Txn(), func(kind uint8, row any) error {
		var buf []byte
		err := codec.NewEncoderBytes(&buf, structs.MsgpackHandle).Encode(row)
		rows = append(rows, append([]byte{kind}, buf...))
		return err
	}))
	return rows
}

func TestFSM_SnapshotRoundTrip(t *testing.T) {
	f := newTestFSM(t)
	populate(f)
	snap, err := f.Snapshot()
	must.NoError(t, err)
	// Writes after the snapshot are not in it.
	f.mustApply(JobRegisterType, &JobRegisterRequest{Job: mockJob("c"), MustBeNew: true, Time: 99})
	var sink memSink
	must.NoError(t, snap.Persist(&sink))
	snap.Release()

	g := newTestFSM(t)
	g.mustApply(JobRegisterType, &JobRegisterRequest{Job: mockJob("junk"), Time: 1})
	old := g.State()
	must.NoError(t, g.Restore(io.NopCloser(&sink)))
	select {
	case <-old.AbandonCh():
	default:
		t.Fatal("the replaced store is not abandoned")
	}

	want := newTestFSM(t)
	populate(want)
	must.Eq(t, dump(t, want.State()), dump(t, g.State()))
	must.Eq(t, want.State().Index(), g.State().Index())
	tok, err := state.ACLTokenBySecret(g.State().Txn(), "sec-dev")
	must.NoError(t, err)
	must.Eq(t, "acc-dev", tok.AccessorID, must.Sprint("tokens are found by secret after a restore"))
	boot, err := state.ACLBootstrapped(g.State().Txn())
	must.NoError(t, err)
	must.NotNil(t, boot, must.Sprint("a restored cluster stays bootstrapped"))
	nlp, err := state.QueueByName(g.State().Txn(), nil, "nlp")
	must.NoError(t, err)
	wantNLP, err := state.QueueByName(want.State().Txn(), nil, "nlp")
	must.NoError(t, err)
	must.Eq(t, wantNLP, nlp, must.Sprint("queues survive a snapshot, indexes and limits included"))
	must.Eq(t, want.State().Index(state.TableQueues), g.State().Index(state.TableQueues), must.Sprint("and so does their table's index"))
}

// TestFSM_Queues: queue entries apply all or none; an entry the API would
// have refused (invalid, conflicting, too many, deleting what is not
// there) is answered with an error and changes nothing, on every server
// alike, and the entries after it apply.
func TestFSM_Queues(t *testing.T) {
	f := newTestFSM(t)
	populateQueues(f)
	before, index := dump(t, f.State()), f.State().Index()
	many := make([]*structs.Queue, structs.MaxQueues)
	for i := range many {
		many[i] = testQueue(fmt.Sprint("q", i), fmt.Sprint("ns", i))
	}
	cases := []struct {
		name string
		typ  MessageType
		req  any
		want error
	}{
		{"nil queue", QueueUpsertType, &QueueUpsertRequest{Queues: []*structs.Queue{testQueue("ok", "ok"), nil}}, state.ErrQueueInvalid},
		{"invalid", QueueUpsertType, &QueueUpsertRequest{Queues: []*structs.Queue{testQueue("ok", "ok"), {Name: "-bad", Weight: -1}}}, state.ErrQueueInvalid},
		{"conflict", QueueUpsertType, &QueueUpsertRequest{Queues: []*structs.Queue{testQueue("ok", "ok"), testQueue("other", "cv")}}, state.ErrQueueConflict},
		{"too many", QueueUpsertType, &QueueUpsertRequest{Queues: many}, state.ErrTooManyQueues},
		{"delete missing", QueueDeleteType, &QueueDeleteRequest{Names: []string{"cv", "nope"}}, state.ErrQueueNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err, _ := f.apply(tc.typ, tc.req).(error)
			must.ErrorIs(t, err, tc.want)
			must.False(t, errors.Is(err, ErrSkipped), must.Sprint("a refusal, not a skipped entry"))
			must.Eq(t, before, dump(t, f.State()), must.Sprint("a refused entry changes nothing"))
			must.Eq(t, index, f.State().Index())
		})
	}
	f.mustApply(QueueUpsertType, &QueueUpsertRequest{Queues: []*structs.Queue{testQueue("ok", "ok")}})
	ok, err := state.QueueByName(f.State().Txn(), nil, "ok")
	must.NoError(t, err)
	must.Eq(t, f.index, ok.CreateIndex)
}

// TestFSM_RestoreSkipsUnknownRecords: a snapshot holding records of a
// kind this version does not know (written by a newer version) restores
// everything else, with one warning per kind.
func TestFSM_RestoreSkipsUnknownRecords(t *testing.T) {
	f := newTestFSM(t)
	populate(f)
	snap, err := f.Snapshot()
	must.NoError(t, err)
	var sink memSink
	enc := codec.NewEncoder(&sink, structs.MsgpackHandle)
	for _, row := range []any{map[string]any{"Future": []int{1, 2}}, "another"} {
		must.NoError(t, enc.Encode(uint8(200)))
		must.NoError(t, enc.Encode(row))
	}
	must.NoError(t, snap.Persist(&sink))

	var logs bytes.Buffer
	g := newTestFSM(t)
	g.log = hclog.New(&hclog.LoggerOptions{Output: &logs})
	must.NoError(t, g.Restore(io.NopCloser(&sink)))
	must.Eq(t, dump(t, f.State()), dump(t, g.State()))
	must.Eq(t, 1, strings.Count(logs.String(), "skipping snapshot records of a kind this version does not know; upgrade this server: kind=200"), must.Sprint(logs.String()))
}

func TestFSM_RestoreRejectsGarbage(t *testing.T) {
	f := newTestFSM(t)
	populate(f)
	before := dump(t, f.State())
	err := f.Restore(io.NopCloser(bytes.NewReader([]byte{0x63, 0xff, 0x00})))
	must.Error(t, err)
	must.Eq(t, before, dump(t, f.State()), must.Sprint("a failed restore keeps the old state"))
}

// TestFSM_PrepareRestore: a snapshot decoded ahead (Prepare) is what the
// next Restore of the same bytes installs, without decoding it again; a
// Restore of other bytes fails and keeps the state, and the one after it
// decodes; a snapshot that does not decode is refused by Prepare.
func TestFSM_PrepareRestore(t *testing.T) {
	f := newTestFSM(t)
	populate(f)
	body := persisted(t, f).Bytes()

	g := newTestFSM(t)
	must.NoError(t, g.Prepare(body))
	prepared := g.prepared.Load().store
	must.NoError(t, g.Restore(io.NopCloser(bytes.NewReader(body))))
	must.True(t, prepared == g.State(), must.Sprint("the prepared store is installed"))
	must.Eq(t, dump(t, f.State()), dump(t, g.State()))
	must.Nil(t, g.prepared.Load(), must.Sprint("a restore consumes what was prepared"))

	h := newTestFSM(t)
	h.mustApply(JobRegisterType, &JobRegisterRequest{Job: mockJob("junk"), Time: 1})
	before := dump(t, h.State())
	must.NoError(t, h.Prepare(body))
	other := slices.Clone(body)
	other[len(other)-1] ^= 1
	err := h.Restore(io.NopCloser(bytes.NewReader(other)))
	must.ErrorContains(t, err, "not the one prepared")
	must.Eq(t, before, dump(t, h.State()), must.Sprint("a failed restore keeps the old state"))
	must.NoError(t, h.Restore(io.NopCloser(bytes.NewReader(body))), must.Sprint("the next restore decodes"))
	must.Eq(t, dump(t, f.State()), dump(t, h.State()))

	must.Error(t, h.Prepare([]byte{0x63, 0xff, 0x00}))
	must.Nil(t, h.prepared.Load(), must.Sprint("nothing is kept of a snapshot that does not decode"))
	must.NoError(t, h.Prepare(body))
	h.Unprepare()
	must.Nil(t, h.prepared.Load())
}

// TestFSM_DeclaredJob: a job declared in Nomad keeps its Nomad source,
// template included, through the log and a snapshot.
func TestFSM_DeclaredJob(t *testing.T) {
	f := newTestFSM(t)
	d := mockJob("d")
	d.Nomad = &structs.NomadSource{JobModifyIndex: 9, Groups: map[string]string{structs.RoleWorker: "train"}, Template: json.RawMessage(`{"ID":"d","TaskGroups":[{"Name":"train"}]}`)}
	f.mustApply(JobRegisterType, &JobRegisterRequest{Job: d, MustBeNew: true, Time: 12})
	g := newTestFSM(t)
	must.NoError(t, g.Restore(io.NopCloser(persisted(t, f))))
	for _, s := range []*state.Store{f.State(), g.State()} {
		got, err := state.JobByID(s.Txn(), nil, structs.DefaultNamespace, "d")
		must.NoError(t, err)
		must.Eq(t, d.Nomad, got.Nomad)
	}
}

// TestFSM_JobReject: a rejection is the record of a job no other holds
// or that ended, once per version; an active job is not rejected, and a
// later registration starts the job anew over the rejection.
func TestFSM_JobReject(t *testing.T) {
	f := newTestFSM(t)
	reject := func(id string, nomadIndex uint64, desc string) any {
		return f.apply(JobRejectType, &JobRejectRequest{Namespace: structs.DefaultNamespace, JobID: id, NomadIndex: nomadIndex, Description: desc, Time: 5})
	}
	events := func() int {
		evs, err := state.Events(f.State().Txn(), nil, 0)
		must.NoError(t, err)
		return len(evs)
	}
	job := func(id string) *structs.Job {
		j, err := state.JobByID(f.State().Txn(), nil, structs.DefaultNamespace, id)
		must.NoError(t, err)
		return j
	}

	must.Nil(t, reject("typo", 10, "typo:12:7: Unsupported argument"))
	j := job("typo")
	must.Eq(t, structs.JobStatusRejected, j.Status)
	must.Eq(t, "typo", j.Name, must.Sprint("the name defaults to the ID"))
	must.True(t, structs.Terminal(j.Status))
	must.Eq(t, 1, events())
	must.Nil(t, reject("typo", 10, "typo:12:7: Unsupported argument"))
	must.Eq(t, 1, events(), must.Sprint("the same rejection again adds nothing"))
	must.Eq(t, j.ModifyIndex, job("typo").ModifyIndex)

	f.mustApply(JobRegisterType, &JobRegisterRequest{Job: mockJob("active"), Time: 6})
	err, _ := reject("active", 11, "conflict").(error)
	must.ErrorIs(t, err, state.ErrJobExists)
	must.Eq(t, structs.JobStatusPending, job("active").Status, must.Sprint("an active job is not rejected"))

	fixed := mockJob("typo")
	fixed.Nomad = &structs.NomadSource{JobModifyIndex: 12}
	f.mustApply(JobRegisterType, &JobRegisterRequest{Job: fixed, Time: 7})
	j = job("typo")
	must.Eq(t, structs.JobStatusPending, j.Status, must.Sprint("a valid version registers over the rejection"))
	must.Eq(t, "", j.StatusDescription)
	must.Eq(t, f.index, j.CreateIndex, must.Sprint("as a new run"))
}
