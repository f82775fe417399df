package api

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-rootcerts"
)

// TLSConfig is how a Client verifies a Caravan agent served over HTTPS and
// identifies itself to it, as Nomad's api.TLSConfig. Paths name PEM files.
type TLSConfig struct {
	// CACert is the CA that signed the agent's certificate, CAPath a
	// directory of CA certificates, and CACertPEM a CA certificate's PEM
	// bytes; with none of them, the system's roots.
	CACert    string
	CAPath    string
	CACertPEM []byte
	// ClientCert and ClientKey are the certificate the client presents,
	// which an agent with verify_https_client requires.
	ClientCert string
	ClientKey  string
	// TLSServerName is the name the agent's certificate must carry, such
	// as "server.global.caravan"; empty means the address's host.
	TLSServerName string
	// Insecure skips verifying the agent's certificate.
	Insecure bool
}

// tlsFromEnv reads CARAVAN_CACERT, CARAVAN_CAPATH, CARAVAN_CLIENT_CERT,
// CARAVAN_CLIENT_KEY, CARAVAN_TLS_SERVER_NAME and CARAVAN_SKIP_VERIFY; nil
// when none is set.
func tlsFromEnv() *TLSConfig {
	t := &TLSConfig{
		CACert:        os.Getenv("CARAVAN_CACERT"),
		CAPath:        os.Getenv("CARAVAN_CAPATH"),
		ClientCert:    os.Getenv("CARAVAN_CLIENT_CERT"),
		ClientKey:     os.Getenv("CARAVAN_CLIENT_KEY"),
		TLSServerName: os.Getenv("CARAVAN_TLS_SERVER_NAME"),
	}
	t.Insecure, _ = strconv.ParseBool(os.Getenv("CARAVAN_SKIP_VERIFY"))
	if !t.isSet() {
		return nil
	}
	return t
}

// isSet reports whether t asks for anything; a bare address of a client
// whose TLSConfig is set gets https://.
func (t *TLSConfig) isSet() bool {
	return t != nil && (t.CACert != "" || t.CAPath != "" || len(t.CACertPEM) > 0 ||
		t.ClientCert != "" || t.ClientKey != "" || t.TLSServerName != "" || t.Insecure)
}

// tlsConfig loads t's files into a tls.Config; the CA, through
// go-rootcerts as Nomad's client does.
func (t *TLSConfig) tlsConfig() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.TLSServerName, InsecureSkipVerify: t.Insecure}
	if t.CACert != "" || t.CAPath != "" || len(t.CACertPEM) > 0 {
		err := rootcerts.ConfigureTLS(c, &rootcerts.Config{CAFile: t.CACert, CAPath: t.CAPath, CACertificate: t.CACertPEM})
		if err != nil {
			return nil, fmt.Errorf("read CA certificate: %w", err)
		}
	}
	if (t.ClientCert == "") != (t.ClientKey == "") {
		return nil, fmt.Errorf("a client certificate needs both a certificate and a key file (CARAVAN_CLIENT_CERT and CARAVAN_CLIENT_KEY)")
	}
	if t.ClientCert != "" {
		pair, err := tls.LoadX509KeyPair(t.ClientCert, t.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("read client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// defaultHTTPClient is the client of a Config without HTTPClient, as
// Nomad's: go-cleanhttp's pooled client (no shared global transport, no
// overall timeout, since blocking queries wait for minutes) with t's TLS
// settings, if any.
func defaultHTTPClient(t *TLSConfig) (*http.Client, error) {
	hc := cleanhttp.DefaultPooledClient()
	tr := hc.Transport.(*http.Transport)
	tr.TLSHandshakeTimeout = 10 * time.Second
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	if t.isSet() {
		c, err := t.tlsConfig()
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		tr.TLSClientConfig = c
	}
	return hc, nil
}
