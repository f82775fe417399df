package structs

// ACL token types.
const (
	// ACLManagementToken allows everything; its Policies are ignored.
	ACLManagementToken = "management"
	// ACLClientToken allows what its policies grant.
	ACLClientToken = "client"
)

// AnonymousPolicy is the name of the policy that applies to requests
// without a token, as in Nomad. Without it they are allowed nothing.
const AnonymousPolicy = "anonymous"

// ACLPolicy is a named ACL policy: Rules is its HCL, which the acl
// package parses.
type ACLPolicy struct {
	Name        string
	Description string
	Rules       string
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLToken is an ACL token. SecretID is the bearer secret a client sends
// (X-Caravan-Token); AccessorID names the token everywhere else, and only
// AccessorID may be logged or shown to others.
type ACLToken struct {
	AccessorID  string
	SecretID    string
	Name        string
	Type        string
	Policies    []string
	CreateTime  int64 // Unix nanoseconds
	CreateIndex uint64
	ModifyIndex uint64
}

// Stub returns a copy of the token without its secret, for listings.
func (t *ACLToken) Stub() *ACLToken {
	c := *t
	c.SecretID = ""
	c.Policies = append([]string(nil), t.Policies...)
	return &c
}

// ACLBootstrap records that the ACL system was bootstrapped, at Index.
type ACLBootstrap struct {
	Index uint64
	Time  int64
	// ReportKey signs the per-job report tokens tasks get (see the
	// server's JobReportToken); it is never served. Empty for a cluster
	// bootstrapped before such tokens existed.
	ReportKey []byte `json:"-"`
}
