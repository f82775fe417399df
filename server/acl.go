package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/caravan-sched/caravan/acl"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/go-uuid"
)

// ACLConfig turns ACLs on. With Enabled false (the default) every request
// is allowed, as before ACLs existed.
type ACLConfig struct {
	Enabled bool
	// ServerToken is the secret servers send each other (server-only
	// endpoints and joining); it allows only those and agent reads.
	ServerToken string
}

// errTokenNotFound answers a secret no token has.
var errTokenNotFound = &CodedError{Code: http.StatusForbidden, Err: errors.New("ACL token not found")}

// identity is who a request acts as once its token is resolved.
type identity struct {
	acl *acl.ACL
	// token is nil for anonymous requests and servers.
	token *structs.ACLToken
	// server is true for the shared server token.
	server bool
	// reportJob is the job a per-job report token reports for, nil for
	// other tokens.
	reportJob *structs.JobKey
}

func (id *identity) who() string {
	switch {
	case id.server:
		return "server token"
	case id.reportJob != nil:
		return "report token of job " + id.reportJob.ID
	case id.token == nil:
		return "anonymous request"
	}
	return "token"
}

type identityKey struct{}

// need is what a route requires of the request's identity; a nil check
// requires nothing.
type need struct {
	check func(id *identity, r *http.Request) error
}

func denied(id *identity, format string, args ...any) error {
	//lint:ignore ST1005 Nomad's wording, which people and scripts know
	return &CodedError{Code: http.StatusForbidden, Err: fmt.Errorf("Permission denied: %s lacks %s", id.who(), fmt.Sprintf(format, args...))}
}

// Route requirements. Capabilities in the namespace of ?namespace=
// (default "default") are nsCap; a request whose namespaces are in its
// body (jobs, samples) is checked for some namespace first (bodyCap) and
// for each of them by the handler (allowNamespace).
var (
	public = need{}
	// anyToken needs a token that resolves (token self).
	anyToken = need{func(id *identity, _ *http.Request) error {
		if id.token == nil {
			return denied(id, "a token: send one as X-Caravan-Token")
		}
		return nil
	}}
	operatorRead  = coarse("operator read", (*acl.ACL).AllowOperatorRead)
	operatorWrite = coarse("operator write", (*acl.ACL).AllowOperatorWrite)
	pluginRead    = coarse("plugin read", (*acl.ACL).AllowPluginRead)
	agentRead     = coarse("agent read", (*acl.ACL).AllowAgentRead)
	management    = coarse("management", (*acl.ACL).IsManagement)
	// aServer needs the server token or a management token.
	aServer = need{func(id *identity, _ *http.Request) error {
		if id.server || id.acl.IsManagement() {
			return nil
		}
		return denied(id, "the server token")
	}}
)

func coarse(name string, allow func(*acl.ACL) bool) need {
	return need{func(id *identity, _ *http.Request) error {
		if allow(id.acl) {
			return nil
		}
		return denied(id, "%s", name)
	}}
}

// nsCap needs capability op in the request's ?namespace=.
func nsCap(op string) need {
	return need{func(id *identity, r *http.Request) error {
		if ns := namespace(r); !id.acl.AllowNamespaceOperation(ns, op) {
			return denied(id, "%s in namespace %s", op, ns)
		}
		return nil
	}}
}

// bodyCap needs op in some namespace; the handler checks the namespaces
// the body names with allowNamespace.
func bodyCap(op string) need {
	return need{func(id *identity, r *http.Request) error {
		if !id.acl.AllowAnyNamespace(op) {
			return denied(id, "%s in any namespace", op)
		}
		return nil
	}}
}

// allow wraps an endpoint with the check of what it needs. A token this
// server does not know, on a follower, may be one the leader created and
// this server has not applied yet: the request is forwarded to the leader,
// which answers it (Nomad forwards token resolution to the leader in the
// same case); an endpoint a server answers about itself answers 403 then.
func (s *Server) allow(n need, fn endpoint) endpoint {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		r, forwarded, err := s.authorize(w, r, n)
		if forwarded || err != nil {
			return nil, err
		}
		return fn(w, r)
	}
}

// guard is allow for handlers that write their own answer.
func (s *Server) guard(n need, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r, forwarded, err := s.authorize(w, r, n)
		if err != nil {
			http.Error(w, err.Error(), errorCode(err))
			return
		}
		if !forwarded {
			h(w, r)
		}
	}
}

// authorize resolves the request's token and checks n. It returns the
// request carrying the identity, or forwarded when it sent the request to
// the leader instead. A server that is not the leader first catches up
// with the leader's ACL state before it acts on a token it knows, so that
// a token the leader deleted is refused on every server
// (acl_follower.go).
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, n need) (*http.Request, bool, error) {
	if !s.cfg.ACL.Enabled {
		return r, false, nil
	}
	secret := secretOf(r)
	id, err := s.resolveToken(secret)
	local := r.Context().Value(localKey{}) != nil
	if errors.Is(err, errTokenNotFound) && !local && !s.IsLeader() && r.Header.Get(forwardedHeader) == "" {
		s.forward(w, r)
		return r, true, nil
	}
	if err == nil && id.token != nil && !s.IsLeader() {
		if err := s.catchUpACL(r.Context()); err != nil {
			return r, false, err
		}
		id, err = s.resolveToken(secret)
	}
	if err != nil {
		return r, false, err
	}
	if n.check != nil {
		if err := n.check(id, r); err != nil {
			return r, false, err
		}
	}
	return r.WithContext(context.WithValue(r.Context(), identityKey{}, id)), false, nil
}

// callerMay checks n against the request's token on this server alone:
// errTokenNotFound for a token it does not know (yet). With ACLs off
// every caller may.
func (s *Server) callerMay(r *http.Request, n need) error {
	if !s.cfg.ACL.Enabled {
		return nil
	}
	id, err := s.resolveToken(secretOf(r))
	if err != nil {
		return err
	}
	if n.check != nil {
		return n.check(id, r)
	}
	return nil
}

// allowNamespace checks op in ns for a request that allow let through;
// with ACLs off it allows everything.
func (s *Server) allowNamespace(r *http.Request, ns, op string) error {
	if !s.cfg.ACL.Enabled {
		return nil
	}
	id, _ := r.Context().Value(identityKey{}).(*identity)
	if id == nil {
		return denied(&identity{}, "%s in namespace %s", op, ns)
	}
	if !id.acl.AllowNamespaceOperation(ns, op) {
		return denied(id, "%s in namespace %s", op, ns)
	}
	return nil
}

// secretOf returns the request's token: X-Caravan-Token, or an
// Authorization bearer token (what Prometheus sends), as Nomad reads them.
// The scheme is case-insensitive (RFC 9110, section 11.1): "Bearer",
// "bearer" and "BEARER" all name it. A header of another scheme gives no
// token: the request is anonymous.
func secretOf(r *http.Request) string {
	if t := r.Header.Get("X-Caravan-Token"); t != "" {
		return t
	}
	scheme, t, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(t)
	}
	return ""
}

// serverACL is what the server token allows besides server-only
// endpoints: reading agents, which joining needs.
var serverACL = acl.New(&acl.Policy{Agent: &acl.Rule{Policy: acl.PolicyRead}})

// resolveToken returns the identity of a secret from this server's state:
// "" is anonymous (the anonymous policy, or nothing without one).
func (s *Server) resolveToken(secret string) (*identity, error) {
	if st := s.cfg.ACL.ServerToken; st != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(st)) == 1 {
		return &identity{acl: serverACL, server: true}, nil
	}
	if strings.HasPrefix(secret, reportTokenPrefix) {
		return s.reportIdentity(secret)
	}
	txn := s.State().Txn()
	if secret == "" {
		a, err := s.aclCache.compile(txn, []string{structs.AnonymousPolicy})
		return &identity{acl: a}, err
	}
	tok, err := state.ACLTokenBySecret(txn, secret)
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, errTokenNotFound
	}
	if tok.Type == structs.ACLManagementToken {
		return &identity{acl: acl.ManagementACL, token: tok}, nil
	}
	a, err := s.aclCache.compile(txn, tok.Policies)
	return &identity{acl: a, token: tok}, err
}

// aclCache keeps compiled ACLs by the policies they join, for as long as
// no policy changes.
type aclCache struct {
	mu    sync.Mutex
	index uint64
	acls  map[string]*acl.ACL
}

// maxCachedACLs bounds the cache; past it, it starts over.
const maxCachedACLs = 1024

// compile returns the ACL of the named policies as txn holds them;
// policies that do not exist grant nothing.
func (c *aclCache) compile(txn *memdb.Txn, names []string) (*acl.ACL, error) {
	idx := state.IndexOf(txn, state.TableACLPolicies)
	key := strings.Join(names, "\x00")
	c.mu.Lock()
	if c.acls == nil || c.index != idx || len(c.acls) > maxCachedACLs {
		c.index, c.acls = idx, map[string]*acl.ACL{}
	}
	a, ok := c.acls[key]
	c.mu.Unlock()
	if ok {
		return a, nil
	}
	var policies []*acl.Policy
	for _, n := range slices.Compact(slices.Sorted(slices.Values(names))) {
		p, err := state.ACLPolicyByName(txn, nil, n)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue
		}
		parsed, diags := acl.Parse(p.Name, []byte(p.Rules))
		if diags.HasErrors() {
			// Policies are checked before they are stored; one that no
			// longer parses grants nothing.
			continue
		}
		policies = append(policies, parsed)
	}
	a = acl.New(policies...)
	c.mu.Lock()
	if c.index == idx {
		c.acls[key] = a
	}
	c.mu.Unlock()
	return a, nil
}

// newUUID returns a random UUID, formatted as Nomad's IDs are.
func newUUID() (string, error) {
	id, err := uuid.GenerateUUID()
	if err != nil {
		return "", fmt.Errorf("generate ID: %w", err)
	}
	return id, nil
}
