package server

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

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
	mux.HandleFunc("POST /v1/acl/bootstrap", s.limited(s.bootstrapLimit, s.write(on(s.aclBootstrap))))
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

// aclBootstrapResetFile is the file of the data directory in which an
// operator writes the reset index to bootstrap ACLs again, as Nomad's
// acl-bootstrap-reset (deploy/README.md).
const aclBootstrapResetFile = "acl-bootstrap-reset"

// aclBootstrap creates a management token and answers it, secret
// included: the first one, once per cluster (snapshots keep the record),
// or a new one when the leader's data directory holds the reset file
// naming the index of the bootstrap in force (Nomad's bootstrap reset).
//
// A refusal is answered from the leader's state and writes nothing to
// Raft: 400 "ACL bootstrap already done (reset index: N)", N being the
// index to write in the reset file. The FSM checks again, from the entry
// alone: a bootstrap is applied only while there is none, a reset only
// while the bootstrap in force is at the index the entry carries, so that
// every server decides alike.
func (s *Server) aclBootstrap(w http.ResponseWriter, r *http.Request) (any, error) {
	cur, err := state.ACLBootstrapped(s.State().Txn())
	if err != nil {
		return nil, fmt.Errorf("read acl bootstrap: %w", err)
	}
	var resetIndex uint64
	if cur != nil {
		switch specified := s.bootstrapResetIndex(); {
		case specified == 0:
			return nil, badRequest("ACL bootstrap already done (reset index: %d)", cur.Index)
		case specified != cur.Index:
			return nil, badRequest("Invalid bootstrap reset index (specified %d, reset index: %d)", specified, cur.Index)
		}
		resetIndex = cur.Index
	}
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
	var index uint64
	if resetIndex == 0 {
		_, index, err = s.apply(ctx, fsm.ACLBootstrapType|newTypeFlag, &fsm.ACLBootstrapRequest{Token: tok, Time: tok.CreateTime, ReportKey: key})
	} else {
		// No IgnoreUnknownTypeFlag: a server that skipped the reset
		// would keep the old bootstrap while the others have the new
		// one, a silent divergence of who may do what.
		// apply refuses the type (503) until every server runs a
		// version that knows it (fsm.Since).
		_, index, err = s.apply(ctx, fsm.ACLBootstrapResetType, &fsm.ACLBootstrapResetRequest{Token: tok, Time: tok.CreateTime, ResetIndex: resetIndex, ReportKey: key})
	}
	switch {
	case errors.Is(err, state.ErrACLBootstrapped), errors.Is(err, state.ErrACLResetIndex):
		// The state changed between the check above and the commit.
		return nil, badRequest("ACL bootstrap already done: %v", err)
	case err != nil:
		return nil, err
	}
	if resetIndex != 0 {
		s.log.Warn("acl system bootstrapped again by the reset file", "accessor_id", tok.AccessorID, "index", index, "reset_index", resetIndex)
	} else {
		s.log.Info("acl system bootstrapped", "accessor_id", tok.AccessorID, "index", index)
	}
	tok.CreateIndex, tok.ModifyIndex = index, index
	return tok, nil
}

// bootstrapResetIndex returns the index the reset file of the data
// directory names, 0 when there is none (or no data directory). A file
// that cannot be read or holds no index is logged and taken for none, as
// Nomad does: the caller of the bootstrap learns nothing of it. So is a
// link, or a file that group or others may write.
func (s *Server) bootstrapResetIndex() uint64 {
	if s.cfg.DataDir == "" {
		return 0
	}
	path := filepath.Join(s.cfg.DataDir, aclBootstrapResetFile)
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return 0
	case err != nil:
		s.log.Error("failed to read the acl bootstrap reset file", "path", path, "error", err)
		return 0
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o022 != 0:
		// Whoever can write it can mint a management token: only a
		// regular file that only its owner may write counts.
		s.log.Error("ignoring the acl bootstrap reset file: it must be a regular file that group and others cannot write", "path", path, "mode", fi.Mode().String())
		return 0
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		s.log.Error("failed to read the acl bootstrap reset file", "path", path, "error", err)
		return 0
	}
	idx, err := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		s.log.Error("acl bootstrap reset file holds no index", "path", path, "error", err)
		return 0
	}
	return idx
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
	pol, diags := acl.Parse(name+".hcl", []byte(req.Rules))
	if diags.HasErrors() {
		return nil, badRequest("%v", acl.DiagnosticsError(diags))
	}
	if pol.Queue != nil && !s.supports(fsm.QueueUpsertType) {
		// Servers before queues would fail to parse the policy and grant
		// its tokens nothing at all.
		return nil, &CodedError{Code: http.StatusServiceUnavailable,
			Err: fmt.Errorf("policy %q has a queue rule, which some servers do not know yet: apply it once every server runs 0.2.0 or later", name)}
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
