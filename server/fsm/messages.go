package fsm

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-msgpack/v2/codec"
)

// MessageType is the first byte of a Raft log entry. Values are part of the
// log format: never renumber them, only append.
type MessageType uint8

// Message types.
const (
	JobRegisterType MessageType = iota + 1
	JobStopType
	JobStatusType
	PlanApplyType
	SampleBatchType
	NodesReplaceType
	SchedulerConfigType
	MemberUpsertType
	MemberDeleteType
	EventAppendType
	DecisionApplyType
	ObservedUpsertType
	ACLBootstrapType
	ACLPolicyUpsertType
	ACLPolicyDeleteType
	ACLTokenUpsertType
	ACLTokenDeleteType
	UsageUpsertType
	// SampleAppendType adds samples as SampleBatchType does, but stores
	// a sample whose identity (job, task, step, time and configuration)
	// is stored already once: a retried report is kept once (0.2.0).
	SampleAppendType
	// ACLBootstrapResetType bootstraps ACLs again after an operator's
	// reset (0.2.0).
	ACLBootstrapResetType
	// JobRejectType records that a job declared in the cluster was
	// rejected at a version (0.2.0).
	JobRejectType
	// QueueUpsertType stores queues (issue 32), all or none (0.2.0).
	QueueUpsertType
	// QueueDeleteType deletes queues by name, all or none (0.2.0).
	QueueDeleteType
	// JobGCType purges jobs the leader's job garbage collector found
	// ended long enough ago, each only if unchanged since (0.2.0).
	JobGCType
	// RetentionSetType sets the bounds on what the state keeps of each
	// job's samples and placement history and of the events (0.2.0).
	RetentionSetType
)

// since holds the message types added after 0.1.0, with the version that
// added them. A server of an earlier version cannot apply them (it panics
// on an unknown type), so a leader writes one only once every server in
// the Raft configuration has recorded that version or a later one, as
// Nomad's ServersMeetMinimumVersion gates new features; see Since.
var since = map[MessageType]string{
	SampleAppendType:      "0.2.0",
	ACLBootstrapResetType: "0.2.0",
	JobRejectType:         "0.2.0",
	QueueUpsertType:       "0.2.0",
	QueueDeleteType:       "0.2.0",
	JobGCType:             "0.2.0",
	RetentionSetType:      "0.2.0",
}

// Since returns the version that added message type t, or "" for a type
// every version applies. t may carry IgnoreUnknownTypeFlag.
func Since(t MessageType) string { return since[t&^IgnoreUnknownTypeFlag] }

// IgnoreUnknownTypeFlag, set in a message type, lets a server that does not
// know the type skip the entry with a warning instead of panicking, as
// Nomad and Consul do for rolling upgrades: a leader running a newer
// version may write entries an older follower cannot apply. Set it only on
// types whose loss on older servers is harmless, such as new, advisory
// records; a server that knows the type applies it as if the flag were
// clear. Types stay below it: it is bit 7 of the type byte.
const IgnoreUnknownTypeFlag MessageType = 128

func (t MessageType) String() string {
	if n, ok := messageNames[t]; ok {
		return n
	}
	return fmt.Sprintf("MessageType(%d)", uint8(t))
}

var messageNames = map[MessageType]string{
	JobRegisterType: "JobRegister", JobStopType: "JobStop", JobStatusType: "JobStatus",
	PlanApplyType: "PlanApply", SampleBatchType: "SampleBatch", NodesReplaceType: "NodesReplace",
	SchedulerConfigType: "SchedulerConfig", MemberUpsertType: "MemberUpsert",
	MemberDeleteType: "MemberDelete", EventAppendType: "EventAppend",
	DecisionApplyType: "DecisionApply", ObservedUpsertType: "ObservedUpsert",
	ACLBootstrapType: "ACLBootstrap", ACLPolicyUpsertType: "ACLPolicyUpsert", ACLPolicyDeleteType: "ACLPolicyDelete",
	ACLTokenUpsertType: "ACLTokenUpsert", ACLTokenDeleteType: "ACLTokenDelete",
	UsageUpsertType: "UsageUpsert", SampleAppendType: "SampleAppend", ACLBootstrapResetType: "ACLBootstrapReset",
	JobRejectType: "JobReject", QueueUpsertType: "QueueUpsert", QueueDeleteType: "QueueDelete",
	JobGCType: "JobGC", RetentionSetType: "RetentionSet",
}

// JobRegisterRequest registers a new version of a job, or nothing when an
// active job has the same spec. With MustBeNew the registration fails if an
// active job has the same ID and another spec.
type JobRegisterRequest struct {
	Job       *structs.Job
	MustBeNew bool
	Time      int64
	// FreshRun deletes an earlier run's samples and models when the
	// registration starts a new run (state.RegisterJob); set once every
	// server is at 0.2.0, so that all apply the entry alike.
	FreshRun bool
}

// JobStopRequest stops a job, and with Purge deletes it.
type JobStopRequest struct {
	Namespace, JobID string
	Purge            bool
	Time             int64
}

// JobStatusRequest records a job's status as its driver reports it.
type JobStatusRequest struct {
	Namespace, JobID    string
	Status, Description string
	Time                int64
}

// JobRejectRequest records that the cluster's version NomadIndex of a
// job declared there was rejected, and why (see state.Store.RejectJob).
type JobRejectRequest struct {
	Namespace, JobID string
	// Name is the job's display name in the cluster.
	Name       string
	NomadIndex uint64
	// Description says why, one error a line.
	Description string
	Time        int64
}

// PlanApplyRequest commits a whole-cluster plan and the models it was made
// with. Leaders no longer send it (they send DecisionApplyRequest, which
// carries only what changed); it stays for the logs of earlier versions.
type PlanApplyRequest struct {
	Plan   *structs.Plan
	Models []*structs.JobModel
}

// DecisionApplyRequest commits the placements an algorithm decided for
// the jobs whose placement changed, and the models that changed.
type DecisionApplyRequest struct {
	Algorithm  string
	Placements []*structs.Placement
	Models     []*structs.JobModel
	Time       int64
}

// ObservedUpsertRequest records what the driver reports runs of the jobs
// whose observed state changed.
type ObservedUpsertRequest struct {
	Observed []*structs.Observed
	Time     int64
}

// UsageUpsertRequest records what the tasks of jobs use, as their driver
// measured it; the leader sends it at a bounded rate.
type UsageUpsertRequest struct {
	Usage []*structs.JobUsage
	Time  int64
}

// SampleBatchRequest adds trainers' samples, as a SampleAppendType entry
// (or a SampleBatchType entry, which may store a repeated sample twice, while
// servers of 0.1.0 remain); Cursor is the metrics source's cursor after
// them, 0 to leave it as it is (samples that trainers reported to the API,
// not read from a source).
type SampleBatchRequest struct {
	Samples []structs.Sample
	Cursor  uint64
}

// NodesReplaceRequest sets the cluster's nodes.
type NodesReplaceRequest struct {
	Nodes []*structs.Node
}

// SchedulerConfigRequest sets the scheduler configuration.
type SchedulerConfigRequest struct {
	Config *structs.SchedulerConfig
	Time   int64
}

// MemberUpsertRequest records how to reach a server.
type MemberUpsertRequest struct {
	Member *structs.Member
}

// MemberDeleteRequest forgets a server.
type MemberDeleteRequest struct {
	ID string
}

// EventAppendRequest records an event.
type EventAppendRequest struct {
	Event *structs.Event
}

// ACLBootstrapRequest stores the first management token, once. The
// leader generates its IDs before committing, so that applying it is
// deterministic.
type ACLBootstrapRequest struct {
	Token *structs.ACLToken
	Time  int64
	// ReportKey is the key of per-job report tokens, random bytes the
	// leader drew.
	ReportKey []byte
}

// ACLBootstrapResetRequest bootstraps ACLs again (the operator's reset
// after the last management token is lost): it stores Token as a new
// management token only if the state's current bootstrap is at
// ResetIndex, which the leader read from the reset file of its data
// directory. The index travels in the entry, so that every server decides
// alike from its own state. It is a type of its own rather than a field of
// ACLBootstrapRequest: a server that does not know it must not apply it as
// a refused first bootstrap while newer servers apply it as a reset.
type ACLBootstrapResetRequest struct {
	Token      *structs.ACLToken
	Time       int64
	ResetIndex uint64
	// ReportKey is used only if the current bootstrap has no report key.
	ReportKey []byte
}

// ACLPolicyUpsertRequest stores ACL policies.
type ACLPolicyUpsertRequest struct {
	Policies []*structs.ACLPolicy
}

// ACLPolicyDeleteRequest deletes ACL policies by name.
type ACLPolicyDeleteRequest struct {
	Names []string
}

// ACLTokenUpsertRequest stores ACL tokens, IDs generated by the leader.
type ACLTokenUpsertRequest struct {
	Tokens []*structs.ACLToken
}

// ACLTokenDeleteRequest deletes ACL tokens by AccessorID.
type ACLTokenDeleteRequest struct {
	AccessorIDs []string
}

// QueueUpsertRequest stores queues, all or none: the FSM checks them
// again (state.CheckQueues) and refuses the whole entry, changing
// nothing, when one is invalid, conflicts with another or would exceed
// structs.MaxQueues.
type QueueUpsertRequest struct {
	Queues []*structs.Queue
}

// QueueDeleteRequest deletes queues by name, all or none.
type QueueDeleteRequest struct {
	Names []string
}

// JobGCRequest purges the jobs the leader's job garbage collector found
// ended before its threshold, as it found them (state.CollectJobs): a
// job that is active again, or whose record changed since, is left. The
// leader sends at most MaxJobGC jobs an entry.
type JobGCRequest struct {
	Jobs []state.Collectable
	Time int64
}

// MaxJobGC bounds the jobs of one JobGCRequest, so that one entry, and
// the write transaction that applies it, stays small.
const MaxJobGC = 256

// JobGCResponse is what applying a JobGCRequest returns: how many of its
// jobs were purged.
type JobGCResponse struct {
	Collected int
}

// RetentionSetRequest sets the retention bounds (state.SetRetention):
// the leader commits its agent's when they differ from those in force.
type RetentionSetRequest struct {
	Retention *structs.Retention
}

// Encode returns the Raft log entry of a request of type t. What can be
// written can be applied: the entry is decoded back with the FSM's own
// decoder into the type's request (t may carry IgnoreUnknownTypeFlag), and a request that does not survive
// the round trip (nesting beyond the decoder's maximum depth, say) is
// refused with ErrTooComplex before anything is committed. Every write
// goes through here (Server.apply), so no limit can differ between the
// API and the FSM.
func Encode(t MessageType, req any) ([]byte, error) {
	cmd, ok := commands[t&^IgnoreUnknownTypeFlag]
	if !ok {
		return nil, fmt.Errorf("encode %s: unknown message type", t)
	}
	back := cmd.newRequest()
	if reflect.TypeOf(back) != reflect.TypeOf(req) {
		return nil, fmt.Errorf("encode %s: request is a %T, want %T", t, req, back)
	}
	var buf bytes.Buffer
	buf.WriteByte(byte(t))
	if err := codec.NewEncoder(&buf, structs.MsgpackHandle).Encode(req); err != nil {
		return nil, fmt.Errorf("%w: encode %s: %w", ErrTooComplex, t, err)
	}
	if err := decode(buf.Bytes()[1:], back); err != nil {
		return nil, fmt.Errorf("%w: %s does not decode as the state machine reads it: %w", ErrTooComplex, t, err)
	}
	return buf.Bytes(), nil
}

func decode(buf []byte, v any) error {
	return codec.NewDecoderBytes(buf, structs.MsgpackHandle).Decode(v)
}
