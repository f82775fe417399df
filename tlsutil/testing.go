package tlsutil

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestCerts are the files of a throwaway CA and of a server and a client
// certificate it signed, in a test's temporary directory.
type TestCerts struct {
	Dir    string
	Region string
	// CAFile and CAKeyFile are the CA; ServerCert/ServerKey name
	// ServerName(Region), localhost and 127.0.0.1; ClientCert/ClientKey
	// name ClientName(Region).
	CAFile, CAKeyFile     string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	caCertPEM, caKeyPEM   []byte
}

// NewTestCerts makes a CA, a server and a client certificate of region
// (empty: DefaultRegion) under t.TempDir().
func NewTestCerts(t testing.TB, region string) *TestCerts {
	t.Helper()
	if region == "" {
		region = DefaultRegion
	}
	caCert, caKey, err := GenerateCA(CAOptions{})
	if err != nil {
		t.Fatalf("generate CA: %v", err)
	}
	c := &TestCerts{Dir: t.TempDir(), Region: region, caCertPEM: caCert, caKeyPEM: caKey}
	c.CAFile = c.write(t, "caravan-agent-ca.pem", caCert)
	c.CAKeyFile = c.write(t, "caravan-agent-ca-key.pem", caKey)
	c.ServerCert, c.ServerKey = c.Issue(t, region+"-server-caravan", CertOptions{
		Name: ServerName(region), DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true,
	})
	c.ClientCert, c.ClientKey = c.Issue(t, region+"-client-caravan", CertOptions{
		Name: ClientName(region), DNSNames: []string{"localhost"},
	})
	return c
}

// Issue makes another certificate signed by the CA, written to
// <name>.pem and <name>-key.pem; opts' CA fields are filled in.
func (c *TestCerts) Issue(t testing.TB, name string, opts CertOptions) (certFile, keyFile string) {
	t.Helper()
	opts.CACert, opts.CAKey = c.caCertPEM, c.caKeyPEM
	cert, key, err := GenerateCert(opts)
	if err != nil {
		t.Fatalf("generate certificate %s: %v", name, err)
	}
	return c.write(t, name+".pem", cert), c.write(t, name+"-key.pem", key)
}

// Config returns a Config with TLS on for HTTP and Raft, every
// verification on, and this server certificate.
func (c *TestCerts) Config() *Config {
	return &Config{
		HTTP: true, RPC: true, CAFile: c.CAFile, CertFile: c.ServerCert, KeyFile: c.ServerKey,
		VerifyServerHostname: true, VerifyHTTPSClient: true, Region: c.Region,
	}
}

func (c *TestCerts) write(t testing.TB, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(c.Dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	return path
}
