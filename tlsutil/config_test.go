package tlsutil

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"testing"

	"github.com/shoenig/test/must"
)

// handshake runs a TLS handshake over loopback between a server with
// config srv and a client with config cli, and returns the server's and
// the client's error. The client reads one byte after its handshake, since
// under TLS 1.3 it learns that the server refused its certificate only then.
func handshake(t *testing.T, srv, cli *tls.Config) (srvErr, cliErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		tc := tls.Server(c, srv)
		err = tc.Handshake()
		if err == nil {
			_, err = tc.Write([]byte{1})
		}
		done <- err
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), cli)
	if err == nil {
		defer c.Close()
		_, err = io.ReadFull(c, make([]byte, 1))
	}
	return <-done, err
}

func TestConfigurator_RPC(t *testing.T) {
	certs := NewTestCerts(t, "")
	server, err := NewConfigurator(*certs.Config())
	must.NoError(t, err)
	client, err := NewConfigurator(Config{CAFile: certs.CAFile, CertFile: certs.ClientCert, KeyFile: certs.ClientKey, VerifyServerHostname: true})
	must.NoError(t, err)
	west := *certs.Config()
	west.CertFile, west.KeyFile = certs.Issue(t, "west-server", CertOptions{Name: ServerName("west"), Server: true})
	otherRegion, err := NewConfigurator(west)
	must.NoError(t, err)
	rogue := NewTestCerts(t, "")
	rogueServer, err := NewConfigurator(*rogue.Config())
	must.NoError(t, err)

	cases := []struct {
		name    string
		dialer  *tls.Config
		refused bool
	}{
		{"server of the region", server.Outgoing(), false},
		{"client certificate", client.Outgoing(), true},
		{"server of another region", otherRegion.Outgoing(), true},
		{"server of another CA", rogueServer.Outgoing(), true},
		{"no certificate", &tls.Config{InsecureSkipVerify: true}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srvErr, cliErr := handshake(t, server.IncomingRPC(), tc.dialer)
			if !tc.refused {
				must.NoError(t, srvErr)
				must.NoError(t, cliErr)
				return
			}
			must.Error(t, srvErr)
			must.Error(t, cliErr)
		})
	}
	// The server's own check names what was missing.
	srvErr, _ := handshake(t, server.IncomingRPC(), client.Outgoing())
	must.True(t, errors.Is(srvErr, ErrNoServerName), must.Sprintf("got %v", srvErr))
}

func TestConfigurator_HTTP(t *testing.T) {
	certs := NewTestCerts(t, "")
	cfg := certs.Config()
	server, err := NewConfigurator(*cfg)
	must.NoError(t, err)
	user := &tls.Config{RootCAs: server.keys.Load().pool, ServerName: "localhost"}
	_, cliErr := handshake(t, server.IncomingHTTP(), user)
	must.Error(t, cliErr) // verify_https_client: a certificate is required

	cfg.VerifyHTTPSClient = false
	optional, err := NewConfigurator(*cfg)
	must.NoError(t, err)
	srvErr, cliErr := handshake(t, optional.IncomingHTTP(), user)
	must.NoError(t, srvErr)
	must.NoError(t, cliErr)
}

func TestConfigurator_Reload(t *testing.T) {
	certs := NewTestCerts(t, "")
	server, err := NewConfigurator(*certs.Config())
	must.NoError(t, err)
	before := server.Certificate().SerialNumber

	// A new CA and certificates in place of the old files: the server
	// refuses the old CA's peers after Reload and accepts the new one's.
	fresh := NewTestCerts(t, "")
	for src, dst := range map[string]string{fresh.CAFile: certs.CAFile, fresh.ServerCert: certs.ServerCert, fresh.ServerKey: certs.ServerKey} {
		buf, err := os.ReadFile(src)
		must.NoError(t, err)
		must.NoError(t, os.WriteFile(dst, buf, 0o600))
	}
	oldPeer, err := NewConfigurator(*certs.Config()) // loads the new files
	must.NoError(t, err)
	srvErr, _ := handshake(t, server.IncomingRPC(), oldPeer.Outgoing())
	must.Error(t, srvErr) // server still on the old CA

	must.NoError(t, server.Reload())
	must.NotEq(t, before, server.Certificate().SerialNumber)
	srvErr, cliErr := handshake(t, server.IncomingRPC(), oldPeer.Outgoing())
	must.NoError(t, srvErr)
	must.NoError(t, cliErr)

	// A broken file is refused and the keypair in force stays.
	must.NoError(t, os.WriteFile(certs.ServerCert, []byte("not a certificate"), 0o600))
	must.Error(t, server.Reload())
	srvErr, _ = handshake(t, server.IncomingRPC(), oldPeer.Outgoing())
	must.NoError(t, srvErr)
}

func TestGenerateCert(t *testing.T) {
	caCert, caKey, err := GenerateCA(CAOptions{})
	must.NoError(t, err)
	certPEM, keyPEM, err := GenerateCert(CertOptions{CACert: caCert, CAKey: caKey, Name: ServerName("global"),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
	must.NoError(t, err)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	must.NoError(t, err)
	must.Eq(t, []string{"server.global.caravan", "localhost"}, pair.Leaf.DNSNames)
	must.Eq(t, "127.0.0.1", pair.Leaf.IPAddresses[0].String())
	_, _, err = GenerateCert(CertOptions{CACert: certPEM, CAKey: keyPEM, Name: "x"})
	must.ErrorContains(t, err, "not a certificate authority")
}
