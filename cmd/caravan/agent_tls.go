package main

import (
	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/server/config"
	"github.com/caravan-sched/caravan/tlsutil"
)

// tlsConfig resolves the tls block for the server; nil when TLS is off.
func tlsConfig(cfg *config.Config) *tlsutil.Config {
	t := cfg.TLS
	if !t.Enabled() {
		return nil
	}
	return &tlsutil.Config{
		HTTP: t.HTTP != nil && *t.HTTP, RPC: t.RPC != nil && *t.RPC,
		CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile,
		VerifyServerHostname: t.VerifyServerHostname != nil && *t.VerifyServerHostname,
		VerifyHTTPSClient:    t.VerifyHTTPSClient != nil && *t.VerifyHTTPSClient,
		Region:               cfg.Region,
	}
}

// httpScheme is the scheme of the agent's HTTP API.
func httpScheme(cfg *config.Config) string {
	if t := cfg.TLS; t != nil && t.HTTP != nil && *t.HTTP {
		return "https"
	}
	return "http"
}

// selfClientConfig is how the agent calls its own HTTP API: over TLS with
// its own certificate when the API is served over TLS.
func selfClientConfig(cfg *config.Config, addr string) *api.Config {
	c := &api.Config{Address: httpScheme(cfg) + "://" + addr}
	if t := tlsConfig(cfg); t != nil && t.HTTP {
		c.TLSConfig = &api.TLSConfig{CACert: t.CAFile, ClientCert: t.CertFile, ClientKey: t.KeyFile, TLSServerName: t.ServerName()}
	}
	return c
}
