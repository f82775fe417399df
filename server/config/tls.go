package config

import "regexp"

// DefaultRegion is the region of an agent whose configuration names none,
// as Nomad's "global".
const DefaultRegion = "global"

// region is what a region may be: a DNS label, since server certificates
// name "server.<region>.caravan".
var region = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// TLS is the tls block: mutual TLS for the HTTP API and for Raft, as
// Nomad's tls block. Every server certificate of a cluster names
// "server.<region>.caravan".
type TLS struct {
	// HTTP serves the HTTP API over TLS; servers then call each other's
	// API over TLS with their certificate. nil means unset; default false.
	HTTP *bool `hcl:"http,optional"`
	// RPC runs Raft over TLS with mutual authentication. nil means unset;
	// default false.
	RPC *bool `hcl:"rpc,optional"`
	// CAFile, CertFile and KeyFile are PEM files: the CA of the cluster,
	// and this agent's certificate and key. Required when HTTP or RPC is
	// on.
	CAFile   string `hcl:"ca_file,optional"`
	CertFile string `hcl:"cert_file,optional"`
	KeyFile  string `hcl:"key_file,optional"`
	// VerifyServerHostname makes a server accept on its Raft port, and
	// dial, only peers whose certificate names a server of its region,
	// rather than any certificate of the CA (a client's too). nil means
	// unset; default true.
	VerifyServerHostname *bool `hcl:"verify_server_hostname,optional"`
	// VerifyHTTPSClient makes the HTTP API require a client certificate of
	// the CA. nil means unset; default true.
	VerifyHTTPSClient *bool `hcl:"verify_https_client,optional"`
}

// DefaultTLS returns the default tls block: TLS off, and both
// verifications on for when it is turned on.
func DefaultTLS() *TLS {
	return &TLS{HTTP: new(false), RPC: new(false), VerifyServerHostname: new(true), VerifyHTTPSClient: new(true)}
}

// Enabled reports whether t turns TLS on for HTTP or Raft.
func (t *TLS) Enabled() bool { return t != nil && (isTrue(t.HTTP) || isTrue(t.RPC)) }

// Merge returns a copy of t with the fields set in o overriding it. Either
// may be nil; the result is not.
func (t *TLS) Merge(o *TLS) *TLS {
	r := copyOf(t)
	r.HTTP, r.RPC = mergePtr(r.HTTP, nil), mergePtr(r.RPC, nil)
	r.VerifyServerHostname, r.VerifyHTTPSClient = mergePtr(r.VerifyServerHostname, nil), mergePtr(r.VerifyHTTPSClient, nil)
	if o == nil {
		return r
	}
	r.HTTP = mergePtr(r.HTTP, o.HTTP)
	r.RPC = mergePtr(r.RPC, o.RPC)
	r.CAFile = mergeString(r.CAFile, o.CAFile)
	r.CertFile = mergeString(r.CertFile, o.CertFile)
	r.KeyFile = mergeString(r.KeyFile, o.KeyFile)
	r.VerifyServerHostname = mergePtr(r.VerifyServerHostname, o.VerifyServerHostname)
	r.VerifyHTTPSClient = mergePtr(r.VerifyHTTPSClient, o.VerifyHTTPSClient)
	return r
}

// Validate checks that the three files are named when TLS is on. The
// agent, not this package, reads them.
func (t *TLS) Validate() error { return joinProblems(t.problems()) }

func (t *TLS) problems() []problem {
	if !t.Enabled() {
		return nil
	}
	var ps []problem
	for _, f := range []struct{ key, v string }{{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile}} {
		if f.v == "" {
			ps = append(ps, problemf(f.key, "http or rpc is on, so TLS needs a PEM file here (`caravan tls ca create` and `caravan tls cert create -server` make them)"))
		}
	}
	return ps
}

// CheckRegion returns an error when r cannot be a region: a region is a
// DNS label, lower-case.
func CheckRegion(r string) error { return joinProblems(regionProblems(r)) }

// regionProblems checks the region.
func regionProblems(r string) []problem {
	if region.MatchString(r) {
		return nil
	}
	return []problem{problemf("region", "%q is not a region; use lower-case letters, digits and dashes, such as %q, since certificates name server.<region>.caravan", r, DefaultRegion)}
}

func isTrue(b *bool) bool { return b != nil && *b }

// clientCertProblems checks the certificate and key Caravan reaches
// Nomad or Consul with: both or neither.
func clientCertProblems(certFile, keyFile string) []problem {
	switch {
	case certFile != "" && keyFile == "":
		return []problem{problemf("key_file", "cert_file is set, so the client certificate needs its key here")}
	case certFile == "" && keyFile != "":
		return []problem{problemf("cert_file", "key_file is set, so the client certificate is needed here")}
	}
	return nil
}
