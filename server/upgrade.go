package server

import (
	"fmt"

	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/hashicorp/go-version"
)

// supports reports whether every server in the Raft configuration applies
// entries of message type t: t is as old as the first release (fsm.Since
// is empty), or every server has recorded, in its member record, a version
// no earlier than the one that added t (prereleases count as their
// release: 0.2.0-dev applies what 0.2.0 does). A server without a record,
// or whose record has no version (one before 0.2.0), supports only the
// first release's types. This is Nomad's ServersMeetMinimumVersion, over
// the replicated member table rather than gossip.
func (s *Server) supports(t fsm.MessageType) bool {
	return s.supportsErr(t) == nil
}

// supportsErr is supports with the reason when it is false.
func (s *Server) supportsErr(t fsm.MessageType) error {
	since := fsm.Since(t)
	if since == "" {
		return nil
	}
	need := version.Must(version.NewVersion(since))
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("read raft configuration: %w", err)
	}
	members, err := state.Members(s.State().Txn(), nil)
	if err != nil {
		return err
	}
	recorded := map[string]string{}
	for _, m := range members {
		recorded[m.ID] = m.Version
	}
	for _, sv := range f.Configuration().Servers {
		v, err := version.NewVersion(recorded[string(sv.ID)])
		if err != nil || v.Core().LessThan(need) {
			return fmt.Errorf("%w: %s entries need every server at %s or later, and server %s records %q", ErrUpgradeInProgress, t, since, sv.ID, recorded[string(sv.ID)])
		}
	}
	return nil
}

// sampleType is the message type samples are committed with: SampleAppend,
// which stores a repeated sample once, when every server applies it, and
// SampleBatch while a server of 0.1.0 remains.
func (s *Server) sampleType() fsm.MessageType {
	if s.supports(fsm.SampleAppendType) {
		return fsm.SampleAppendType
	}
	return fsm.SampleBatchType
}
