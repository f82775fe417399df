package server

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"
)

// readyCluster starts a cluster of 3 and returns its leader and followers
// once every follower knows the leader's HTTP address.
func readyCluster(t *testing.T) (*Server, []*Server) {
	t.Helper()
	servers := cluster(t, 3, simDriver(t, 50))
	leader := leaderOf(t, servers...)
	var followers []*Server
	for _, s := range servers {
		if s != leader {
			followers = append(followers, s)
		}
	}
	for _, f := range followers {
		agent.WaitFor(t, 10*time.Second, "the follower knows the leader's address", func() error {
			_, err := f.leaderHTTP()
			return err
		})
	}
	return leader, followers
}

func TestReads_ReadYourWritesThroughFollower(t *testing.T) {
	leader, followers := readyCluster(t)
	fc := client(t, followers[0])
	ctx := context.Background()
	found := 0
	for i := range 200 {
		id := fmt.Sprintf("ryw-%d", i)
		// Under load the test cluster's short Raft timeouts can move
		// leadership during a write, which is answered 503 with the outcome
		// unknown; only an acknowledged write must be readable, so such a
		// write is sent again.
		agent.WaitFor(t, 10*time.Second, "the registration of "+id+" is acknowledged", func() error {
			_, _, err := fc.Jobs().Register(demoJob(t, id), (&api.WriteOptions{}).WithContext(ctx))
			return err
		})
		// A read answered with an error (leadership moving again) says
		// nothing and is asked again; one answered "not found" is a
		// stale read.
		var job *api.Job
		var meta *api.QueryMeta
		agent.WaitFor(t, 10*time.Second, "a consistent read of "+id, func() error {
			var err error
			job, meta, err = fc.Jobs().Info(id, nil)
			if api.IsNotFound(err) {
				t.Fatalf("a read through a follower does not see %s, whose registration was acknowledged", id)
			}
			return err
		})
		if job.ID == id {
			found++
			must.True(t, meta.KnownLeader, must.Sprint("a consistent read is the leader's"))
			must.Eq(t, 0, meta.LastContact)
		}
	}
	must.Eq(t, 200, found, must.Sprint("reads through a follower see the writes acknowledged before"))

	// ?stale is answered by the follower itself, with how stale it may be.
	agent.WaitFor(t, 10*time.Second, "the follower has the last job", func() error {
		_, _, err := fc.Jobs().Info("ryw-199", &api.QueryOptions{AllowStale: true})
		return err
	})
	_, meta, err := fc.Jobs().Info("ryw-199", &api.QueryOptions{AllowStale: true})
	must.NoError(t, err)
	must.True(t, meta.KnownLeader)
	must.Less(t, 5*time.Second, meta.LastContact)
	// Leadership may have moved under load: whichever server leads
	// answers a stale read as fresh.
	agent.WaitFor(t, 10*time.Second, "the leader answers a stale read with no contact delay", func() error {
		cur := leaderOf(t, leader, followers[0], followers[1])
		_, meta, err := client(t, cur).Jobs().Info("ryw-199", &api.QueryOptions{AllowStale: true})
		if err != nil {
			return err
		}
		if !meta.KnownLeader || meta.LastContact != 0 {
			return fmt.Errorf("known leader %v, last contact %v", meta.KnownLeader, meta.LastContact)
		}
		return nil
	})

	// Without the others, the follower still answers stale reads, and
	// says it knows no leader.
	must.NoError(t, leader.Shutdown())
	must.NoError(t, followers[1].Shutdown())
	agent.WaitFor(t, 10*time.Second, "the follower knows it has no leader", func() error {
		_, meta, err := fc.Jobs().Info("ryw-199", &api.QueryOptions{AllowStale: true})
		if err != nil {
			return err
		}
		if meta.KnownLeader {
			return errors.New("still knows a leader")
		}
		return nil
	})
	// A consistent read waits for a leader, not answered from here.
	qctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, _, err = fc.Jobs().Info("ryw-199", (&api.QueryOptions{}).WithContext(qctx))
	must.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestReads_BlockingOnFollower asks a follower for the next index of a job
// not registered yet, consistently and with ?stale: both wait, and answer
// once the job is registered.
func TestReads_BlockingOnFollower(t *testing.T) {
	leader, followers := readyCluster(t)
	fc := client(t, followers[0])
	_, meta, err := fc.Jobs().List(nil)
	must.NoError(t, err)
	type answer struct {
		job *api.Job
		err error
	}
	answers := make(chan answer, 2)
	for _, stale := range []bool{false, true} {
		go func() {
			job, _, err := fc.Jobs().Info("next", &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 20 * time.Second, AllowStale: stale})
			answers <- answer{job, err}
		}()
	}
	select {
	case a := <-answers:
		t.Fatalf("a blocking query answered before the write: %v, %v", a.job, a.err)
	case <-time.After(300 * time.Millisecond):
	}
	_, _, err = client(t, leader).Jobs().Register(demoJob(t, "next"), nil)
	must.NoError(t, err)
	for range 2 {
		select {
		case a := <-answers:
			must.NoError(t, a.err)
			must.Eq(t, "next", a.job.ID)
		case <-time.After(10 * time.Second):
			t.Fatal("a blocking query did not answer after the write")
		}
	}
}

// TestReads_FollowerHoldsAcrossLeaderKill kills the leader and, at once,
// writes and reads through a follower: the requests wait for the new
// leader instead of failing.
func TestReads_FollowerHoldsAcrossLeaderKill(t *testing.T) {
	leader, followers := readyCluster(t)
	fc := client(t, followers[0])
	ctx := context.Background()
	_, _, err := fc.Jobs().Register(demoJob(t, "before"), (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err)

	start := time.Now()
	must.NoError(t, leader.Shutdown())
	_, _, err = fc.Jobs().Register(demoJob(t, "during"), (&api.WriteOptions{}).WithContext(ctx))
	must.NoError(t, err, must.Sprintf("a write through a follower waits for the new leader: %v", err))
	t.Logf("write answered %v after the leader was killed", time.Since(start))
	for _, id := range []string{"before", "during"} {
		job, _, err := fc.Jobs().Info(id, nil)
		must.NoError(t, err)
		must.Eq(t, id, job.ID)
	}
	must.True(t, slices.ContainsFunc(followers, func(s *Server) bool { return s.IsLeader() }))
}

// TestReads_FollowerHoldsReadAcrossLeaderKill reads through a follower
// right after the leader is killed.
func TestReads_FollowerHoldsReadAcrossLeaderKill(t *testing.T) {
	leader, followers := readyCluster(t)
	fc := client(t, followers[0])
	_, _, err := fc.Jobs().Register(demoJob(t, "a"), nil)
	must.NoError(t, err)
	must.NoError(t, leader.Shutdown())
	job, _, err := fc.Jobs().Info("a", nil)
	must.NoError(t, err, must.Sprint("a read through a follower waits for the new leader"))
	must.Eq(t, "a", job.ID)
}

// put sends a JSON request through hc and returns the status and body.
func put(t *testing.T, hc *http.Client, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewBufferString(body))
	must.NoError(t, err)
	resp, err := hc.Do(req)
	must.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func raftServers(t *testing.T, s *Server) []raft.Server {
	f := s.raft.GetConfiguration()
	must.NoError(t, f.Error())
	return f.Configuration().Servers
}

// TestServerOnly_ForgedJoins sends joins of made-up servers to a follower
// and to the leader: each is refused with 400, and the cluster keeps its
// leader and its configuration.
func TestServerOnly_ForgedJoins(t *testing.T) {
	leader, followers := readyCluster(t)
	before := raftServers(t, leader)
	free := agent.FreePorts(t, 3)
	joins := []struct {
		name string
		to   *Server
		body string
	}{
		{"unreachable", followers[0], fmt.Sprintf(`{"ID": "evil-1", "RaftAddr": "127.0.0.1:%d", "HTTPAddr": "127.0.0.1:%d"}`, free[0], free[1])},
		{"another server's HTTP API", leader, fmt.Sprintf(`{"ID": "evil-2", "RaftAddr": "127.0.0.1:%d", "HTTPAddr": %q}`, free[2], followers[1].HTTPAddr())},
		{"no HTTP address", followers[1], `{"ID": "evil-3", "RaftAddr": "10.0.0.3:4681"}`},
		{"a member's Raft address", leader, fmt.Sprintf(`{"ID": "evil-4", "RaftAddr": %q, "HTTPAddr": %q}`, followers[0].RaftAddr(), followers[0].HTTPAddr())},
	}
	for _, j := range joins {
		t.Run(j.name, func(t *testing.T) {
			code, out := put(t, http.DefaultClient, http.MethodPost, "http://"+j.to.HTTPAddr()+"/v1/operator/raft/join", j.body)
			must.Eq(t, http.StatusBadRequest, code, must.Sprint(out))
		})
	}
	must.Eq(t, before, raftServers(t, leader))
	must.True(t, leader.IsLeader())
	_, _, err := client(t, followers[0]).Jobs().Register(demoJob(t, "after"), nil)
	must.NoError(t, err)
}

// TestServerOnly_NotFromAPeerHost: without TLS, member updates and peer
// removals from a host that is not a Raft peer's answer 403; a join from
// there is validated like any other.
func TestServerOnly_NotFromAPeerHost(t *testing.T) {
	leader, followers := readyCluster(t)
	before := raftServers(t, leader)
	// 127.0.0.2 is loopback too, but not the peers' host.
	hc := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	member := fmt.Sprintf(`{"ID": %q, "Name": "x", "RaftAddr": %q, "HTTPAddr": "127.0.0.1:1"}`, leader.ID(), leader.RaftAddr())
	for _, s := range []*Server{leader, followers[0]} {
		code, out := put(t, hc, http.MethodPut, "http://"+s.HTTPAddr()+"/v1/internal/member", member)
		must.Eq(t, http.StatusForbidden, code, must.Sprint(out))
		code, out = put(t, hc, http.MethodDelete, "http://"+s.HTTPAddr()+"/v1/operator/raft/peer?id="+followers[1].ID(), "")
		must.Eq(t, http.StatusForbidden, code, must.Sprint(out))
		code, out = put(t, hc, http.MethodPost, "http://"+s.HTTPAddr()+"/v1/operator/raft/join", `{"ID": "evil", "RaftAddr": "127.0.0.1:1", "HTTPAddr": "127.0.0.1:1"}`)
		must.Eq(t, http.StatusBadRequest, code, must.Sprint(out))
	}
	// From a peer's host, a member record of the leader is still refused:
	// the leader records itself.
	code, out := put(t, http.DefaultClient, http.MethodPut, "http://"+followers[0].HTTPAddr()+"/v1/internal/member", member)
	must.Eq(t, http.StatusBadRequest, code, must.Sprint(out))
	must.Eq(t, before, raftServers(t, leader))
}

// TestServerOnly_ForgedMemberHealed commits a member record of the leader
// with another HTTP address, as a forged request once could: the leader
// writes its own back within a step, and writes through followers keep
// being stored, none reaching the forged address.
func TestServerOnly_ForgedMemberHealed(t *testing.T) {
	leader, followers := readyCluster(t)
	var sunk atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sunk.Add(1)
		w.Write([]byte(`{"JobID": "x"}`))
	}))
	t.Cleanup(sink.Close)
	forged := &structs.Member{ID: leader.ID(), Name: "forged", RaftAddr: leader.RaftAddr(), HTTPAddr: sink.Listener.Addr().String()}
	_, _, err := leader.apply(context.Background(), fsm.MemberUpsertType, &fsm.MemberUpsertRequest{Member: forged})
	must.NoError(t, err)
	for _, s := range append([]*Server{leader}, followers...) {
		agent.WaitFor(t, 5*time.Second, "the leader's record healed on "+s.ID(), func() error {
			members, err := state.Members(s.State().Txn(), nil)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(members, func(m *structs.Member) bool { return *m == *leader.selfMember() }) {
				return errors.New("the leader's record is not its own")
			}
			return nil
		})
	}
	sunk.Store(0)
	stored := 0
	for i := range 10 {
		id := fmt.Sprintf("after-forge-%d", i)
		_, _, err := client(t, followers[i%2]).Jobs().Register(demoJob(t, id), nil)
		must.NoError(t, err)
		if job, err := state.JobByID(leader.State().Txn(), nil, structs.DefaultNamespace, id); err == nil && job != nil {
			stored++
		}
	}
	must.Eq(t, 10, stored)
	must.Eq(t, 0, sunk.Load())
}

// TestServerOnly_IsServerTLS: under TLS, only a verified client
// certificate named server.<region>.caravan is a server's.
func TestServerOnly_IsServerTLS(t *testing.T) {
	s := TestServer(t, TestConfig(t, simDriver(t, 1)))
	leaderOf(t, s)
	cases := []struct {
		name  string
		names []string
		want  bool
	}{
		{"server", []string{"server.global.caravan", "localhost"}, true},
		{"client", []string{"client.global.caravan"}, false},
		{"other region", []string{"server.eu.caravan"}, false},
		{"no certificate", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPut, "/v1/internal/member", nil)
			r.TLS = tlsState(t, tc.names)
			must.Eq(t, tc.want, s.isServer(r))
		})
	}
}

// TestReads_Latency logs the latency of GET /v1/job/{id} through a
// follower: stale (answered locally) and consistent (forwarded to the
// leader, which verifies its leadership). CARAVAN_READS_N sets the number
// of reads of each kind (default 200).
func TestReads_Latency(t *testing.T) {
	n := 200
	if v, err := strconv.Atoi(os.Getenv("CARAVAN_READS_N")); err == nil && v > 0 {
		n = v
	}
	leader, followers := readyCluster(t)
	_, _, err := client(t, leader).Jobs().Register(demoJob(t, "lat"), nil)
	must.NoError(t, err)
	fc := client(t, followers[0])
	agent.WaitFor(t, 5*time.Second, "the follower has the job", func() error {
		_, _, err := fc.Jobs().Info("lat", &api.QueryOptions{AllowStale: true})
		return err
	})
	for _, k := range []struct {
		name string
		c    *api.Client
		q    *api.QueryOptions
	}{
		{"follower stale", fc, &api.QueryOptions{AllowStale: true}},
		{"follower consistent", fc, nil},
		{"leader stale", client(t, leader), &api.QueryOptions{AllowStale: true}},
		{"leader consistent", client(t, leader), nil},
	} {
		lat := make([]time.Duration, n)
		for i := range n {
			start := time.Now()
			_, _, err := k.c.Jobs().Info("lat", k.q)
			must.NoError(t, err)
			lat[i] = time.Since(start)
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		t.Logf("%-20s n=%d p50=%v p95=%v p99=%v", k.name, n, lat[n/2], lat[n*95/100], lat[n*99/100])
	}
}

// tlsState is the state of a TLS connection whose verified client
// certificate names names; none, a connection without a certificate.
func tlsState(t *testing.T, names []string) *tls.ConnectionState {
	if len(names) == 0 {
		return &tls.ConnectionState{}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	must.NoError(t, err)
	return &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}, VerifiedChains: [][]*x509.Certificate{{cert}}}
}

// TestReads_AbandonedIsNotOK sends requests to a follower whose contexts
// end before the leader could answer (a client gone, or the server
// shutting down): each is answered 503, never the 200 net/http sends for a
// handler that wrote nothing, which a client still reading would take for
// a write carried out.
func TestReads_AbandonedIsNotOK(t *testing.T) {
	_, followers := readyCluster(t)
	f := followers[0]
	reg, err := json.Marshal(demoJob(t, "abandoned"))
	must.NoError(t, err)
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/jobs", string(reg)},
		{http.MethodGet, "/v1/job/abandoned", ""},
		{http.MethodGet, "/v1/jobs", ""},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequestWithContext(ctx, tc.method, tc.path, strings.NewReader(tc.body))
		rec := httptest.NewRecorder()
		f.http.Handler.ServeHTTP(rec, req)
		must.Eq(t, http.StatusServiceUnavailable, rec.Code, must.Sprintf("%s %s: %s", tc.method, tc.path, rec.Body))
		must.StrContains(t, rec.Body.String(), "before the leader answered")
	}
	_, _, err = client(t, followers[1]).Jobs().Info("abandoned", nil)
	must.Error(t, err, must.Sprint("the abandoned registration was not carried out"))
}
