package state

import (
	"errors"
	"fmt"
	"slices"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
)

// ErrACLBootstrapped is returned when the ACL system is bootstrapped a
// second time.
var ErrACLBootstrapped = errors.New("ACL system is already bootstrapped")

// ErrACLResetIndex is returned by a bootstrap reset whose reset index is
// not the index of the current bootstrap: the bootstrap it was meant to
// reset is not the one in force (none, or a later one).
var ErrACLResetIndex = errors.New("ACL bootstrap reset index is not the index of the current bootstrap")

// ErrACLPolicyNotFound is returned when a token names a policy the store
// does not hold, or a deleted policy does not exist.
var ErrACLPolicyNotFound = errors.New("ACL policy not found")

// ErrACLTokenNotFound is returned when a deleted token does not exist.
var ErrACLTokenNotFound = errors.New("ACL token not found")

// BootstrapACL stores the first management token, once: a second call
// fails with ErrACLBootstrapped and stores nothing. token must carry its
// AccessorID and SecretID; the store keeps a copy. reportKey signs the
// per-job report tokens.
func (s *Store) BootstrapACL(index uint64, now int64, token *structs.ACLToken, reportKey []byte) error {
	return s.write(index, func(w *writer) error {
		if raw, err := w.txn.First(TableACLBootstrap, "id"); err != nil {
			return fmt.Errorf("read acl bootstrap: %w", err)
		} else if raw != nil {
			return fmt.Errorf("%w at index %d", ErrACLBootstrapped, raw.(*structs.ACLBootstrap).Index)
		}
		if err := w.insert(TableACLBootstrap, &structs.ACLBootstrap{Index: index, Time: now, ReportKey: reportKey}); err != nil {
			return err
		}
		return upsertToken(w, token)
	})
}

// ResetACLBootstrap bootstraps the ACL system again, as an operator asks
// after the last management token is lost (Nomad's bootstrap reset): if
// the current bootstrap is at resetIndex, it stores token as a new
// management token and records the bootstrap at index, so that a later
// reset must name index. Other tokens and policies are kept, and so is
// the report key, so that running jobs keep reporting; reportKey is used
// only when the current bootstrap has none. Any other resetIndex, or none
// bootstrap at all, fails with ErrACLResetIndex and stores nothing. Like
// every store write it depends on its arguments and the state alone, so
// that every server applies it alike.
func (s *Store) ResetACLBootstrap(index uint64, now int64, resetIndex uint64, token *structs.ACLToken, reportKey []byte) error {
	return s.write(index, func(w *writer) error {
		raw, err := w.txn.First(TableACLBootstrap, "id")
		if err != nil {
			return fmt.Errorf("read acl bootstrap: %w", err)
		}
		if raw == nil {
			return fmt.Errorf("%w: reset index %d, but ACLs are not bootstrapped", ErrACLResetIndex, resetIndex)
		}
		cur := raw.(*structs.ACLBootstrap)
		if cur.Index != resetIndex {
			return fmt.Errorf("%w: reset index %d, current bootstrap at index %d", ErrACLResetIndex, resetIndex, cur.Index)
		}
		key := cur.ReportKey
		if len(key) == 0 {
			key = reportKey
		}
		if err := w.insert(TableACLBootstrap, &structs.ACLBootstrap{Index: index, Time: now, ReportKey: key}); err != nil {
			return err
		}
		return upsertToken(w, token)
	})
}

// UpsertACLPolicies stores policies, keeping each existing policy's
// CreateIndex. Rules are not parsed here: the HTTP API checks them before
// committing.
func (s *Store) UpsertACLPolicies(index uint64, policies []*structs.ACLPolicy) error {
	return s.write(index, func(w *writer) error {
		for _, p := range policies {
			c := *p
			c.CreateIndex, c.ModifyIndex = index, index
			if raw, err := w.txn.First(TableACLPolicies, "id", p.Name); err != nil {
				return fmt.Errorf("read acl policy %q: %w", p.Name, err)
			} else if raw != nil {
				c.CreateIndex = raw.(*structs.ACLPolicy).CreateIndex
			}
			if err := w.insert(TableACLPolicies, &c); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteACLPolicies deletes policies by name; a missing one fails the
// whole request with ErrACLPolicyNotFound. Tokens naming a deleted policy
// keep its name and lose what it granted.
func (s *Store) DeleteACLPolicies(index uint64, names []string) error {
	return s.write(index, func(w *writer) error {
		for _, n := range names {
			raw, err := w.txn.First(TableACLPolicies, "id", n)
			if err != nil {
				return fmt.Errorf("read acl policy %q: %w", n, err)
			}
			if raw == nil {
				return fmt.Errorf("policy %q: %w", n, ErrACLPolicyNotFound)
			}
			if err := w.delete(TableACLPolicies, raw); err != nil {
				return err
			}
		}
		return nil
	})
}

// UpsertACLTokens stores tokens, keeping each existing token's CreateIndex
// and CreateTime. A client token must name only policies the store holds
// (ErrACLPolicyNotFound otherwise).
func (s *Store) UpsertACLTokens(index uint64, tokens []*structs.ACLToken) error {
	return s.write(index, func(w *writer) error {
		for _, t := range tokens {
			if t.Type == structs.ACLClientToken {
				for _, p := range t.Policies {
					if raw, err := w.txn.First(TableACLPolicies, "id", p); err != nil {
						return fmt.Errorf("read acl policy %q: %w", p, err)
					} else if raw == nil {
						return fmt.Errorf("token %q names policy %q: %w", t.Name, p, ErrACLPolicyNotFound)
					}
				}
			}
			if err := upsertToken(w, t); err != nil {
				return err
			}
		}
		return nil
	})
}

func upsertToken(w *writer, t *structs.ACLToken) error {
	c := *t
	c.Policies = slices.Clone(t.Policies)
	c.CreateIndex, c.ModifyIndex = w.index, w.index
	if raw, err := w.txn.First(TableACLTokens, "id", t.AccessorID); err != nil {
		return fmt.Errorf("read acl token: %w", err)
	} else if raw != nil {
		old := raw.(*structs.ACLToken)
		c.CreateIndex, c.CreateTime = old.CreateIndex, old.CreateTime
	}
	return w.insert(TableACLTokens, &c)
}

// DeleteACLTokens deletes tokens by AccessorID; a missing one fails the
// whole request with ErrACLTokenNotFound.
func (s *Store) DeleteACLTokens(index uint64, accessors []string) error {
	return s.write(index, func(w *writer) error {
		for _, id := range accessors {
			raw, err := w.txn.First(TableACLTokens, "id", id)
			if err != nil {
				return fmt.Errorf("read acl token %q: %w", id, err)
			}
			if raw == nil {
				return fmt.Errorf("token %q: %w", id, ErrACLTokenNotFound)
			}
			if err := w.delete(TableACLTokens, raw); err != nil {
				return err
			}
		}
		return nil
	})
}

// ACLPolicyByName returns a policy, nil when there is none.
func ACLPolicyByName(txn *memdb.Txn, ws memdb.WatchSet, name string) (*structs.ACLPolicy, error) {
	raw, err := watchFirst(txn, ws, TableACLPolicies, name)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.ACLPolicy), nil
}

// ACLPolicies returns every policy, by name.
func ACLPolicies(txn *memdb.Txn, ws memdb.WatchSet) ([]*structs.ACLPolicy, error) {
	return watchAll[*structs.ACLPolicy](txn, ws, TableACLPolicies, "id", forward)
}

// ACLTokenByAccessor returns a token, nil when there is none.
func ACLTokenByAccessor(txn *memdb.Txn, ws memdb.WatchSet, accessor string) (*structs.ACLToken, error) {
	raw, err := watchFirst(txn, ws, TableACLTokens, accessor)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.ACLToken), nil
}

// ACLTokenBySecret returns the token of a secret, nil when there is none.
func ACLTokenBySecret(txn *memdb.Txn, secret string) (*structs.ACLToken, error) {
	raw, err := txn.First(TableACLTokens, "secret", secret)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.ACLToken), nil
}

// ACLTokens returns every token, by AccessorID.
func ACLTokens(txn *memdb.Txn, ws memdb.WatchSet) ([]*structs.ACLToken, error) {
	return watchAll[*structs.ACLToken](txn, ws, TableACLTokens, "id", forward)
}

// ACLBootstrapped returns the bootstrap record, nil before bootstrap.
func ACLBootstrapped(txn *memdb.Txn) (*structs.ACLBootstrap, error) {
	raw, err := txn.First(TableACLBootstrap, "id")
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.ACLBootstrap), nil
}
