package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"

	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/caravan-sched/caravan/tlsutil"
	"github.com/caravan-sched/caravan/version"
	"github.com/hashicorp/raft"
)

// Server-only endpoints.
//
// Membership and Raft changes (PUT /v1/internal/member, POST
// /v1/operator/raft/join, DELETE /v1/operator/raft/peer) are for servers.
// The server that receives one checks who asks (isServer) before it acts
// or forwards, and the leader validates what is asked:
//
//   - Under TLS, the client certificate must be a server's, named
//     server.<region>.caravan. (An ACL management token is the other
//     identity to accept, once ACLs exist.)
//   - Without TLS there is no identity to check. Member updates and peer
//     removals are then accepted only from the host of a current Raft
//     peer (the request's remote address against the peers' Raft
//     addresses). Joins are accepted from anywhere, since a new server is
//     not a peer yet, but validated: the leader asks the joining server's
//     HTTP API (/v1/agent/self) and adds it only when it answers as a
//     Caravan server with the ID and Raft address of the request.
//   - Member records are validated the same way, and nobody but the
//     leader records the leader: followers forward to the leader's HTTP
//     address only as the leader recorded it, and the leader re-asserts
//     its record at every step.

// isServer reports whether a request comes from a server of this cluster,
// or from an operator with a management token: with ACLs on, a request
// whose token is the servers' shared token or a management token; with
// TLS, one whose verified client certificate names
// server.<region>.caravan. With neither it reports whether the request
// comes from the host of a current Raft peer, the most there is to check.
func (s *Server) isServer(r *http.Request) bool {
	if s.cfg.ACL.Enabled {
		if id, err := s.resolveToken(secretOf(r)); err == nil && (id.server || id.acl.IsManagement()) {
			return true
		}
	}
	if r.TLS != nil {
		region := ""
		if s.cfg.TLS != nil {
			region = s.cfg.TLS.Region
		}
		return tlsutil.PeerIsServer(r.TLS, region)
	}
	return !s.cfg.ACL.Enabled && s.fromPeerHost(r)
}

// fromPeerHost reports whether the request's remote address is on the host
// of a server in the Raft configuration.
func (s *Server) fromPeerHost(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	return slices.ContainsFunc(f.Configuration().Servers, func(sv raft.Server) bool {
		h, _, err := net.SplitHostPort(string(sv.Address))
		return err == nil && sameHost(h, host)
	})
}

// sameHost compares two hosts, as IP addresses when both are.
func sameHost(a, b string) bool {
	ia, ib := net.ParseIP(a), net.ParseIP(b)
	if ia != nil && ib != nil {
		return ia.Equal(ib)
	}
	return a == b
}

// serverOnly wraps a handler of a membership or Raft change: a request
// from anything but a server answers 403 before anything is done or
// forwarded. Without TLS, joins pass (see above).
func (s *Server) serverOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		join := r.URL.Path == "/v1/operator/raft/join"
		if (r.TLS != nil || s.cfg.ACL.Enabled || !join) && !s.isServer(r) {
			s.log.Warn("refused a server-only request", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
			http.Error(w, fmt.Sprintf("Permission denied: %s %s is for the servers of this cluster only (a server's certificate, the servers' token or a management token)", r.Method, r.URL.Path), http.StatusForbidden)
			return
		}
		h(w, r)
	}
}

// verifyServer asks the server at httpAddr who it is, and returns an error
// unless it answers as the Caravan server id at raftAddr.
func (s *Server) verifyServer(httpAddr, id, raftAddr string) error {
	var self structs.AgentSelf
	if err := s.call(http.MethodGet, httpAddr, "/v1/agent/self", nil, &self); err != nil {
		return badRequest("server %s does not answer as a Caravan server at %s: %v", id, httpAddr, err)
	}
	if self.ID != id || self.RaftAddr != raftAddr {
		return badRequest("the server at %s is %q with Raft address %q, not %s at %s", httpAddr, self.ID, self.RaftAddr, id, raftAddr)
	}
	return nil
}

// validateJoin checks a join request on the leader: the server answers at
// its HTTP address with its ID and Raft address, and no other server of the
// configuration has that Raft address.
func (s *Server) validateJoin(req structs.JoinRequest) error {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("read raft configuration: %w", err)
	}
	for _, sv := range f.Configuration().Servers {
		if string(sv.Address) == req.RaftAddr && string(sv.ID) != req.ID {
			return badRequest("Raft address %s is server %s's", req.RaftAddr, sv.ID)
		}
	}
	return s.verifyServer(req.HTTPAddr, req.ID, req.RaftAddr)
}

// validateMember checks a member record on the leader: it is another
// server's (the leader records itself), in the Raft configuration at its
// Raft address, and the server answers at its HTTP address.
func (s *Server) validateMember(m *structs.Member) error {
	if m.ID == s.cfg.NodeID {
		return badRequest("server %s leads and records its own addresses", m.ID)
	}
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("read raft configuration: %w", err)
	}
	if !slices.ContainsFunc(f.Configuration().Servers, func(sv raft.Server) bool {
		return string(sv.ID) == m.ID && string(sv.Address) == m.RaftAddr
	}) {
		return badRequest("no server %s at Raft address %s in the Raft configuration", m.ID, m.RaftAddr)
	}
	return s.verifyServer(m.HTTPAddr, m.ID, m.RaftAddr)
}

// selfMember is this server's own member record.
func (s *Server) selfMember() *structs.Member {
	return &structs.Member{ID: s.cfg.NodeID, Name: s.cfg.NodeName, RaftAddr: s.RaftAddr(), HTTPAddr: s.httpAddr, Version: version.Number()}
}

// assertSelf commits the leader's member record when the state's differs,
// so that a record of the leader written by anyone else (a restored
// snapshot, a forged request) lasts one step at most.
func (l *leader) assertSelf(ctx context.Context) error {
	s := l.s
	me := s.selfMember()
	members, err := state.Members(s.State().Txn(), nil)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(members, func(m *structs.Member) bool { return *m == *me }) {
		return nil
	}
	if _, _, err := s.apply(ctx, fsm.MemberUpsertType, &fsm.MemberUpsertRequest{Member: me}); err != nil {
		return fmt.Errorf("record the leader's addresses: %w", err)
	}
	l.log.Warn("recorded the leader's addresses again: the state held others")
	return nil
}
