package agent

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	consulapi "github.com/hashicorp/consul/api"
)

// Consul is a running Consul dev agent (server and client in one, state in
// memory).
type Consul struct {
	// HTTPAddr is host:port of the HTTP API.
	HTTPAddr string
	Client   *consulapi.Client
	proc     *process
}

// StartConsul starts a Consul dev agent on loopback ports and waits until it
// has elected itself leader. It is stopped when the test ends.
func StartConsul(t testing.TB) *Consul {
	t.Helper()
	bin := binary(t, "consul", "CARAVAN_CONSUL_BIN")
	ports := FreePorts(t, 5)
	httpAddr := "127.0.0.1:" + strconv.Itoa(ports[0])
	proc := start(t, "consul", bin, "agent", "-dev",
		"-node", "e2e-consul",
		"-bind", "127.0.0.1", "-client", "127.0.0.1",
		"-http-port", strconv.Itoa(ports[0]),
		"-serf-lan-port", strconv.Itoa(ports[1]),
		"-serf-wan-port", strconv.Itoa(ports[2]),
		"-server-port", strconv.Itoa(ports[3]),
		"-grpc-port", strconv.Itoa(ports[4]),
		"-dns-port", "-1", "-grpc-tls-port", "-1",
	)
	client, err := consulapi.NewClient(&consulapi.Config{Address: httpAddr})
	if err != nil {
		t.Fatalf("consul client: %v", err)
	}
	c := &Consul{HTTPAddr: httpAddr, Client: client, proc: proc}
	WaitFor(t, time.Minute, "consul leader", func() error {
		if err := proc.running(); err != nil {
			return err
		}
		leader, err := client.Status().Leader()
		if err != nil {
			return err
		}
		if leader == "" {
			return fmt.Errorf("no leader: %w", errNotYet)
		}
		return nil
	})
	return c
}

// Stop stops the agent now rather than at the end of the test.
func (c *Consul) Stop() { c.proc.stop() }
