package api

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strconv"
)

// TLSConfig is how a Client verifies a Caravan agent served over HTTPS and
// identifies itself to it, as Nomad's api.TLSConfig. Paths name PEM files.
type TLSConfig struct {
	// CACert is the CA that signed the agent's certificate; empty means
	// the system's roots.
	CACert string
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

// tlsFromEnv reads CARAVAN_CACERT, CARAVAN_CLIENT_CERT,
// CARAVAN_CLIENT_KEY, CARAVAN_TLS_SERVER_NAME and CARAVAN_SKIP_VERIFY; nil
// when none is set.
func tlsFromEnv() *TLSConfig {
	t := &TLSConfig{
		CACert:        os.Getenv("CARAVAN_CACERT"),
		ClientCert:    os.Getenv("CARAVAN_CLIENT_CERT"),
		ClientKey:     os.Getenv("CARAVAN_CLIENT_KEY"),
		TLSServerName: os.Getenv("CARAVAN_TLS_SERVER_NAME"),
	}
	t.Insecure, _ = strconv.ParseBool(os.Getenv("CARAVAN_SKIP_VERIFY"))
	if *t == (TLSConfig{}) {
		return nil
	}
	return t
}

// isSet reports whether t asks for anything; a bare address of a client
// whose TLSConfig is set gets https://.
func (t *TLSConfig) isSet() bool { return t != nil && *t != (TLSConfig{}) }

// tlsConfig loads t's files into a tls.Config.
func (t *TLSConfig) tlsConfig() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.TLSServerName, InsecureSkipVerify: t.Insecure}
	if t.CACert != "" {
		buf, err := os.ReadFile(t.CACert)
		if err != nil {
			return nil, fmt.Errorf("read CA certificate: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(buf) {
			return nil, fmt.Errorf("CA certificate %s holds no PEM certificate", t.CACert)
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

// httpClient returns an HTTP client with t's TLS settings.
func (t *TLSConfig) httpClient() (*http.Client, error) {
	c, err := t.tlsConfig()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = c
	return &http.Client{Transport: tr}, nil
}
