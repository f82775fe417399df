package server

import (
	"testing"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/tlsutil"
)

// TestTLS turns TLS on in cfg for the HTTP API and Raft, with every
// verification on and the server certificate of certs, which
// tlsutil.NewTestCerts makes: servers of one cluster share one certs.
func TestTLS(cfg *Config, certs *tlsutil.TestCerts) {
	cfg.TLS = certs.Config()
}

// TestTLSClient returns an API client of s that verifies it with certs'
// CA and presents certs' client certificate.
func TestTLSClient(t testing.TB, s *Server, certs *tlsutil.TestCerts) *api.Client {
	t.Helper()
	c, err := api.NewClient(&api.Config{Address: "https://" + s.HTTPAddr(), TLSConfig: &api.TLSConfig{
		CACert: certs.CAFile, ClientCert: certs.ClientCert, ClientKey: certs.ClientKey,
		TLSServerName: tlsutil.ServerName(certs.Region),
	}})
	if err != nil {
		t.Fatalf("tls client: %v", err)
	}
	return c
}
