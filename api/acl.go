package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/caravan-sched/caravan/structs"
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

// ACL is the client of the ACL endpoints.
type ACL struct{ c *Client }

// ACL returns the client of the ACL endpoints.
func (c *Client) ACL() *ACL { return &ACL{c: c} }

// Bootstrap creates the first management token, once per cluster; the
// answer holds its secret.
func (a *ACL) Bootstrap(ctx context.Context) (*structs.ACLToken, error) {
	var out structs.ACLToken
	_, err := a.c.do(ctx, http.MethodPost, "/v1/acl/bootstrap", nil, nil, &out)
	return &out, err
}

// Policies lists the policies, without their rules' text changed.
func (a *ACL) Policies(ctx context.Context) ([]*structs.ACLPolicy, error) {
	var out []*structs.ACLPolicy
	_, err := a.c.do(ctx, http.MethodGet, "/v1/acl/policies", nil, nil, &out)
	return out, err
}

// Policy reads a policy.
func (a *ACL) Policy(ctx context.Context, name string) (*structs.ACLPolicy, error) {
	var out structs.ACLPolicy
	_, err := a.c.do(ctx, http.MethodGet, "/v1/acl/policy/"+url.PathEscape(name), nil, nil, &out)
	return &out, err
}

// ApplyPolicy creates or replaces a policy.
func (a *ACL) ApplyPolicy(ctx context.Context, name string, req *ACLPolicyRequest) (*structs.ACLPolicy, error) {
	var out structs.ACLPolicy
	_, err := a.c.do(ctx, http.MethodPut, "/v1/acl/policy/"+url.PathEscape(name), nil, req, &out)
	return &out, err
}

// DeletePolicy deletes a policy.
func (a *ACL) DeletePolicy(ctx context.Context, name string) error {
	_, err := a.c.do(ctx, http.MethodDelete, "/v1/acl/policy/"+url.PathEscape(name), nil, nil, nil)
	return err
}

// Tokens lists the tokens, without their secrets.
func (a *ACL) Tokens(ctx context.Context) ([]*structs.ACLToken, error) {
	var out []*structs.ACLToken
	_, err := a.c.do(ctx, http.MethodGet, "/v1/acl/tokens", nil, nil, &out)
	return out, err
}

// CreateToken creates a token; the answer holds its secret.
func (a *ACL) CreateToken(ctx context.Context, req *ACLTokenRequest) (*structs.ACLToken, error) {
	var out structs.ACLToken
	_, err := a.c.do(ctx, http.MethodPost, "/v1/acl/token", nil, req, &out)
	return &out, err
}

// Token reads a token by its accessor ID.
func (a *ACL) Token(ctx context.Context, accessor string) (*structs.ACLToken, error) {
	var out structs.ACLToken
	_, err := a.c.do(ctx, http.MethodGet, "/v1/acl/token/"+url.PathEscape(accessor), nil, nil, &out)
	return &out, err
}

// Self reads the token the client sends.
func (a *ACL) Self(ctx context.Context) (*structs.ACLToken, error) {
	var out structs.ACLToken
	_, err := a.c.do(ctx, http.MethodGet, "/v1/acl/token/self", nil, nil, &out)
	return &out, err
}

// DeleteToken deletes a token by its accessor ID.
func (a *ACL) DeleteToken(ctx context.Context, accessor string) error {
	_, err := a.c.do(ctx, http.MethodDelete, "/v1/acl/token/"+url.PathEscape(accessor), nil, nil, nil)
	return err
}

// IsForbidden reports whether err is a 403 of the API: the token lacks a
// capability, or is unknown.
func IsForbidden(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusForbidden
}
