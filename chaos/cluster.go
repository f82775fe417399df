package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
)

// Ports every agent listens on, at its host's service address.
const (
	httpPort = 4680
	raftPort = 4681
)

// Cluster is a Caravan cluster of real `caravan agent` processes, one per
// host of a Network, that join each other through retry_join. Each server
// runs its own binary, all the same at the start (SetBinary).
type Cluster struct {
	t  testing.TB
	nw *Network
	// Scheme is "http" or "https"; HTTP is the client the checker and the
	// cluster's own probes use (with TLS and tokens as configured).
	Scheme string
	HTTP   *http.Client
	// Token is sent as X-Caravan-Token, empty for none.
	Token string

	mu    sync.Mutex
	cfgs  []string
	bins  []string
	procs []*agent.Caravan
}

// StartCluster starts an agent in each host of nw. body is HCL added to
// each agent's configuration (the driver, acl and tls blocks).
func StartCluster(t testing.TB, nw *Network, bin, body string) *Cluster {
	t.Helper()
	c := &Cluster{t: t, nw: nw, Scheme: "http", HTTP: &http.Client{Timeout: 10 * time.Second}}
	var join []string
	for i := range nw.n {
		join = append(join, fmt.Sprintf("%q", fmt.Sprintf("%s:%d", nw.Addr(i), httpPort)))
	}
	for i := range nw.n {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "agent.hcl")
		hcl := fmt.Sprintf(`
name      = "server-%d"
data_dir  = %q
bind_addr = %q
ports {
  http = %d
  raft = %d
}
server {
  bootstrap_expect = %d
  retry_interval   = "200ms"
  retry_join       = [%s]
}
%s
`, i, filepath.Join(dir, "data"), nw.Addr(i), httpPort, raftPort, nw.n, strings.Join(join, ", "), body)
		if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
			t.Fatalf("write agent config: %v", err)
		}
		c.cfgs = append(c.cfgs, cfg)
		c.bins = append(c.bins, bin)
		c.procs = append(c.procs, nil)
		c.Start(i)
	}
	return c
}

// N is the number of servers.
func (c *Cluster) N() int { return c.nw.n }

// URL is server i's HTTP API address.
func (c *Cluster) URL(i int) string {
	return fmt.Sprintf("%s://%s:%d", c.Scheme, c.nw.Addr(i), httpPort)
}

// Start starts server i's agent, again after Kill or Stop, on the same
// data, with its binary.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	c.mu.Lock()
	bin := c.bins[i]
	c.mu.Unlock()
	argv := c.nw.Exec(i, bin, "agent", "-config", c.cfgs[i])
	p := agent.StartCaravanCommand(c.t, argv[0], fmt.Sprintf("caravan-%d-%d", i, time.Now().UnixNano()), argv[1:]...)
	c.mu.Lock()
	c.procs[i] = p
	c.mu.Unlock()
}

// Kill ends server i's agent with SIGKILL, as a crash would.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	p := c.procs[i]
	c.mu.Unlock()
	p.Kill()
}

// Stop interrupts server i's agent, which leaves the cluster's Raft
// configuration, as `systemctl stop` does, and waits for it to exit.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	p := c.procs[i]
	c.mu.Unlock()
	p.Stop()
}

// StopMode is how Halt ends a server's agent.
type StopMode int

const (
	// Leave interrupts the agent (Stop): it leaves the Raft configuration
	// and joins again when it starts.
	Leave StopMode = iota
	// Crash SIGKILLs it (Kill): it stays in the configuration and comes
	// back with its Raft state as it was.
	Crash
)

func (m StopMode) String() string {
	if m == Crash {
		return "SIGKILL"
	}
	return "SIGINT (leave)"
}

// Halt ends server i's agent as mode says.
func (c *Cluster) Halt(i int, mode StopMode) {
	if mode == Crash {
		c.Kill(i)
	} else {
		c.Stop(i)
	}
}

// SetBinary makes server i run bin from its next Start on: Halt,
// SetBinary and Start replace its binary, on the same configuration and
// data.
func (c *Cluster) SetBinary(i int, bin string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bins[i] = bin
}

// self is what a server says of itself (GET /v1/agent/self): the
// fields of structs.AgentSelf the checks read, which every release since
// v0.1.0 answers.
type self struct {
	ID       string
	LeaderID string
	// Version is the binary's version.String(); Voters the size of the
	// server's Raft configuration.
	Version string
	Voters  int
}

// Self asks server i who it is, whom it knows as leader, which version it
// runs and how many voters it counts, locally.
func (c *Cluster) Self(ctx context.Context, i int) (self, error) {
	var s self
	_, err := c.Do(ctx, i, http.MethodGet, "/v1/agent/self?stale=true", nil, &s)
	return s, err
}

// Leader returns the server that leads with the support of a majority:
// it says it leads, and a majority of the servers name it.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	selves := make([]self, c.N())
	errs := make([]error, c.N())
	var wg sync.WaitGroup
	for i := range c.N() {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			selves[i], errs[i] = c.Self(ctx, i)
		})
	}
	wg.Wait()
	for i, s := range selves {
		if s.ID == "" || s.LeaderID != s.ID {
			continue
		}
		votes := 0
		for _, o := range selves {
			if o.LeaderID == s.ID {
				votes++
			}
		}
		if votes > c.N()/2 {
			return i, nil
		}
	}
	// Say what each server answered, so that a failure names the server
	// that did not.
	said := make([]string, c.N())
	for i, s := range selves {
		switch {
		case errs[i] != nil:
			said[i] = fmt.Sprintf("server %d: %v", i, errs[i])
		case s.LeaderID == "":
			said[i] = fmt.Sprintf("server %d (%s) knows no leader", i, short(s.ID))
		default:
			said[i] = fmt.Sprintf("server %d (%s) follows %s", i, short(s.ID), short(s.LeaderID))
		}
	}
	return -1, fmt.Errorf("no server leads with a majority behind it: %s", strings.Join(said, "; "))
}

// short is the first block of a server ID, enough to tell three apart.
func short(id string) string {
	if i := strings.IndexByte(id, '-'); i > 0 {
		return id[:i]
	}
	return id
}

// WaitLeader waits for a leader other than exclude (-1: any) and returns it.
func (c *Cluster) WaitLeader(timeout time.Duration, exclude int) int {
	c.t.Helper()
	leader := -1
	agent.WaitFor(c.t, timeout, "a Caravan leader", func() error {
		i, err := c.Leader(context.Background())
		if err != nil {
			return err
		}
		if i == exclude {
			return fmt.Errorf("server %d still leads", i)
		}
		leader = i
		return nil
	})
	return leader
}

// StatusError is a response other than 2xx.
type StatusError struct {
	Code int
	Body string
}

func (e *StatusError) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Body) }

// Do sends a request to server i and decodes a 2xx answer into out (when
// not nil); any other answer is a *StatusError.
func (c *Cluster) Do(ctx context.Context, i int, method, path string, body, out any) (http.Header, error) {
	return c.DoAs(ctx, c.HTTP, c.Token, i, method, path, body, out)
}

// DoAs is Do with another HTTP client and token.
func (c *Cluster) DoAs(ctx context.Context, client *http.Client, token string, i int, method, path string, body, out any) (http.Header, error) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	rd := bytes.NewReader(b)
	req, err := http.NewRequestWithContext(ctx, method, c.URL(i)+path, rd)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("X-Caravan-Token", token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.Header, &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(string(b))}
	}
	if out == nil {
		return resp.Header, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return resp.Header, &BadAnswer{Code: resp.StatusCode, Err: err}
	}
	return resp.Header, nil
}

// BadAnswer is a 2xx answer whose body does not decode, such as the empty
// 200 net/http sends for a handler that wrote nothing.
type BadAnswer struct {
	Code int
	Err  error
}

func (e *BadAnswer) Error() string {
	return fmt.Sprintf("%d with a body that does not decode: %v", e.Code, e.Err)
}
