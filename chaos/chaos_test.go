package chaos

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
)

// agentBody configures the chaos cluster's agents: the simulated cluster,
// and rounds only when jobs come.
const agentBody = `
driver = "sim"
scheduler {
  interval = "1h"
}
`

// TestChaos runs three agents in network namespaces, with ACLs and mutual
// TLS on the HTTP API and Raft, under four clients,
// SIGKILLs the leader CARAVAN_CHAOS_KILLS times (5 by default; `make
// chaos` runs 20), isolates the leader and then a follower, and checks
// that no acknowledged write was lost or made twice, that every read of
// a write just acknowledged found it, and that a server cut off from the
// majority acknowledged no write and answered no consistent read.
func TestChaos(tt *testing.T) {
	// The agents' logs, printed when the test fails, follow the failure
	// and can push it out of a CI excerpt: the failure is said again last.
	t := &lastWords{TB: tt}
	tt.Cleanup(t.repeat)
	kills := 5
	if s := os.Getenv("CARAVAN_CHAOS_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("CARAVAN_CHAOS_KILLS=%q: %v", s, err)
		}
		kills = n
	}
	nw := NewNetwork(t, 3)
	secure := NewSecure(t)
	c := StartCluster(t, nw, agent.BuildCaravan(t), agentBody+secure.Body())
	secure.Apply(t, c)

	// With ACLs and mTLS on, a client without a certificate or without a
	// token gets nothing.
	_, err := c.DoAs(context.Background(), c.HTTP, "", 0, http.MethodGet, "/v1/jobs", nil, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusForbidden {
		t.Fatalf("a request without a token: %v, want 403", err)
	}
	plain := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if _, err := c.DoAs(context.Background(), plain, c.Token, 0, http.MethodGet, "/v1/jobs", nil, nil); err == nil {
		t.Fatal("a client without a certificate was answered")
	}

	r := Run(t, c, Schedule{Kills: kills, Down: 2 * time.Second, Partitions: true, Writers: 4})
	t.Logf("CHAOS %d kills and 2 partitions:\n%s", kills, r)
	if !r.OK() {
		t.Errorf("the cluster broke its promises:\n%s", r)
	}
}

// lastWords is a testing.TB that keeps its failures' messages, to say them
// again when the test ends (repeat), after everything else it printed.
type lastWords struct {
	testing.TB
	mu  sync.Mutex
	why []string
}

func (l *lastWords) Fatalf(format string, args ...any) {
	l.TB.Helper()
	l.note(format, args...)
	l.TB.Fatalf(format, args...)
}

func (l *lastWords) Errorf(format string, args ...any) {
	l.TB.Helper()
	l.note(format, args...)
	l.TB.Errorf(format, args...)
}

func (l *lastWords) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.why = append(l.why, fmt.Sprintf(format, args...))
}

// repeat logs the failures again; registered first with Cleanup, it runs
// after every other cleanup.
func (l *lastWords) repeat() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.why) > 0 {
		l.TB.Logf("the test failed because:\n%s", strings.Join(l.why, "\n"))
	}
}
