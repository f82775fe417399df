package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
)

// Nomad is a running Nomad dev agent: one server and one client, with the
// raw_exec driver enabled.
type Nomad struct {
	// Address is the HTTP API's URL.
	Address string
	Client  *nomadapi.Client
	// NodeID is the client node's ID once it is ready.
	NodeID string
	// Token is the management token of an agent with ACLs, which Client
	// uses; empty without ACLs.
	Token string
	proc  *process
}

// NomadOptions adjust the agent. The zero value is a plain dev agent.
type NomadOptions struct {
	// Consul, when set, is the Consul agent Nomad registers with.
	Consul *Consul
	// ACL enables Nomad's ACLs; the agent is bootstrapped, and its
	// management token kept in Nomad.Token.
	ACL bool
}

// nomadConfig keeps the dev agent on its own loopback ports and off the
// cloud metadata endpoints, which time out on this machine's closed network.
const nomadConfig = `
name      = "e2e-nomad"
bind_addr = "127.0.0.1"
data_dir  = %q

ports {
  http = %d
  rpc  = %d
  serf = %d
}

client {
  options = {
    "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"
  }
}

consul {
  address = %q
}
`

// StartNomad starts a Nomad dev agent and waits until it has a leader and its
// client node is ready. It is stopped when the test ends.
func StartNomad(t testing.TB, opts NomadOptions) *Nomad {
	t.Helper()
	bin := binary(t, "nomad", "CARAVAN_NOMAD_BIN")
	ports := FreePorts(t, 4)
	consulAddr := fmt.Sprintf("127.0.0.1:%d", ports[3]) // nothing listens there
	if opts.Consul != nil {
		consulAddr = opts.Consul.HTTPAddr
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "nomad.hcl")
	cfg := fmt.Sprintf(nomadConfig, filepath.Join(dir, "data"), ports[0], ports[1], ports[2], consulAddr)
	if opts.ACL {
		cfg += "\nacl {\n  enabled = true\n}\n"
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatalf("write nomad config: %v", err)
	}
	proc := start(t, "nomad", bin, "agent", "-dev", "-config", cfgPath)

	addr := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	client, err := nomadapi.NewClient(&nomadapi.Config{Address: addr})
	if err != nil {
		t.Fatalf("nomad client: %v", err)
	}
	n := &Nomad{Address: addr, Client: client, proc: proc}
	WaitFor(t, 2*time.Minute, "nomad leader and a ready client node", func() error {
		if err := proc.running(); err != nil {
			return err
		}
		if leader, err := client.Status().Leader(); err != nil || leader == "" {
			return fmt.Errorf("no leader (%v): %w", err, errNotYet)
		}
		if opts.ACL && n.Token == "" {
			token, _, err := client.ACLTokens().Bootstrap(nil)
			if err != nil {
				return fmt.Errorf("bootstrap ACLs (%v): %w", err, errNotYet)
			}
			n.Token = token.SecretID
			client.SetSecretID(token.SecretID)
		}
		nodes, _, err := client.Nodes().List(nil)
		if err != nil {
			return err
		}
		for _, node := range nodes {
			if node.Status == nomadapi.NodeStatusReady {
				n.NodeID = node.ID
				return nil
			}
		}
		return fmt.Errorf("no ready node among %d: %w", len(nodes), errNotYet)
	})
	return n
}

// Stop stops the agent now rather than at the end of the test.
func (n *Nomad) Stop() { n.proc.stop() }

// NomadBinary returns the nomad binary the agents run, for tests that run
// Nomad's CLI as users do.
func NomadBinary(t testing.TB) string {
	t.Helper()
	return binary(t, "nomad", "CARAVAN_NOMAD_BIN")
}
