package server

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/shoenig/test/must"
)

// countLogEntries counts the entries of each message type in the Raft log
// of a data directory whose server has shut down.
func countLogEntries(t *testing.T, dataDir string) map[fsm.MessageType]int {
	t.Helper()
	store, err := raftboltdb.NewBoltStore(filepath.Join(dataDir, "raft", "raft.db"))
	must.NoError(t, err)
	defer store.Close()
	first, err := store.FirstIndex()
	must.NoError(t, err)
	last, err := store.LastIndex()
	must.NoError(t, err)
	must.Eq(t, uint64(1), first, must.Sprint("the log was compacted"))
	counts := map[fsm.MessageType]int{}
	var entry raft.Log
	for i := first; i <= last; i++ {
		must.NoError(t, store.GetLog(i, &entry))
		if entry.Type == raft.LogCommand && len(entry.Data) > 0 {
			counts[fsm.MessageType(entry.Data[0])&^fsm.IgnoreUnknownTypeFlag]++
		}
	}
	return counts
}

// TestACL_BootstrapRefusals: refused bootstraps are answered from the
// state, naming the reset index, and write nothing to Raft; past a few,
// a client is answered 429 with Retry-After.
func TestACL_BootstrapRefusals(t *testing.T) {
	var logs syncBuffer
	cfg := aclConfig(t, &logs)
	s := TestServer(t, cfg)
	leaderOf(t, s)
	root, _, err := client(t, s).ACL().Bootstrap((&api.WriteOptions{}).WithContext(context.Background()))
	must.NoError(t, err)

	codes := map[int]int{}
	for range 50 {
		req, err := http.NewRequest("POST", "http://"+s.HTTPAddr()+"/v1/acl/bootstrap", nil)
		must.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		must.NoError(t, err)
		body := readBody(t, resp)
		codes[resp.StatusCode]++
		switch resp.StatusCode {
		case http.StatusBadRequest:
			must.StrContains(t, body, fmt.Sprintf("ACL bootstrap already done (reset index: %d)", root.CreateIndex))
		case http.StatusTooManyRequests:
			secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			must.NoError(t, err, must.Sprint("Retry-After in seconds"))
			must.Positive(t, secs)
		default:
			t.Fatalf("bootstrap answered %d: %s", resp.StatusCode, body)
		}
	}
	must.Positive(t, codes[http.StatusTooManyRequests], must.Sprintf("answers: %v", codes))
	must.Positive(t, codes[http.StatusBadRequest], must.Sprintf("answers: %v", codes))

	must.NoError(t, s.Shutdown())
	counts := countLogEntries(t, cfg.DataDir)
	must.Eq(t, 1, counts[fsm.ACLBootstrapType], must.Sprintf("only the bootstrap is in the log: %v", counts))
}

// TestACL_BootstrapReset follows deploy/README.md's reset on a cluster:
// after the last management token is deleted, the refusal names the reset
// index; an index other than the bootstrap's in the leader's reset file is
// refused; the right one bootstraps again through any server, every
// server applies it, report tokens keep working, and the next reset needs
// the new index.
func TestACL_BootstrapReset(t *testing.T) {
	var logs syncBuffer
	leader, follower, _ := aclCluster(t, &logs)
	ctx := context.Background()
	wo := (&api.WriteOptions{}).WithContext(ctx)
	anon := client(t, follower)
	root, _, err := anon.ACL().Bootstrap(wo)
	must.NoError(t, err)
	job := structs.NewJobKey("default", "a")
	report := leader.JobReportToken(job)
	must.NotEq(t, "", report)
	must.NoError(t, errOf(tokenClient(t, leader, root.SecretID).ACL().DeleteToken(root.AccessorID, wo)))

	resetFile := filepath.Join(leader.cfg.DataDir, aclBootstrapResetFile)
	steps := []struct {
		name string
		file string      // the reset file's content; "" for no file
		mode os.FileMode // the file's mode; 0 for 0600
		want string      // the refusal; "" for a bootstrap
	}{
		{"no reset file", "", 0, fmt.Sprintf("ACL bootstrap already done (reset index: %d)", root.CreateIndex)},
		{"not an index", "yesterday", 0, fmt.Sprintf("ACL bootstrap already done (reset index: %d)", root.CreateIndex)},
		{"another index", "999999", 0, fmt.Sprintf("Invalid bootstrap reset index (specified 999999, reset index: %d)", root.CreateIndex)},
		{"writable by others", fmt.Sprint(root.CreateIndex), 0o666, fmt.Sprintf("ACL bootstrap already done (reset index: %d)", root.CreateIndex)},
		{"the bootstrap's index", fmt.Sprintf("%d\n", root.CreateIndex), 0, ""},
	}
	var again *api.ACLToken
	for _, st := range steps {
		if st.file != "" {
			must.NoError(t, os.WriteFile(resetFile, []byte(st.file), 0o600))
			must.NoError(t, os.Chmod(resetFile, cmp.Or(st.mode, 0o600)))
		}
		tok, _, err := anon.ACL().Bootstrap(wo)
		if st.want != "" {
			must.ErrorContains(t, err, st.want, must.Sprint(st.name))
			continue
		}
		must.NoError(t, err, must.Sprint(st.name))
		again = tok
	}
	must.NotNil(t, again)
	must.Greater(t, root.CreateIndex, again.CreateIndex)

	// Every server applied the reset: the new token is a management token
	// on each, and the old one is gone.
	agent.WaitFor(t, 10*time.Second, "the follower applied the reset", func() error {
		boot, err := state.ACLBootstrapped(follower.State().Txn())
		if err != nil || boot == nil || boot.Index != again.CreateIndex {
			return fmt.Errorf("follower's bootstrap: %+v (%v)", boot, err)
		}
		return nil
	})
	for _, s := range []*Server{leader, follower} {
		id, err := s.resolveToken(again.SecretID)
		must.NoError(t, err)
		must.True(t, id.acl.IsManagement())
		must.Eq(t, report, s.JobReportToken(job), must.Sprint("report tokens survive a reset"))
	}

	// The file left in place names an older bootstrap: refused.
	_, _, err = anon.ACL().Bootstrap(wo)
	must.ErrorContains(t, err, fmt.Sprintf("Invalid bootstrap reset index (specified %d, reset index: %d)", root.CreateIndex, again.CreateIndex))
}

// readBody reads and closes an answer's body.
func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	return string(b)
}
