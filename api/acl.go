package api

import (
	"errors"
	"net/http"
	"net/url"
)

// ACLPolicyRequest is the body of PUT /v1/acl/policy/<name>: the policy's
// rules in HCL (see package acl).
type ACLPolicyRequest struct {
	Description string `json:",omitempty"`
	Rules       string
}

// ACLTokenRequest is the body of POST /v1/acl/token. Type is "client"
// (default), allowed what its Policies grant, or "management".
type ACLTokenRequest struct {
	Name     string   `json:",omitempty"`
	Type     string   `json:",omitempty"`
	Policies []string `json:",omitempty"`
}

// Token types (ACLToken.Type, ACLTokenRequest.Type).
const (
	ACLManagementToken = "management"
	ACLClientToken     = "client"
)

// ACLPolicy is a named ACL policy: Rules is its HCL.
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

// ACL is the client of the ACL endpoints.
type ACL struct{ c *Client }

// ACL returns the client of the ACL endpoints.
func (c *Client) ACL() *ACL { return &ACL{c: c} }

// Bootstrap creates the first management token, once per cluster; the
// answer holds its secret.
func (a *ACL) Bootstrap(w *WriteOptions) (*ACLToken, *WriteMeta, error) {
	return writeOne[ACLToken](a.c, http.MethodPost, "/v1/acl/bootstrap", nil, w)
}

// Policies lists the policies.
func (a *ACL) Policies(q *QueryOptions) ([]*ACLPolicy, *QueryMeta, error) {
	return get[[]*ACLPolicy](a.c, "/v1/acl/policies", nil, q)
}

// Policy reads a policy.
func (a *ACL) Policy(name string, q *QueryOptions) (*ACLPolicy, *QueryMeta, error) {
	return getOne[ACLPolicy](a.c, "/v1/acl/policy/"+url.PathEscape(name), nil, q)
}

// ApplyPolicy creates or replaces a policy.
func (a *ACL) ApplyPolicy(name string, req *ACLPolicyRequest, w *WriteOptions) (*ACLPolicy, *WriteMeta, error) {
	return writeOne[ACLPolicy](a.c, http.MethodPut, "/v1/acl/policy/"+url.PathEscape(name), req, w)
}

// DeletePolicy deletes a policy.
func (a *ACL) DeletePolicy(name string, w *WriteOptions) (*WriteMeta, error) {
	return a.c.write(http.MethodDelete, "/v1/acl/policy/"+url.PathEscape(name), nil, nil, nil, w)
}

// Tokens lists the tokens, without their secrets.
func (a *ACL) Tokens(q *QueryOptions) ([]*ACLToken, *QueryMeta, error) {
	return get[[]*ACLToken](a.c, "/v1/acl/tokens", nil, q)
}

// CreateToken creates a token; the answer holds its secret.
func (a *ACL) CreateToken(req *ACLTokenRequest, w *WriteOptions) (*ACLToken, *WriteMeta, error) {
	return writeOne[ACLToken](a.c, http.MethodPost, "/v1/acl/token", req, w)
}

// Token reads a token by its accessor ID.
func (a *ACL) Token(accessor string, q *QueryOptions) (*ACLToken, *QueryMeta, error) {
	return getOne[ACLToken](a.c, "/v1/acl/token/"+url.PathEscape(accessor), nil, q)
}

// Self reads the token the client sends.
func (a *ACL) Self(q *QueryOptions) (*ACLToken, *QueryMeta, error) {
	return getOne[ACLToken](a.c, "/v1/acl/token/self", nil, q)
}

// DeleteToken deletes a token by its accessor ID.
func (a *ACL) DeleteToken(accessor string, w *WriteOptions) (*WriteMeta, error) {
	return a.c.write(http.MethodDelete, "/v1/acl/token/"+url.PathEscape(accessor), nil, nil, nil, w)
}

// IsForbidden reports whether err is a 403 of the API: the token lacks a
// capability, or is unknown.
func IsForbidden(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusForbidden
}
