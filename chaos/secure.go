package chaos

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/tlsutil"
)

// Secure is what a cluster with ACLs and mutual TLS needs: a throwaway CA
// with a server and a client certificate, and the servers' shared token.
type Secure struct {
	Certs       *tlsutil.TestCerts
	ServerToken string
}

// NewSecure makes the certificates and token of a secure cluster.
func NewSecure(t testing.TB) *Secure {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("server token: %v", err)
	}
	return &Secure{Certs: tlsutil.NewTestCerts(t, tlsutil.DefaultRegion), ServerToken: hex.EncodeToString(b)}
}

// Body is the agents' tls and acl blocks: TLS on the HTTP API and Raft
// with every verification on, and ACLs.
func (s *Secure) Body() string {
	c := s.Certs
	return fmt.Sprintf(`
tls {
  http      = true
  rpc       = true
  ca_file   = %q
  cert_file = %q
  key_file  = %q
}
acl {
  enabled      = true
  server_token = %q
}
`, c.CAFile, c.ServerCert, c.ServerKey, s.ServerToken)
}

// Apply makes c's clients speak TLS with the client certificate, and,
// once the cluster has a leader, bootstraps its ACLs and sends the
// management token from then on.
func (s *Secure) Apply(t testing.TB, c *Cluster) {
	t.Helper()
	ca, err := os.ReadFile(s.Certs.CAFile)
	if err != nil {
		t.Fatalf("read CA: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(s.Certs.ClientCert, s.Certs.ClientKey)
	if err != nil {
		t.Fatalf("load client certificate: %v", err)
	}
	c.Scheme = "https"
	c.HTTP = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: tlsutil.ServerName(s.Certs.Region),
	}}}
	c.Token = s.ServerToken // which may read the agents, to find the leader
	leader := c.WaitLeader(time.Minute, -1)
	var tok struct{ SecretID string }
	agent.WaitFor(t, 30*time.Second, "ACLs bootstrapped", func() error {
		_, err := c.Do(context.Background(), leader, http.MethodPost, "/v1/acl/bootstrap", nil, &tok)
		return err
	})
	c.Token = tok.SecretID
}
