package server

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/shoenig/test/must"
)

// TestACL_StaleReadRevoked: a token the leader deleted is refused by a
// follower answering a ?stale read, at once after the delete (the
// follower's state lags the leader's by tens of milliseconds); a token
// that exists works on a follower that keeps up, and none on a follower cut
// off from the leader.
func TestACL_StaleReadRevoked(t *testing.T) {
	var logs syncBuffer
	leader, follower, servers := aclCluster(t, &logs)
	ctx := context.Background()
	wo := (&api.WriteOptions{}).WithContext(ctx)
	root, _, err := client(t, leader).ACL().Bootstrap(wo)
	must.NoError(t, err)
	mgmt := tokenClient(t, leader, root.SecretID)
	_, _, err = mgmt.ACL().ApplyPolicy("reader", &api.ACLPolicyRequest{Rules: `operator { policy = "read" }`}, wo)
	must.NoError(t, err)
	staleRead := "http://" + follower.HTTPAddr() + "/v1/operator/scheduler/configuration?stale"
	newToken := func(name string) *api.ACLToken {
		tok, _, err := mgmt.ACL().CreateToken(&api.ACLTokenRequest{Name: name, Policies: []string{"reader"}}, wo)
		must.NoError(t, err)
		code, body := status(t, "GET", staleRead, tok.SecretID, "")
		must.Eq(t, http.StatusOK, code, must.Sprintf("a token that exists, on a follower: %s", body))
		return tok
	}

	for i := range 5 {
		tok := newToken(fmt.Sprint("deleted-", i))
		must.NoError(t, errOf(mgmt.ACL().DeleteToken(tok.AccessorID, wo)))
		code, body := status(t, "GET", staleRead, tok.SecretID, "")
		must.Eq(t, http.StatusForbidden, code, must.Sprintf("deleted token %d, on a follower at once: %s", i, body))
		must.StrContains(t, body, "ACL token not found")
	}

	// A follower that no leader answers cannot confirm a token: it
	// refuses rather than trust its own state, which may hold a token
	// deleted since.
	tok := newToken("cut-off")
	agent.WaitFor(t, 10*time.Second, "the token replicated to the follower", func() error {
		_, err := follower.resolveToken(tok.SecretID)
		return err
	})
	for _, s := range servers {
		if s != follower {
			must.NoError(t, s.Shutdown())
		}
	}
	still, err := follower.resolveToken(tok.SecretID)
	must.NoError(t, err, must.Sprint("the cut-off follower's state holds the token"))
	must.NotNil(t, still.token)
	code, body := status(t, "GET", staleRead, tok.SecretID, "")
	must.Eq(t, http.StatusServiceUnavailable, code, must.Sprintf("a token on a cut-off follower: %s", body))
	must.StrContains(t, body, "cannot confirm the token")
}
