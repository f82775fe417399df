package server

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"

	"github.com/caravan-sched/caravan/acl"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
)

// aclRoutes registers the ACL endpoints. Every one answers 400 while ACLs
// are disabled, as Nomad's do.
func (s *Server) aclRoutes(mux *http.ServeMux) {
	on := s.aclEnabled
	mux.HandleFunc("POST /v1/acl/bootstrap", s.write(on(s.aclBootstrap)))
	mux.HandleFunc("GET /v1/acl/policies", s.read(on(s.allow(management, s.aclPolicyList))))
	mux.HandleFunc("GET /v1/acl/policy/{name}", s.read(on(s.allow(management, s.aclPolicyRead))))
	mux.HandleFunc("PUT /v1/acl/policy/{name}", s.write(on(s.allow(management, s.aclPolicyApply))))
	mux.HandleFunc("DELETE /v1/acl/policy/{name}", s.write(on(s.allow(management, s.aclPolicyDelete))))
	mux.HandleFunc("GET /v1/acl/tokens", s.read(on(s.allow(management, s.aclTokenList))))
	mux.HandleFunc("POST /v1/acl/token", s.write(on(s.allow(management, s.aclTokenCreate))))
	mux.HandleFunc("GET /v1/acl/token/self", s.read(on(s.allow(anyToken, s.aclTokenSelf))))
	mux.HandleFunc("GET /v1/acl/token/{accessor}", s.read(on(s.allow(management, s.aclTokenRead))))
	mux.HandleFunc("DELETE /v1/acl/token/{accessor}", s.write(on(s.allow(management, s.aclTokenDelete))))
}

func (s *Server) aclEnabled(fn endpoint) endpoint {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		if !s.cfg.ACL.Enabled {
			return nil, badRequest("ACL support disabled: set acl { enabled = true } in the agent configuration")
		}
		return fn(w, r)
	}
}

// aclBootstrap creates the first management token and answers it, secret
// included; it works once per cluster (snapshots keep the record).
func (s *Server) aclBootstrap(w http.ResponseWriter, r *http.Request) (any, error) {
	tok, err := newToken("Bootstrap Token", structs.ACLManagementToken, nil, s.now().UnixNano())
	if err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("report key: %w", err)
	}
	ctx, cancel := applyContext(r)
	defer cancel()
	_, index, err := s.apply(ctx, fsm.ACLBootstrapType|newTypeFlag, &fsm.ACLBootstrapRequest{Token: tok, Time: tok.CreateTime, ReportKey: key})
	if errors.Is(err, state.ErrACLBootstrapped) {
		return nil, badRequest("ACL bootstrap already done: %v", err)
	}
	if err != nil {
		return nil, err
	}
	s.log.Info("acl system bootstrapped", "accessor_id", tok.AccessorID, "index", index)
	tok.CreateIndex, tok.ModifyIndex = index, index
	return tok, nil
}

func newToken(name, typ string, policies []string, now int64) (*structs.ACLToken, error) {
	accessor, err := newUUID()
	if err != nil {
		return nil, err
	}
	secret, err := newUUID()
	if err != nil {
		return nil, err
	}
	return &structs.ACLToken{AccessorID: accessor, SecretID: secret, Name: name, Type: typ, Policies: policies, CreateTime: now}, nil
}

// policyName is what a policy may be called, as in Nomad.
var policyName = regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`)

func (s *Server) aclPolicyList(w http.ResponseWriter, r *http.Request) (any, error) {
	return s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		ps, err := state.ACLPolicies(txn, ws)
		return orEmpty(ps), err
	}, state.TableACLPolicies))
}

func (s *Server) aclPolicyRead(w http.ResponseWriter, r *http.Request) (any, error) {
	name := r.PathValue("name")
	return s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		p, err := state.ACLPolicyByName(txn, ws, name)
		if err == nil && p == nil {
			return nil, notFound("ACL policy %q not found", name)
		}
		return p, err
	}, state.TableACLPolicies))
}

// aclPolicyApply creates or replaces a policy after parsing its rules: a
// policy that does not parse answers 400 with file:line:col diagnostics,
// the file being the policy's name.
func (s *Server) aclPolicyApply(w http.ResponseWriter, r *http.Request) (any, error) {
	name := r.PathValue("name")
	if !policyName.MatchString(name) {
		return nil, badRequest("policy name %q is not 1 to 128 letters, digits and dashes", name)
	}
	var req structs.ACLPolicyRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if _, diags := acl.Parse(name+".hcl", []byte(req.Rules)); diags.HasErrors() {
		return nil, badRequest("%v", acl.DiagnosticsError(diags))
	}
	p := &structs.ACLPolicy{Name: name, Description: req.Description, Rules: req.Rules}
	ctx, cancel := applyContext(r)
	defer cancel()
	_, index, err := s.apply(ctx, fsm.ACLPolicyUpsertType|newTypeFlag, &fsm.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{p}})
	if err != nil {
		return nil, err
	}
	out, err := state.ACLPolicyByName(s.State().Txn(), nil, name)
	if err != nil || out == nil {
		p.ModifyIndex = index
		return p, err
	}
	return out, nil
}

func (s *Server) aclPolicyDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	ctx, cancel := applyContext(r)
	defer cancel()
	_, index, err := s.apply(ctx, fsm.ACLPolicyDeleteType|newTypeFlag, &fsm.ACLPolicyDeleteRequest{Names: []string{r.PathValue("name")}})
	if errors.Is(err, state.ErrACLPolicyNotFound) {
		return nil, notFound("%v", err)
	}
	if err != nil {
		return nil, err
	}
	return map[string]uint64{"Index": index}, nil
}

// aclTokenList lists the tokens without their secrets.
func (s *Server) aclTokenList(w http.ResponseWriter, r *http.Request) (any, error) {
	return s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		toks, err := state.ACLTokens(txn, ws)
		out := make([]*structs.ACLToken, 0, len(toks))
		for _, t := range toks {
			out = append(out, t.Stub())
		}
		return out, err
	}, state.TableACLTokens))
}

// aclTokenCreate creates a token and answers it, secret included. A
// client token must name existing policies; a management token names
// none.
func (s *Server) aclTokenCreate(w http.ResponseWriter, r *http.Request) (any, error) {
	var req structs.ACLTokenRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	switch req.Type {
	case "":
		req.Type = structs.ACLClientToken
		fallthrough
	case structs.ACLClientToken:
		if len(req.Policies) == 0 {
			return nil, badRequest("a client token needs at least one policy")
		}
	case structs.ACLManagementToken:
		if len(req.Policies) > 0 {
			return nil, badRequest("a management token takes no policies: it allows everything")
		}
	default:
		return nil, badRequest("token type %q is not client or management", req.Type)
	}
	slices.Sort(req.Policies)
	tok, err := newToken(req.Name, req.Type, slices.Compact(req.Policies), s.now().UnixNano())
	if err != nil {
		return nil, err
	}
	ctx, cancel := applyContext(r)
	defer cancel()
	_, index, err := s.apply(ctx, fsm.ACLTokenUpsertType|newTypeFlag, &fsm.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{tok}})
	if errors.Is(err, state.ErrACLPolicyNotFound) {
		return nil, badRequest("%v", err)
	}
	if err != nil {
		return nil, err
	}
	s.log.Info("acl token created", "accessor_id", tok.AccessorID, "type", tok.Type)
	tok.CreateIndex, tok.ModifyIndex = index, index
	return tok, nil
}

// aclTokenRead answers a token by accessor, secret included: only
// management tokens may read it.
func (s *Server) aclTokenRead(w http.ResponseWriter, r *http.Request) (any, error) {
	accessor := r.PathValue("accessor")
	return s.blocking(w, r, queryOf(func(txn *memdb.Txn, ws memdb.WatchSet) (any, error) {
		t, err := state.ACLTokenByAccessor(txn, ws, accessor)
		if err == nil && t == nil {
			return nil, notFound("ACL token %q not found", accessor)
		}
		return t, err
	}, state.TableACLTokens))
}

// aclTokenSelf answers the request's own token.
func (s *Server) aclTokenSelf(w http.ResponseWriter, r *http.Request) (any, error) {
	id, _ := r.Context().Value(identityKey{}).(*identity)
	if id == nil || id.token == nil {
		return nil, fmt.Errorf("token self: the request has no resolved token")
	}
	return id.token, nil
}

func (s *Server) aclTokenDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	ctx, cancel := applyContext(r)
	defer cancel()
	_, index, err := s.apply(ctx, fsm.ACLTokenDeleteType|newTypeFlag, &fsm.ACLTokenDeleteRequest{AccessorIDs: []string{r.PathValue("accessor")}})
	if errors.Is(err, state.ErrACLTokenNotFound) {
		return nil, notFound("%v", err)
	}
	if err != nil {
		return nil, err
	}
	return map[string]uint64{"Index": index}, nil
}
