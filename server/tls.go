package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/caravan-sched/caravan/tlsutil"
	"github.com/hashicorp/raft"
)

// setupTLS loads the certificates of cfg.TLS, when it turns TLS on, and
// builds the transport the server calls other servers' HTTP APIs with.
func (s *Server) setupTLS() error {
	s.peerTransport = http.DefaultTransport
	s.forwardReads, s.forwardWrites = forwardTransports(nil)
	if !s.cfg.TLS.Enabled() {
		return nil
	}
	c, err := tlsutil.NewConfigurator(*s.cfg.TLS)
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	s.tls = c
	if s.cfg.TLS.HTTP {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = c.Outgoing()
		s.peerTransport = t
		s.forwardReads, s.forwardWrites = forwardTransports(c.Outgoing())
	}
	return nil
}

// ReloadTLS reads the CA, certificate and key files of the tls
// configuration again; connections made from now on use them, those open
// keep theirs. Without TLS it does nothing. On an error the files in force
// stay so.
func (s *Server) ReloadTLS() error {
	if s.tls == nil {
		return nil
	}
	if err := s.tls.Reload(); err != nil {
		return fmt.Errorf("reload tls: %w", err)
	}
	s.log.Info("reloaded tls certificates", "serial", s.tls.Certificate().SerialNumber.String())
	return nil
}

// peerScheme is the scheme of the servers' HTTP APIs: https when TLS
// covers HTTP.
func (s *Server) peerScheme() string {
	if s.cfg.TLS != nil && s.cfg.TLS.HTTP {
		return "https"
	}
	return "http"
}

// tlsStreamLayer is a raft.StreamLayer over TLS with mutual
// authentication: it accepts only peers whose certificate the CA signed
// (and, with verify_server_hostname, that name a server of the region),
// and dials with the server's certificate. A peer that fails the handshake
// never gets a byte to Raft.
type tlsStreamLayer struct {
	net.Listener
	tls *tlsutil.Configurator
}

var _ raft.StreamLayer = (*tlsStreamLayer)(nil)

// handshakeTimeout bounds a TLS handshake on the Raft port.
const handshakeTimeout = 10 * time.Second

// newRaftTLSTransport listens on addr for Raft over TLS.
func newRaftTLSTransport(addr string, c *tlsutil.Configurator, s *Server) (*raft.NetworkTransport, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if a, ok := l.Addr().(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() {
		l.Close()
		return nil, errors.New("local bind address is not advertisable")
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  &tlsStreamLayer{Listener: l, tls: c},
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  s.log.Named("raft"),
	}), nil
}

// Accept returns the next connection, whose handshake runs, bounded by
// handshakeTimeout, on its first read or write: in Raft's goroutine for
// the connection, so that a slow peer holds up no other.
func (l *tlsStreamLayer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &handshakingConn{Conn: tls.Server(c, l.tls.IncomingRPC())}, nil
}

// Dial connects to another server's Raft port and completes the handshake
// within timeout.
func (l *tlsStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: l.tls.Outgoing()}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return d.DialContext(ctx, "tcp", string(address))
}

// handshakingConn is a server-side TLS connection that completes its
// handshake, within handshakeTimeout, before its first read or write.
type handshakingConn struct {
	*tls.Conn
}

func (c *handshakingConn) handshake() error {
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	return c.Conn.HandshakeContext(ctx)
}

func (c *handshakingConn) Read(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *handshakingConn) Write(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}
