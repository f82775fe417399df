package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/shoenig/test/must"
)

// TestACL_StaleReadRevoked: a token the leader deleted is refused by a
// follower answering a ?stale read, at once after the delete (the
// follower's state lags the leader's by tens of milliseconds) and by a
// follower cut off from Raft, which never applies the delete; a token
// that exists works on a follower that keeps up.
func TestACL_StaleReadRevoked(t *testing.T) {
	var logs syncBuffer
	leader, follower := aclCluster(t, &logs)
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

	// Cut the follower off Raft: the leader and the third server commit
	// the delete without it.
	tok := newToken("cut-off")
	closer, ok := follower.trans.(io.Closer)
	must.True(t, ok)
	must.NoError(t, closer.Close())
	must.NoError(t, errOf(mgmt.ACL().DeleteToken(tok.AccessorID, wo)))
	agent.WaitFor(t, 10*time.Second, "the leader applied the delete", func() error {
		if _, err := leader.resolveToken(tok.SecretID); err == nil {
			return fmt.Errorf("the leader still knows the token")
		}
		return nil
	})
	still, err := follower.resolveToken(tok.SecretID)
	must.NoError(t, err, must.Sprint("the cut-off follower's state still holds the token"))
	must.NotNil(t, still.token)
	code, body := status(t, "GET", staleRead, tok.SecretID, "")
	must.Eq(t, http.StatusServiceUnavailable, code, must.Sprintf("deleted token on a cut-off follower: %s", body))
	must.StrContains(t, body, "cannot confirm the token")
}
