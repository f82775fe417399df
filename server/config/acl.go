package config

// ACL is the acl block: whether requests to the HTTP API must carry a
// token that allows them, as in Nomad.
type ACL struct {
	// Enabled checks every request against the policies of its token
	// (X-Caravan-Token). nil means unset; Default sets false.
	Enabled *bool `hcl:"enabled,optional"`
	// ServerToken is a secret every server of the cluster shares, which
	// they send to each other to join, register their addresses and leave
	// (the server-only endpoints), before any token exists. Required with
	// ACLs on when the agent joins other servers (bootstrap_expect above 1
	// or retry_join set); at least 16 characters, such as a UUID. It
	// allows nothing else, and is never logged.
	ServerToken string `hcl:"server_token,optional"`
	// ReportToken is the secret of a token whose policy grants the report
	// capability (namespace "*" { capabilities = ["report"] }), which the
	// nomad driver hands to training tasks as CARAVAN_TOKEN so that they
	// can report samples to the servers. Empty means none.
	ReportToken string `hcl:"report_token,optional"`
}

// minServerToken is the shortest server_token accepted.
const minServerToken = 16

// DefaultACL returns the default acl block: ACLs off.
func DefaultACL() *ACL { return &ACL{Enabled: new(false)} }

// On reports whether ACLs are enabled.
func (a *ACL) On() bool { return a != nil && a.Enabled != nil && *a.Enabled }

// Merge returns a copy of a with the fields set in o overriding it. Either
// may be nil; the result is not.
func (a *ACL) Merge(o *ACL) *ACL {
	r := copyOf(a)
	r.Enabled = mergePtr(r.Enabled, nil)
	if o != nil {
		r.Enabled = mergePtr(r.Enabled, o.Enabled)
		r.ServerToken = mergeString(r.ServerToken, o.ServerToken)
		r.ReportToken = mergeString(r.ReportToken, o.ReportToken)
	}
	return r
}

// Validate checks the server token's length. Config.Validate also checks
// that servers that join others have one.
func (a *ACL) Validate() error { return joinProblems(a.problems()) }

func (a *ACL) problems() []problem {
	if a == nil || a.ServerToken == "" || len(a.ServerToken) >= minServerToken {
		return nil
	}
	return []problem{problemf("server_token", "is %d characters; use at least %d, such as a UUID from uuidgen", len(a.ServerToken), minServerToken)}
}
