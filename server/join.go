package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/caravan-sched/caravan/version"
	"github.com/hashicorp/raft"
)

func (s *Server) self() structs.AgentSelf {
	_, leader := s.raft.LeaderWithID()
	voters := 0
	if f := s.raft.GetConfiguration(); f.Error() == nil {
		voters = len(f.Configuration().Servers)
	}
	return structs.AgentSelf{
		Version: version.String(), ID: s.cfg.NodeID, Name: s.cfg.NodeName, HTTPAddr: s.httpAddr, RaftAddr: s.RaftAddr(),
		LeaderID: string(leader), Voters: voters, SimSpeed: s.cfg.SimSpeed, Nomad: s.cfg.Nomad,
	}
}

// join makes the server part of a cluster: it bootstraps alone when it
// expects to be the only server, and otherwise asks the servers in
// RetryJoin, every RetryInterval, until either one of them leads a cluster
// it can join or BootstrapExpect servers know each other and bootstrap
// together. A server restarted with Raft state on disk rejoins through
// Raft itself when the cluster still counts it, at its address; one that
// left, or comes back at another address, asks to join again.
func (s *Server) join() {
	defer s.wg.Done()
	go s.registerSelf()
	if s.bootstrapped && s.isMember() {
		return
	}
	if s.cfg.BootstrapExpect == 1 && len(s.cfg.RetryJoin) == 0 {
		s.bootstrap([]structs.AgentSelf{s.self()})
		return
	}
	tick := time.NewTimer(0)
	defer tick.Stop()
	for {
		select {
		case <-s.shutdownCtx.Done():
			return
		case <-tick.C:
		}
		if s.tryJoin() {
			return
		}
		tick.Reset(s.cfg.RetryInterval)
	}
}

func (s *Server) tryJoin() bool {
	if _, leader := s.raft.LeaderWithID(); leader != "" {
		return true
	}
	known := []structs.AgentSelf{s.self()}
	for _, addr := range s.joinAddrs() {
		var peer structs.AgentSelf
		if err := s.call(http.MethodGet, addr, "/v1/agent/self", nil, &peer); err != nil {
			s.log.Debug("cannot reach server to join", "address", addr, "error", err)
			continue
		}
		if peer.ID == s.cfg.NodeID {
			continue
		}
		if peer.LeaderID != "" && peer.Voters > 0 {
			req := structs.JoinRequest{ID: s.cfg.NodeID, RaftAddr: s.RaftAddr(), HTTPAddr: s.httpAddr}
			if err := s.call(http.MethodPost, addr, "/v1/operator/raft/join", req, nil); err != nil {
				s.log.Warn("failed to join cluster", "address", addr, "error", err)
				continue
			}
			s.log.Info("joined cluster", "through", addr)
			return true
		}
		if peer.Voters > 0 {
			// Part of a cluster that is electing a leader: join it
			// once it has one rather than bootstrap another.
			s.log.Info("waiting for the cluster to elect a leader to join", "peer", addr)
			return false
		}
		if !slices.ContainsFunc(known, func(k structs.AgentSelf) bool { return k.ID == peer.ID }) {
			known = append(known, peer)
		}
	}
	if s.bootstrapped {
		// Raft state cannot be bootstrapped again: only a leader can
		// take this server back.
		s.log.Info("waiting for a leader to rejoin the cluster through")
		return false
	}
	if len(known) < s.cfg.BootstrapExpect {
		s.log.Info("waiting for servers to bootstrap", "known", len(known), "bootstrap_expect", s.cfg.BootstrapExpect)
		return false
	}
	s.bootstrap(known)
	return true
}

// isMember reports whether the latest Raft configuration holds this
// server at its current address.
func (s *Server) isMember() bool {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	return slices.ContainsFunc(f.Configuration().Servers, func(sv raft.Server) bool {
		return string(sv.ID) == s.cfg.NodeID && string(sv.Address) == s.RaftAddr()
	})
}

// bootstrap forms a cluster of servers. Every server that sees the same set
// bootstraps with the same configuration, which Raft allows.
func (s *Server) bootstrap(servers []structs.AgentSelf) {
	var conf raft.Configuration
	for _, sv := range servers {
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(sv.ID), Address: raft.ServerAddress(sv.RaftAddr), Suffrage: raft.Voter})
	}
	slices.SortFunc(conf.Servers, func(a, b raft.Server) int { return strings.Compare(string(a.ID), string(b.ID)) })
	if err := s.raft.BootstrapCluster(conf).Error(); err != nil && err != raft.ErrCantBootstrap {
		s.log.Error("failed to bootstrap cluster", "error", err)
		return
	}
	s.log.Info("bootstrapped cluster", "servers", len(conf.Servers))
}

// registerSelf records the server's addresses in the replicated state once
// there is a leader, so that followers can forward writes to whichever
// server leads. The leader registers itself when it takes over. A leader
// before 0.2.0 refuses a record with a Version (its decoder knows no such
// field): until a new leader takes over, the record goes without one.
func (s *Server) registerSelf() {
	tick := time.NewTicker(s.cfg.Poll)
	defer tick.Stop()
	for {
		select {
		case <-s.shutdownCtx.Done():
			return
		case <-tick.C:
		}
		if s.IsLeader() {
			continue // the leader loop registers the leader
		}
		leader, err := s.leaderMember()
		if err != nil {
			continue
		}
		me := s.selfMember()
		if leader.Version == "" {
			me.Version = ""
		}
		members, err := state.Members(s.State().Txn(), nil)
		if err == nil && slices.ContainsFunc(members, func(m *structs.Member) bool { return *m == *me }) {
			continue
		}
		if err := s.call(http.MethodPut, leader.HTTPAddr, "/v1/internal/member", me, nil); err != nil {
			s.log.Debug("failed to register with the leader", "error", err)
		}
	}
}

// leaderHTTP returns the HTTP address of the leader, as the leader
// recorded it (leaderMember).
func (s *Server) leaderHTTP() (string, error) {
	m, err := s.leaderMember()
	if err != nil {
		return "", err
	}
	return m.HTTPAddr, nil
}

// leaderMember returns the leader's member record: the record of the
// leader's ID at the leader's Raft address (only the leader records
// itself, see serveronly.go).
func (s *Server) leaderMember() (*structs.Member, error) {
	addr, id := s.raft.LeaderWithID()
	if id == "" {
		return nil, ErrNoLeader
	}
	members, err := state.Members(s.State().Txn(), nil)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		if m.ID == string(id) && m.RaftAddr == string(addr) {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w: the address of leader %s is not known yet", ErrNoLeader, id)
}

// forwardLeave asks the leader to remove this server.
func (s *Server) forwardLeave() error {
	addr, err := s.leaderHTTP()
	if err != nil {
		return err
	}
	return s.call(http.MethodDelete, addr, "/v1/operator/raft/peer?id="+s.cfg.NodeID, nil, nil)
}

// addPeer adds a server to the Raft configuration; leader only.
func (s *Server) addPeer(req structs.JoinRequest) error {
	if err := s.await(s.raft.AddVoter(raft.ServerID(req.ID), raft.ServerAddress(req.RaftAddr), 0, 10*time.Second)); err != nil {
		return fmt.Errorf("add server %s: %w", req.ID, err)
	}
	return nil
}

// removePeer removes a server from the Raft configuration and the member
// table; leader only.
func (s *Server) removePeer(ctx context.Context, id string) error {
	if err := s.await(s.raft.RemoveServer(raft.ServerID(id), 0, 10*time.Second)); err != nil {
		return fmt.Errorf("remove server %s: %w", id, err)
	}
	_, _, err := s.apply(ctx, fsm.MemberDeleteType, &fsm.MemberDeleteRequest{ID: id})
	return err
}

// call makes a JSON request to another server's HTTP API.
func (s *Server) call(method, addr, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		buf, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(buf)
	}
	ctx, cancel := context.WithTimeout(s.shutdownCtx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.peerScheme()+"://"+addr+path, body)
	if err != nil {
		return err
	}
	if t := s.cfg.ACL.ServerToken; t != "" {
		req.Header.Set("X-Caravan-Token", t)
	}
	resp, err := (&http.Client{Transport: s.peerTransport}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(msg))
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
