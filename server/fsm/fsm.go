package fsm

import (
	"bufio"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// FSM applies Raft log entries to the state store. It is safe for
// concurrent use: Raft calls Apply, Snapshot and Restore from its own
// goroutines while readers use State.
type FSM struct {
	state   atomic.Pointer[state.Store]
	log     hclog.Logger
	handler map[MessageType]func(index uint64, buf []byte) any
	// applied, when set, is called after each entry is applied with its
	// type, without blocking; the leader uses it to wake up.
	applied func(MessageType)
	// ignored holds the unknown types already warned of (MessageType →
	// struct{}), so that a stream of them logs once each.
	ignored sync.Map
}

// New returns an FSM over an empty store. applied may be nil.
func New(logger hclog.Logger, applied func(MessageType)) (*FSM, error) {
	s, err := state.New()
	if err != nil {
		return nil, err
	}
	f := &FSM{log: logger.Named("fsm"), applied: applied}
	f.state.Store(s)
	f.handler = map[MessageType]func(uint64, []byte) any{
		JobRegisterType: handle(func(i uint64, r *JobRegisterRequest) any { return registerJob(f.State(), i, r) }),
		JobStopType: handle(func(i uint64, r *JobStopRequest) any {
			return f.State().StopJob(i, r.Time, r.Namespace, r.JobID, r.Purge)
		}),
		JobStatusType: handle(func(i uint64, r *JobStatusRequest) any {
			return f.State().UpdateJobStatus(i, r.Time, r.Namespace, r.JobID, r.Status, r.Description)
		}),
		PlanApplyType: handle(func(i uint64, r *PlanApplyRequest) any { return f.State().ApplyPlan(i, r.Plan, r.Models) }),
		DecisionApplyType: handle(func(i uint64, r *DecisionApplyRequest) any {
			return f.State().ApplyDecision(i, r.Time, r.Algorithm, r.Placements, r.Models)
		}),
		ObservedUpsertType: handle(func(i uint64, r *ObservedUpsertRequest) any {
			return f.State().UpsertObserved(i, r.Time, r.Observed)
		}),
		UsageUpsertType: handle(func(i uint64, r *UsageUpsertRequest) any {
			return f.State().UpsertUsage(i, r.Time, r.Usage)
		}),
		SampleBatchType:  handle(func(i uint64, r *SampleBatchRequest) any { return appendSamples(f.State(), i, r) }),
		NodesReplaceType: handle(func(i uint64, r *NodesReplaceRequest) any { return f.State().ReplaceNodes(i, r.Nodes) }),
		SchedulerConfigType: handle(func(i uint64, r *SchedulerConfigRequest) any {
			return f.State().SetSchedulerConfig(i, r.Time, r.Config)
		}),
		MemberUpsertType: handle(func(i uint64, r *MemberUpsertRequest) any { return f.State().UpsertMember(i, r.Member) }),
		MemberDeleteType: handle(func(i uint64, r *MemberDeleteRequest) any { return f.State().DeleteMember(i, r.ID) }),
		EventAppendType:  handle(func(i uint64, r *EventAppendRequest) any { return f.State().AppendEvent(i, r.Event) }),
		ACLBootstrapType: handle(func(i uint64, r *ACLBootstrapRequest) any {
			return f.State().BootstrapACL(i, r.Time, r.Token, r.ReportKey)
		}),
		ACLPolicyUpsertType: handle(func(i uint64, r *ACLPolicyUpsertRequest) any {
			return f.State().UpsertACLPolicies(i, r.Policies)
		}),
		ACLPolicyDeleteType: handle(func(i uint64, r *ACLPolicyDeleteRequest) any { return f.State().DeleteACLPolicies(i, r.Names) }),
		ACLTokenUpsertType:  handle(func(i uint64, r *ACLTokenUpsertRequest) any { return f.State().UpsertACLTokens(i, r.Tokens) }),
		ACLTokenDeleteType:  handle(func(i uint64, r *ACLTokenDeleteRequest) any { return f.State().DeleteACLTokens(i, r.AccessorIDs) }),
		ACLBootstrapResetType: handle(func(i uint64, r *ACLBootstrapResetRequest) any {
			return f.State().ResetACLBootstrap(i, r.Time, r.ResetIndex, r.Token, r.ReportKey)
		}),
	}
	return f, nil
}

// handle adapts a typed handler to the dispatch table: it decodes the
// request and panics on an entry that does not decode, since a log entry
// every server has accepted must apply the same way on every server.
func handle[R any](fn func(index uint64, req *R) any) func(uint64, []byte) any {
	return func(index uint64, buf []byte) any {
		req := new(R)
		if err := decode(buf, req); err != nil {
			panic(fmt.Errorf("decode %T at index %d: %w", req, index, err))
		}
		return fn(index, req)
	}
}

// JobRegisterResponse is what applying a job registration returns: the
// job's version, and whether the spec was the active job's already, so that
// nothing was stored.
type JobRegisterResponse struct {
	Version   uint64
	Unchanged bool
}

func registerJob(s *state.Store, index uint64, r *JobRegisterRequest) any {
	reg, err := s.RegisterJob(index, r.Time, r.Job, r.MustBeNew)
	if err != nil {
		return err
	}
	return JobRegisterResponse{Version: reg.Version, Unchanged: reg.Unchanged}
}

// SampleBatchResponse is what applying a sample batch returns.
type SampleBatchResponse struct {
	Kept int
}

func appendSamples(s *state.Store, index uint64, r *SampleBatchRequest) any {
	kept, err := s.AppendSamples(index, r.Samples, r.Cursor)
	if err != nil {
		return err
	}
	return SampleBatchResponse{Kept: kept}
}

// State returns the current state store. A snapshot restore replaces it;
// the old one's AbandonCh is then closed.
func (f *FSM) State() *state.Store { return f.state.Load() }

// Apply applies one log entry and returns the handler's result: nil, an
// error the request's sender sees, or a typed response. An entry of a type
// this server does not know is skipped, returning nil and changing
// nothing, when the type carries IgnoreUnknownTypeFlag (a warning is
// logged once per type); otherwise it panics, since the server cannot
// follow the log.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand || len(l.Data) == 0 {
		return nil
	}
	t := MessageType(l.Data[0])
	ignoreUnknown := t&IgnoreUnknownTypeFlag != 0
	t &^= IgnoreUnknownTypeFlag
	h, ok := f.handler[t]
	if !ok {
		if !ignoreUnknown {
			panic(fmt.Errorf("unknown message type %d at index %d", t, l.Index))
		}
		if _, warned := f.ignored.LoadOrStore(t, struct{}{}); !warned {
			f.log.Warn("ignoring entries of an unknown message type; upgrade this server", "type", uint8(t), "index", l.Index)
		}
		return nil
	}
	res := h(l.Index, l.Data[1:])
	if err, ok := res.(error); ok {
		f.log.Debug("entry rejected", "type", t, "index", l.Index, "error", err)
	}
	if f.applied != nil {
		f.applied(t)
	}
	return res
}

// Snapshot captures the store as it is now. It returns at once; the rows
// are encoded in Persist, off Raft's apply path.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return &snapshot{txn: f.State().Txn()}, nil
}

// Restore replaces the store with the snapshot's rows.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	r, err := state.NewRestore()
	if err != nil {
		return err
	}
	dec := codec.NewDecoder(bufio.NewReader(rc), structs.MsgpackHandle)
	for {
		var kind uint8
		if err := dec.Decode(&kind); err == io.EOF {
			break
		} else if err != nil {
			r.Abort()
			return fmt.Errorf("restore snapshot: read record kind: %w", err)
		}
		if err := r.Load(kind, dec.Decode); err != nil {
			r.Abort()
			return fmt.Errorf("restore snapshot: %w", err)
		}
	}
	old := f.state.Swap(r.Commit())
	old.Abandon()
	return nil
}

type snapshot struct{ txn *memdb.Txn }

// Persist streams (kind, row) pairs in msgpack.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	w := bufio.NewWriter(sink)
	enc := codec.NewEncoder(w, structs.MsgpackHandle)
	err := state.Dump(s.txn, func(kind uint8, row any) error {
		if err := enc.Encode(kind); err != nil {
			return err
		}
		return enc.Encode(row)
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

// Release does nothing: a memdb read transaction holds no resources.
func (s *snapshot) Release() {}
