package fsm

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// FSM applies Raft log entries to the state store. It is safe for
// concurrent use: Raft calls Apply, Snapshot and Restore from its own
// goroutines while readers use State.
type FSM struct {
	state atomic.Pointer[state.Store]
	log   hclog.Logger
	// applied, when set, is called after each entry is applied with its
	// type, without blocking; the leader uses it to wake up.
	applied func(MessageType)
	// ignored holds the unknown types already warned of (MessageType →
	// struct{}), so that a stream of them logs once each.
	ignored sync.Map
	// prepared is a snapshot decoded ahead of its restore (Prepare).
	prepared atomic.Pointer[prepared]
}

// New returns an FSM over an empty store. applied may be nil.
func New(logger hclog.Logger, applied func(MessageType)) (*FSM, error) {
	s, err := state.New()
	if err != nil {
		return nil, err
	}
	f := &FSM{log: logger.Named("fsm"), applied: applied}
	f.state.Store(s)
	return f, nil
}

// command is a message type's entry in the dispatch table: the request
// its entries decode into, and how to apply one.
type command struct {
	newRequest func() any
	apply      func(s *state.Store, index uint64, req any) any
}

// commands is the dispatch table, filled by register. Encode decodes
// through it too, so that what a server accepts is what Apply can decode.
var commands = map[MessageType]command{}

// register adds message type t, whose entries decode into an *R, to the
// dispatch table.
func register[R any](t MessageType, apply func(s *state.Store, index uint64, req *R) any) {
	if _, dup := commands[t]; dup {
		panic(fmt.Sprintf("fsm: message type %s registered twice", t))
	}
	commands[t] = command{
		newRequest: func() any { return new(R) },
		apply:      func(s *state.Store, index uint64, req any) any { return apply(s, index, req.(*R)) },
	}
}

func init() {
	register(JobRegisterType, registerJob)
	register(JobStopType, func(s *state.Store, i uint64, r *JobStopRequest) any {
		return s.StopJob(i, r.Time, r.Namespace, r.JobID, r.Purge)
	})
	register(JobStatusType, func(s *state.Store, i uint64, r *JobStatusRequest) any {
		return s.UpdateJobStatus(i, r.Time, r.Namespace, r.JobID, r.Status, r.Description)
	})
	register(JobRejectType, func(s *state.Store, i uint64, r *JobRejectRequest) any {
		return s.RejectJob(i, r.Time, r.Namespace, r.JobID, r.Name, r.NomadIndex, r.Description)
	})
	register(PlanApplyType, func(s *state.Store, i uint64, r *PlanApplyRequest) any { return s.ApplyPlan(i, r.Plan, r.Models) })
	register(DecisionApplyType, func(s *state.Store, i uint64, r *DecisionApplyRequest) any {
		return s.ApplyDecision(i, r.Time, r.Algorithm, r.Placements, r.Models)
	})
	register(ObservedUpsertType, func(s *state.Store, i uint64, r *ObservedUpsertRequest) any {
		return s.UpsertObserved(i, r.Time, r.Observed)
	})
	register(UsageUpsertType, func(s *state.Store, i uint64, r *UsageUpsertRequest) any { return s.UpsertUsage(i, r.Time, r.Usage) })
	register(SampleBatchType, func(s *state.Store, i uint64, r *SampleBatchRequest) any { return appendSamples(s, i, r, false) })
	register(SampleAppendType, func(s *state.Store, i uint64, r *SampleBatchRequest) any { return appendSamples(s, i, r, true) })
	register(NodesReplaceType, func(s *state.Store, i uint64, r *NodesReplaceRequest) any { return s.ReplaceNodes(i, r.Nodes) })
	register(SchedulerConfigType, func(s *state.Store, i uint64, r *SchedulerConfigRequest) any {
		return s.SetSchedulerConfig(i, r.Time, r.Config)
	})
	register(MemberUpsertType, func(s *state.Store, i uint64, r *MemberUpsertRequest) any { return s.UpsertMember(i, r.Member) })
	register(MemberDeleteType, func(s *state.Store, i uint64, r *MemberDeleteRequest) any { return s.DeleteMember(i, r.ID) })
	register(EventAppendType, func(s *state.Store, i uint64, r *EventAppendRequest) any { return s.AppendEvent(i, r.Event) })
	register(ACLBootstrapType, func(s *state.Store, i uint64, r *ACLBootstrapRequest) any {
		return s.BootstrapACL(i, r.Time, r.Token, r.ReportKey)
	})
	register(ACLPolicyUpsertType, func(s *state.Store, i uint64, r *ACLPolicyUpsertRequest) any {
		return s.UpsertACLPolicies(i, r.Policies)
	})
	register(ACLPolicyDeleteType, func(s *state.Store, i uint64, r *ACLPolicyDeleteRequest) any { return s.DeleteACLPolicies(i, r.Names) })
	register(ACLTokenUpsertType, func(s *state.Store, i uint64, r *ACLTokenUpsertRequest) any { return s.UpsertACLTokens(i, r.Tokens) })
	register(ACLTokenDeleteType, func(s *state.Store, i uint64, r *ACLTokenDeleteRequest) any {
		return s.DeleteACLTokens(i, r.AccessorIDs)
	})
	register(QueueUpsertType, func(s *state.Store, i uint64, r *QueueUpsertRequest) any { return s.UpsertQueues(i, r.Queues) })
	register(QueueDeleteType, func(s *state.Store, i uint64, r *QueueDeleteRequest) any { return s.DeleteQueues(i, r.Names) })
	register(ACLBootstrapResetType, func(s *state.Store, i uint64, r *ACLBootstrapResetRequest) any {
		return s.ResetACLBootstrap(i, r.Time, r.ResetIndex, r.Token, r.ReportKey)
	})
	register(JobGCType, func(s *state.Store, i uint64, r *JobGCRequest) any {
		n, err := s.CollectJobs(i, r.Jobs)
		if err != nil {
			return err
		}
		return JobGCResponse{Collected: n}
	})
	register(RetentionSetType, func(s *state.Store, i uint64, r *RetentionSetRequest) any { return s.SetRetention(i, r.Retention) })
}

// JobRegisterResponse is what applying a job registration returns: the
// job's version, and whether the spec was the active job's already, so that
// nothing was stored.
type JobRegisterResponse struct {
	Version   uint64
	Unchanged bool
}

func registerJob(s *state.Store, index uint64, r *JobRegisterRequest) any {
	reg, err := s.RegisterJob(index, r.Time, r.Job, r.MustBeNew, r.FreshRun)
	if err != nil {
		return err
	}
	return JobRegisterResponse{Version: reg.Version, Unchanged: reg.Unchanged}
}

// SampleBatchResponse is what applying a sample batch returns: how many
// samples were stored, and how many repeated one stored already (and were
// not stored again).
type SampleBatchResponse struct {
	Kept     int
	Repeated int
}

func appendSamples(s *state.Store, index uint64, r *SampleBatchRequest, once bool) any {
	res, err := s.AppendSamples(index, r.Samples, r.Cursor, once)
	if err != nil {
		return err
	}
	return SampleBatchResponse{Kept: res.Kept, Repeated: res.Repeated}
}

// State returns the current state store. A snapshot restore replaces it;
// the old one's AbandonCh is then closed.
func (f *FSM) State() *state.Store { return f.state.Load() }

// Apply applies one log entry and returns the handler's result: nil, an
// error the request's sender sees, or a typed response.
//
// An entry of a known type that does not decode, or whose handler panics,
// is skipped on every server alike: nothing of it is applied, an error is
// logged, the counter fsm.skipped counts it and an EntrySkipped event
// records it, and Apply returns an error wrapping ErrSkipped. The receiving
// server checks every request against the same decoder before committing it
// (Encode), so only entries written by an earlier version can be skipped;
// a poisoned entry in the log no longer stops the servers that replay it.
//
// An entry of a type this server does not know is skipped, returning nil
// and changing nothing, when the type carries IgnoreUnknownTypeFlag (a
// warning is logged once per type); otherwise it panics, since the server
// cannot follow the log and must be upgraded.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand || len(l.Data) == 0 {
		return nil
	}
	t := MessageType(l.Data[0])
	ignoreUnknown := t&IgnoreUnknownTypeFlag != 0
	t &^= IgnoreUnknownTypeFlag
	cmd, ok := commands[t]
	if !ok {
		if !ignoreUnknown {
			panic(fmt.Errorf("unknown message type %d at index %d", t, l.Index))
		}
		if _, warned := f.ignored.LoadOrStore(t, struct{}{}); !warned {
			f.log.Warn("ignoring entries of an unknown message type; upgrade this server", "type", uint8(t), "index", l.Index)
		}
		return nil
	}
	req := cmd.newRequest()
	if err := decode(l.Data[1:], req); err != nil {
		return f.skip(l, t, "it does not decode", err)
	}
	res, err := safeApply(cmd, f.State(), l.Index, req)
	if err != nil {
		return f.skip(l, t, "applying it failed", err)
	}
	if err, ok := res.(error); ok {
		f.log.Debug("entry rejected", "type", t, "index", l.Index, "error", err)
	}
	if f.applied != nil {
		f.applied(t)
	}
	return res
}

// safeApply applies req, turning a panic of its handler into an error. The
// handler's write transaction is aborted by its deferred Abort, so nothing
// of a panicking entry is applied.
func safeApply(cmd command, s *state.Store, index uint64, req any) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("apply panicked: %v", r)
		}
	}()
	return cmd.apply(s, index, req), nil
}

// skip records entry l of type t, which cannot be applied (why, and the
// error that said so), as skipped: an error log with the error, a counter,
// and an event the same on every server: its text is why alone, since the
// error's text may differ between the builds of a rolling upgrade, and its
// time is the leader's append time, carried in the log.
func (f *FSM) skip(l *raft.Log, t MessageType, why string, cause error) error {
	err := fmt.Errorf("%w: %s entry at index %d: %s: %w", ErrSkipped, t, l.Index, why, cause)
	f.log.Error("skipped a log entry that cannot be applied", "type", t, "index", l.Index, "reason", why, "error", cause)
	metrics.IncrCounterWithLabels([]string{"fsm", "skipped"}, 1, []metrics.Label{{Name: "type", Value: t.String()}})
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	ev := &structs.Event{
		Time: at, Type: structs.EventEntrySkipped,
		Message: fmt.Sprintf("skipped the %s log entry at index %d: %s", t, l.Index, why),
		Details: map[string]string{"Index": strconv.FormatUint(l.Index, 10), "Type": t.String()},
	}
	if aerr := f.State().AppendEvent(l.Index, ev); aerr != nil {
		f.log.Error("cannot record a skipped entry", "index", l.Index, "error", aerr)
	}
	if f.applied != nil {
		f.applied(EventAppendType)
	}
	return err
}

// Snapshot captures the store as it is now. It returns at once; the rows
// are encoded in Persist, off Raft's apply path.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return &snapshot{txn: f.State().Txn()}, nil
}

// Restore replaces the store with the snapshot's rows. Rows of a record
// kind this version does not know (a newer version's) are skipped with a
// warning, once per kind, as entries of unknown types flagged
// IgnoreUnknownTypeFlag are. A snapshot decoded ahead (Prepare) is read
// only to check it is the same, and its decoded rows are installed.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var s *state.Store
	if p := f.prepared.Swap(nil); p != nil {
		h := sha256.New()
		n, err := io.Copy(h, rc)
		if err != nil {
			return fmt.Errorf("restore snapshot: %w", err)
		}
		if n != p.size || [sha256.Size]byte(h.Sum(nil)) != p.sum {
			return fmt.Errorf("restore snapshot: it is not the one prepared (%d bytes, %d prepared)", n, p.size)
		}
		s = p.store
	} else {
		var err error
		if s, err = f.decode(rc); err != nil {
			return err
		}
	}
	old := f.state.Swap(s)
	old.Abandon()
	return nil
}

// Prepare decodes a snapshot as Restore would, and keeps what it decoded
// for the next Restore, which then installs it if it reads the same
// bytes: the operator's restore checks that a snapshot decodes before
// Raft persists it (raft.Restore panics when the FSM then fails), and
// decoding is most of a restore's time, so it is done once. It returns
// the error Restore would. The caller calls Unprepare once the restore
// returned, whether Raft restored or not.
func (f *FSM) Prepare(body []byte) error {
	s, err := f.decode(bytes.NewReader(body))
	if err != nil {
		return err
	}
	f.prepared.Store(&prepared{sum: sha256.Sum256(body), size: int64(len(body)), store: s})
	return nil
}

// Unprepare drops a snapshot Prepare kept that no Restore installed.
func (f *FSM) Unprepare() { f.prepared.Store(nil) }

// prepared is a snapshot decoded ahead of its restore (Prepare): the
// SHA-256 and size of its bytes, and its rows.
type prepared struct {
	sum   [sha256.Size]byte
	size  int64
	store *state.Store
}

// decode reads a snapshot's rows into a new store.
func (f *FSM) decode(rd io.Reader) (*state.Store, error) {
	skipped := map[uint8]int{}
	r, err := state.NewRestore()
	if err != nil {
		return nil, err
	}
	dec := codec.NewDecoder(bufio.NewReader(rd), structs.MsgpackHandle)
	for {
		var kind uint8
		if err := dec.Decode(&kind); err == io.EOF {
			break
		} else if err != nil {
			r.Abort()
			return nil, fmt.Errorf("restore snapshot: read record kind: %w", err)
		}
		err := r.Load(kind, dec.Decode)
		if errors.Is(err, state.ErrUnknownRecord) {
			if _, warned := skipped[kind]; !warned {
				f.log.Warn("skipping snapshot records of a kind this version does not know; upgrade this server", "kind", kind)
			}
			skipped[kind]++
			continue
		}
		if err != nil {
			r.Abort()
			return nil, fmt.Errorf("restore snapshot: %w", err)
		}
	}
	return r.Commit(), nil
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
