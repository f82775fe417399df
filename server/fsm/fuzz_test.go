package fsm

import (
	"bytes"
	"io"
	"math"
	"slices"
	"testing"

	"github.com/caravan-sched/caravan/internal/testutil"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// knownTypes are the message types this FSM applies, in order.
func knownTypes() []MessageType {
	var out []MessageType
	for t := range messageNames {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// entryType maps a fuzzed byte onto a known message type, with
// IgnoreUnknownTypeFlag or without: an unknown type without the flag is
// documented to panic, and out of scope.
func entryType(b uint8) MessageType {
	known := knownTypes()
	t := known[int(b)%len(known)]
	if int(b)/len(known)%2 == 1 {
		t |= IgnoreUnknownTypeFlag
	}
	return t
}

// typeByte is the fuzzed byte that entryType maps onto t.
func typeByte(t MessageType) uint8 {
	i := slices.Index(knownTypes(), t&^IgnoreUnknownTypeFlag)
	if t&IgnoreUnknownTypeFlag != 0 {
		i += len(messageNames)
	}
	return uint8(i)
}

// snapshotBytes persists f's state as Raft would.
func snapshotBytes(tb testing.TB, f *FSM) []byte {
	tb.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		tb.Fatalf("snapshot: %v", err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		tb.Fatalf("persist: %v", err)
	}
	snap.Release()
	return sink.Bytes()
}

// populated returns a snapshot of a store with a row of every table, and
// the entries that made it.
func populated(tb testing.TB) (snapshot []byte, entries [][]byte) {
	f := newTestFSM(tb)
	populate(f)
	return snapshotBytes(tb, f.FSM), f.entries
}

// freshFSM returns a new FSM restored from snapshot.
func freshFSM(t *testing.T, snapshot []byte) *FSM {
	t.Helper()
	f, err := New(hclog.NewNullLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(io.NopCloser(bytes.NewReader(snapshot))); err != nil {
		t.Fatalf("restore the base snapshot: %v", err)
	}
	return f
}

// checkSnapshot checks that f's state persists and restores to itself:
// every state the log reaches, a snapshot can carry.
func checkSnapshot(t *testing.T, f *FSM) {
	t.Helper()
	snap := snapshotBytes(t, f)
	g := freshFSM(t, snap)
	if !slices.EqualFunc(dump(t, f.State()), dump(t, g.State()), bytes.Equal) {
		t.Fatal("a snapshot restores to another state")
	}
	if f.State().Index() != g.State().Index() {
		t.Fatalf("a snapshot restores index %d as %d", f.State().Index(), g.State().Index())
	}
}

// FuzzApply applies one entry of a known message type, its payload
// fuzzed, to a fresh FSM: empty, or holding a row of every table. For any
// payload, Apply answers nil, an error with a message or the type's
// answer, two FSMs in the same state end in the same state (apply is
// deterministic), and that state round-trips through a snapshot.
//
//	go test ./server/fsm -run '^$' -fuzz '^FuzzApply$' -fuzztime 1m
func FuzzApply(f *testing.F) {
	base, entries := populated(f)
	for _, e := range entries {
		f.Add(typeByte(MessageType(e[0])), false, e[1:])
		f.Add(typeByte(MessageType(e[0])), true, e[1:])
	}
	// Entries that decode but that the API would never write.
	add := func(t MessageType, req any) {
		f.Helper()
		buf, err := Encode(t, req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(typeByte(t), false, buf[1:])
	}
	smp := structs.Sample{Namespace: structs.DefaultNamespace, JobID: "a", Step: 50, Loss: 1, StepTimeS: 0.5, NumPS: 1, NumWorkers: 2, Time: 100}
	add(SampleBatchType, &SampleBatchRequest{Samples: []structs.Sample{smp, smp, smp}, Cursor: 9}) // duplicates
	add(SampleBatchType, &SampleBatchRequest{Samples: []structs.Sample{
		{JobID: "a", Step: 51, Loss: math.NaN(), StepTimeS: math.Inf(1), Epoch: math.Inf(-1)},
		{JobID: "a", Step: math.MaxInt64, NumWorkers: -1, Time: math.MinInt64},
		{JobID: "nope", Step: 1}, {}}})
	add(SampleBatchType, &SampleBatchRequest{Cursor: math.MaxUint64})
	add(JobRegisterType, &JobRegisterRequest{Job: &structs.Job{ID: "bare"}})
	add(UsageUpsertType, &UsageUpsertRequest{Usage: []*structs.JobUsage{nil, {JobID: "a", Tasks: []*structs.TaskUsage{nil}}}})
	add(PlanApplyType, &PlanApplyRequest{Plan: &structs.Plan{Placements: []*structs.Placement{{JobID: "nope", NumWorkers: -3}}}})
	add(DecisionApplyType, &DecisionApplyRequest{Placements: []*structs.Placement{{JobID: "a", NumWorkers: math.MaxInt}}})
	add(NodesReplaceType, &NodesReplaceRequest{Nodes: []*structs.Node{{ID: "n1"}, {ID: "n1", CPU: -1}}})
	add(ACLBootstrapType, &ACLBootstrapRequest{})
	add(ACLPolicyUpsertType, &ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: ""}}})
	add(ACLTokenUpsertType, &ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{{AccessorID: "x", Policies: []string{"nope"}}}})
	add(ACLTokenDeleteType, &ACLTokenDeleteRequest{AccessorIDs: []string{"acc-root", "acc-root"}})
	add(QueueUpsertType, &QueueUpsertRequest{Queues: []*structs.Queue{nil, {}, {Name: "nlp", Namespaces: []string{"cv", "["}, Weight: math.NaN(),
		Quota: structs.QueueQuota{GPU: []*structs.GPUQuota{nil, {Type: "a", Nominal: -1}}}}}})
	add(QueueDeleteType, &QueueDeleteRequest{Names: []string{"nlp", "nlp"}})
	// Entries with a nil request or a nil element, which made the state
	// store's handlers panic, are seeds in testdata/fuzz/FuzzApply/nil-*:
	// Apply skips them.
	f.Fuzz(func(t *testing.T, typ uint8, empty bool, payload []byte) {
		from := base
		if empty {
			from = nil
		}
		mt := entryType(typ)
		data := append([]byte{byte(mt)}, payload...)
		fsms := [2]*FSM{freshFSM(t, from), freshFSM(t, from)}
		index := fsms[0].State().Index() + 1
		var answers [2]any
		for i, m := range fsms {
			answers[i] = m.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: data})
		}
		if err, ok := answers[0].(error); ok {
			testutil.ClearError(t, "apply "+mt.String(), err)
		}
		if a, b := answers[0], answers[1]; (a == nil) != (b == nil) {
			t.Fatalf("the same entry answered %v and %v", a, b)
		}
		if !slices.EqualFunc(dump(t, fsms[0].State()), dump(t, fsms[1].State()), bytes.Equal) {
			t.Fatal("the same entry applied to the same state made two states")
		}
		checkSnapshot(t, fsms[0])
	})
}

// FuzzRestore restores a snapshot from arbitrary bytes and from mutations
// of a real one. For any input: a clear error, with the store as it was,
// or a store whose own snapshot restores to it.
//
//	go test ./server/fsm -run '^$' -fuzz '^FuzzRestore$' -fuzztime 1m
func FuzzRestore(f *testing.F) {
	base, _ := populated(f)
	f.Add(base)
	f.Add([]byte{})
	f.Add([]byte{0x63, 0xff, 0x00})
	f.Add(base[:len(base)/2])
	for _, at := range []int{0, 1, len(base) / 3, len(base) - 1} {
		mutated := bytes.Clone(base)
		mutated[at] ^= 0xff
		f.Add(mutated)
	}
	// A job row whose Worker.Config nests deeper than the decoder goes.
	f.Add(slices.Concat([]byte{2, 0x82, 0xa2, 'I', 'D', 0xa1, 'x', 0xa6}, []byte("Worker"),
		[]byte{0x81, 0xa6}, []byte("Config"), testutil.DeepMsgpack(1_100)))
	// An unknown record kind, and a plan row with a nil placement.
	f.Add([]byte{200, 0xc0})
	f.Add(slices.Concat([]byte{4, 0x81, 0xaa}, []byte("Placements"), []byte{0x91, 0xc0}))
	// A row claiming 2^32-1 elements.
	f.Add([]byte{6, 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, snapshot []byte) {
		m, err := New(hclog.NewNullLogger(), nil)
		if err != nil {
			t.Fatal(err)
		}
		before := m.State()
		err = m.Restore(io.NopCloser(bytes.NewReader(snapshot)))
		testutil.ClearError(t, "restore", err)
		if err != nil {
			if m.State() != before {
				t.Fatal("a failed restore replaced the store")
			}
			return
		}
		checkSnapshot(t, m)
	})
}
