package server

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/caravan-sched/caravan/tlsutil"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"
)

// tlsCluster starts n servers with TLS on for HTTP and Raft, all with the
// server certificate of certs.
func tlsCluster(t *testing.T, n int, certs *tlsutil.TestCerts) []*Server {
	var addrs []string
	for _, port := range agent.FreePorts(t, n) {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	driver := simDriver(t, 50)
	var servers []*Server
	for i := range n {
		cfg := TestConfig(t, driver)
		cfg.NodeName = fmt.Sprintf("server-%d", i+1)
		cfg.HTTPAddr = addrs[i]
		cfg.BootstrapExpect = n
		cfg.RetryJoin = addrs
		TestTLS(&cfg, certs)
		servers = append(servers, TestServer(t, cfg))
	}
	return servers
}

func followerOf(servers []*Server, leader *Server) *Server {
	for _, s := range servers {
		if s != leader {
			return s
		}
	}
	return nil
}

func TestCluster_TLS(t *testing.T) {
	certs := tlsutil.NewTestCerts(t, "")
	servers := tlsCluster(t, 3, certs)
	leader := leaderOf(t, servers...)
	follower := followerOf(servers, leader)

	// A write to a follower is forwarded to the leader over TLS, with the
	// follower's server certificate.
	fc := TestTLSClient(t, follower, certs)
	agent.WaitFor(t, 10*time.Second, "forwarding to the leader", func() error {
		_, _, err := fc.Jobs().Register(demoJob(t, "a"), nil)
		return err
	})
	job, err := state.JobByID(leader.State().Txn(), nil, structs.DefaultNamespace, "a")
	must.NoError(t, err)
	must.NotNil(t, job)
	for _, s := range servers {
		must.Eq(t, 3, s.self().Voters)
	}

	// A client without a certificate is refused at the handshake.
	noCert, err := api.NewClient(&api.Config{Address: "https://" + follower.HTTPAddr(), TLSConfig: &api.TLSConfig{
		CACert: certs.CAFile, TLSServerName: tlsutil.ServerName(certs.Region),
	}})
	must.NoError(t, err)
	_, _, err = noCert.Jobs().List(nil)
	must.ErrorContains(t, err, "certificate required")

	// A client of another CA does not trust the server.
	rogue := tlsutil.NewTestCerts(t, "")
	_, _, err = TestTLSClient(t, follower, rogue).Jobs().List(nil)
	must.ErrorContains(t, err, "certificate signed by unknown authority")

	// Plain HTTP gets a 400 that says to use https.
	_, _, err = client(t, follower).Jobs().List(nil)
	var apiErr *api.Error
	must.True(t, errors.As(err, &apiErr), must.Sprintf("got %v", err))
	must.Eq(t, 400, apiErr.StatusCode)
	must.StrContains(t, apiErr.Message, "use an https:// address")
}

// forgeRequestVote sends a RequestVote as raft's NetworkTransport frames
// it (the RPC type byte, then the msgpack request) over conn, in the name
// of candidate with a term far ahead and the leadership-transfer flag, so
// that a leader that accepts it steps down; it returns the response's
// term, or the error of the connection.
func forgeRequestVote(conn net.Conn, candidate raft.Server, term uint64) (uint64, error) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	w := bufio.NewWriter(conn)
	w.WriteByte(1) // rpcRequestVote
	req := raft.RequestVoteRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(candidate.ID), Addr: []byte(candidate.Address)},
		Term:      term, LastLogIndex: 1 << 40, LastLogTerm: term, LeadershipTransfer: true,
	}
	if err := codec.NewEncoder(w, &codec.MsgpackHandle{}).Encode(&req); err != nil {
		return 0, err
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	dec := codec.NewDecoder(bufio.NewReader(conn), &codec.MsgpackHandle{})
	var rpcErr string
	if err := dec.Decode(&rpcErr); err != nil {
		return 0, err
	}
	var resp raft.RequestVoteResponse
	if err := dec.Decode(&resp); err != nil {
		return 0, err
	}
	return resp.Term, nil
}

func TestCluster_TLSRefusesForgedRequestVote(t *testing.T) {
	certs := tlsutil.NewTestCerts(t, "")
	servers := tlsCluster(t, 3, certs)
	leader := leaderOf(t, servers...)
	follower := followerOf(servers, leader)
	candidate := raft.Server{ID: raft.ServerID(follower.ID()), Address: raft.ServerAddress(follower.RaftAddr())}
	term := leader.raft.CurrentTerm()

	keypair := func(cert, key string) []tls.Certificate {
		pair, err := tls.LoadX509KeyPair(cert, key)
		must.NoError(t, err)
		return []tls.Certificate{pair}
	}
	dialTLS := func(certs []tls.Certificate) (net.Conn, error) {
		return tls.Dial("tcp", leader.RaftAddr(), &tls.Config{InsecureSkipVerify: true, Certificates: certs})
	}
	west := *certs.Config()
	west.CertFile, west.KeyFile = certs.Issue(t, "west-server", tlsutil.CertOptions{Name: tlsutil.ServerName("west"), Server: true})
	rogue := tlsutil.NewTestCerts(t, "")

	attempts := []struct {
		name string
		dial func() (net.Conn, error)
	}{
		{"plain tcp", func() (net.Conn, error) { return net.Dial("tcp", leader.RaftAddr()) }},
		{"tls without certificate", func() (net.Conn, error) { return dialTLS(nil) }},
		{"client certificate of the CA", func() (net.Conn, error) { return dialTLS(keypair(certs.ClientCert, certs.ClientKey)) }},
		{"server certificate of another region", func() (net.Conn, error) { return dialTLS(keypair(west.CertFile, west.KeyFile)) }},
		{"server certificate of another CA", func() (net.Conn, error) { return dialTLS(keypair(rogue.ServerCert, rogue.ServerKey)) }},
	}
	for _, a := range attempts {
		t.Run(a.name, func(t *testing.T) {
			conn, err := a.dial()
			if err == nil {
				// The leader closes the connection without reading the
				// request: once the error is back, nothing reached Raft.
				_, err = forgeRequestVote(conn, candidate, term+100)
			}
			must.Error(t, err)
			must.True(t, leader.IsLeader(), must.Sprint("the leader keeps its leadership"))
			must.Eq(t, term, leader.raft.CurrentTerm())
		})
	}

	// The same request with a server certificate of the cluster reaches
	// Raft and costs the leader its leadership: the refusals above are the
	// handshake's, not a malformed request's.
	conn, err := dialTLS(keypair(certs.ServerCert, certs.ServerKey))
	must.NoError(t, err)
	got, err := forgeRequestVote(conn, candidate, term+100)
	must.NoError(t, err)
	must.Eq(t, term+100, got)
	must.False(t, leader.IsLeader() && leader.raft.CurrentTerm() == term)
}

func TestServer_ReloadTLS(t *testing.T) {
	certs := tlsutil.NewTestCerts(t, "")
	cfg := TestConfig(t, simDriver(t, 50))
	TestTLS(&cfg, certs)
	s := TestServer(t, cfg)
	leaderOf(t, s)
	_, _, err := TestTLSClient(t, s, certs).Jobs().List(nil)
	must.NoError(t, err)

	// New CA and certificates in the files: after ReloadTLS the server
	// serves the new certificate and takes only the new CA's clients.
	fresh := tlsutil.NewTestCerts(t, "")
	for src, dst := range map[string]string{fresh.CAFile: certs.CAFile, fresh.ServerCert: certs.ServerCert, fresh.ServerKey: certs.ServerKey} {
		buf, err := os.ReadFile(src)
		must.NoError(t, err)
		must.NoError(t, os.WriteFile(dst, buf, 0o600))
	}
	_, _, err = TestTLSClient(t, s, fresh).Jobs().List(nil)
	must.ErrorContains(t, err, "certificate signed by unknown authority") // not reloaded yet
	must.NoError(t, s.ReloadTLS())
	_, _, err = TestTLSClient(t, s, fresh).Jobs().List(nil)
	must.NoError(t, err)
	// certs' CA file holds the new CA now, but its client certificate is
	// the old CA's.
	_, _, err = TestTLSClient(t, s, certs).Jobs().List(nil)
	must.ErrorContains(t, err, "remote error: tls:") // not sent, or refused

	// A broken file is refused, and the certificates in force stay.
	must.NoError(t, os.WriteFile(certs.ServerKey, []byte("garbage"), 0o600))
	must.Error(t, s.ReloadTLS())
	_, _, err = TestTLSClient(t, s, fresh).Jobs().List(nil)
	must.NoError(t, err)
}
