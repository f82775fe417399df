package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// ErrNoServerName is returned when a peer's certificate, valid for the CA,
// does not name a server of the region: a client's certificate on the Raft
// port, or a server of another region.
var ErrNoServerName = errors.New("certificate does not name a server of this region")

// Config is the tls block of an agent, resolved.
type Config struct {
	// HTTP serves the HTTP API over TLS, and makes servers call each
	// other's API over TLS with their certificate as client certificate.
	HTTP bool
	// RPC runs Raft over TLS, with mutual authentication.
	RPC bool
	// CAFile is the PEM CA that signs every certificate of the cluster;
	// CertFile and KeyFile are the agent's PEM certificate and key.
	CAFile, CertFile, KeyFile string
	// VerifyServerHostname checks that the servers this server dials, and
	// the peers that dial its Raft port, present a certificate naming
	// ServerName(Region); without it any certificate of the CA will do.
	VerifyServerHostname bool
	// VerifyHTTPSClient requires a certificate of the CA from every HTTP
	// client; without it a certificate is checked only when one is given.
	VerifyHTTPSClient bool
	// Region is the cluster's region; empty means DefaultRegion.
	Region string
}

// Enabled reports whether c turns TLS on anywhere; nil is off.
func (c *Config) Enabled() bool { return c != nil && (c.HTTP || c.RPC) }

// ServerName returns the name c's servers' certificates carry.
func (c *Config) ServerName() string {
	if c.Region == "" {
		return ServerName(DefaultRegion)
	}
	return ServerName(c.Region)
}

// Configurator makes the tls.Configs of an agent from its Config, and
// reloads their certificate and CA. Every tls.Config it returns reads the
// keypair and the CA in force at each handshake, so that Reload applies to
// new connections at once, including those of configs handed out before.
// It is safe for concurrent use.
type Configurator struct {
	cfg  Config
	keys atomic.Pointer[keyMaterial]
}

// keyMaterial is what Reload swaps.
type keyMaterial struct {
	cert *tls.Certificate
	pool *x509.CertPool
}

// NewConfigurator loads cfg's files. It fails when a file cannot be read,
// or the certificate is not signed by the CA.
func NewConfigurator(cfg Config) (*Configurator, error) {
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	c := &Configurator{cfg: cfg}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Config returns the configuration c was made with.
func (c *Configurator) Config() Config { return c.cfg }

// Reload reads the CA, certificate and key files again and uses them for
// every handshake from now on. On an error the files in force stay so.
func (c *Configurator) Reload() error {
	k, err := load(c.cfg)
	if err != nil {
		return err
	}
	c.keys.Store(k)
	return nil
}

// Certificate returns the agent's certificate in force.
func (c *Configurator) Certificate() *x509.Certificate { return c.keys.Load().cert.Leaf }

func load(cfg Config) (*keyMaterial, error) {
	if cfg.CAFile == "" || cfg.CertFile == "" || cfg.KeyFile == "" {
		return nil, errors.New("tls needs ca_file, cert_file and key_file")
	}
	caPEM, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read the CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("the CA file %s holds no PEM certificate", cfg.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("read the certificate and key: %w", err)
	}
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("the certificate %s is not signed by the CA %s: %w", cfg.CertFile, cfg.CAFile, err)
	}
	return &keyMaterial{cert: &cert, pool: pool}, nil
}

// IncomingHTTP returns the tls.Config of the HTTP API's listener: it
// requires a client certificate of the CA with VerifyHTTPSClient, and
// otherwise verifies one when given (so that a server's can be told from
// a user's).
func (c *Configurator) IncomingHTTP() *tls.Config {
	auth := tls.VerifyClientCertIfGiven
	if c.cfg.VerifyHTTPSClient {
		auth = tls.RequireAndVerifyClientCert
	}
	return c.incoming(auth, nil, []string{"http/1.1"})
}

// IncomingRPC returns the tls.Config of the Raft listener: it requires a
// client certificate of the CA and, with VerifyServerHostname, one that
// names a server of the region, so that no client can take part in Raft.
func (c *Configurator) IncomingRPC() *tls.Config {
	var verify func(tls.ConnectionState) error
	if c.cfg.VerifyServerHostname {
		verify = func(cs tls.ConnectionState) error {
			if !PeerIsServer(&cs, c.cfg.Region) {
				return fmt.Errorf("raft peer %s: %w", peerName(&cs), ErrNoServerName)
			}
			return nil
		}
	}
	return c.incoming(tls.RequireAndVerifyClientCert, verify, nil)
}

func (c *Configurator) incoming(auth tls.ClientAuthType, verify func(tls.ConnectionState) error, protos []string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			k := c.keys.Load()
			return &tls.Config{
				MinVersion:       tls.VersionTLS12,
				Certificates:     []tls.Certificate{*k.cert},
				ClientCAs:        k.pool,
				ClientAuth:       auth,
				VerifyConnection: verify,
				NextProtos:       protos,
			}, nil
		},
	}
}

// Outgoing returns the tls.Config with which a server dials another's HTTP
// API or Raft port: it presents the server's certificate and verifies the
// peer's against the CA in force and, with VerifyServerHostname, that it
// names a server of the region, whatever address was dialled.
func (c *Configurator) Outgoing() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: c.cfg.ServerName(),
		// The chain is verified in VerifyConnection, against the CA in
		// force at the handshake rather than the one of this config's
		// making; that check is not skipped.
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return c.keys.Load().cert, nil
		},
		VerifyConnection: c.verifyServer,
	}
}

func (c *Configurator) verifyServer(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the server presented no certificate")
	}
	opts := x509.VerifyOptions{
		Roots:         c.keys.Load().pool,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, ic := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(ic)
	}
	if c.cfg.VerifyServerHostname {
		opts.DNSName = c.cfg.ServerName()
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("verify server certificate: %w", err)
	}
	return nil
}

// PeerIsServer reports whether a connection's peer presented a certificate
// that verified against the CA and names a server of region (empty:
// DefaultRegion). It is false for a connection without TLS (nil) or
// without a verified client certificate.
func PeerIsServer(cs *tls.ConnectionState, region string) bool {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return false
	}
	if region == "" {
		region = DefaultRegion
	}
	return cs.PeerCertificates[0].VerifyHostname(ServerName(region)) == nil
}

func peerName(cs *tls.ConnectionState) string {
	if len(cs.PeerCertificates) == 0 {
		return "(no certificate)"
	}
	return fmt.Sprintf("%q", cs.PeerCertificates[0].Subject.CommonName)
}

func tlsKeyPair(certPEM, keyPEM []byte) (tls.Certificate, error) {
	return tls.X509KeyPair(certPEM, keyPEM)
}
