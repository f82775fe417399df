//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/tlsutil"
	"github.com/shoenig/test/must"
)

// TestCaravanNomad_ACLAndTLS runs a Caravan agent with ACLs and mutual
// TLS on its HTTP API and Raft against a Nomad agent: a client without a
// certificate or without a token gets nothing, ACLs bootstrap once, a
// token of a policy that may only read cannot submit, and the management
// token's job is placed on Nomad and stopped there.
func TestCaravanNomad_ACLAndTLS(t *testing.T) {
	t.Parallel()
	n := agent.StartNomad(t, agent.NomadOptions{})
	certs := tlsutil.NewTestCerts(t, "")
	ports := agent.FreePorts(t, 2)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "agent.hcl")
	must.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`
name      = "secure"
data_dir  = %q
bind_addr = "127.0.0.1"
ports {
  http = %d
  raft = %d
}
server {
  bootstrap_expect = 1
}
driver = "nomad"
nomad {
  address        = %q
  checkpoint_dir = %q
}
%s
tls {
  http      = true
  rpc       = true
  ca_file   = %q
  cert_file = %q
  key_file  = %q
}
acl {
  enabled = true
}
`, filepath.Join(dir, "data"), ports[0], ports[1], n.Address, t.TempDir(), allowRawExec, certs.CAFile, certs.ServerCert, certs.ServerKey)), 0o600))
	agent.StartCaravan(t, agent.BuildCaravan(t), "caravan-secure", "-config", cfg)

	addr := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	tlsCfg := &api.TLSConfig{CACert: certs.CAFile, ClientCert: certs.ClientCert, ClientKey: certs.ClientKey}
	c, err := api.NewClient(&api.Config{Address: addr, TLSConfig: tlsCfg})
	must.NoError(t, err)
	var mgmt *api.ACLToken
	agent.WaitFor(t, time.Minute, "ACLs bootstrapped", func() (err error) {
		mgmt, _, err = c.ACL().Bootstrap(nil)
		return err
	})
	_, _, err = c.ACL().Bootstrap(nil)
	must.ErrorContains(t, err, "already", must.Sprint("ACLs bootstrap once"))

	_, _, err = c.Jobs().List(nil)
	must.ErrorContains(t, err, "403", must.Sprint("an anonymous request"))
	noCert, err := api.NewClient(&api.Config{Address: addr, Token: mgmt.SecretID, TLSConfig: &api.TLSConfig{CACert: certs.CAFile}})
	must.NoError(t, err)
	_, _, err = noCert.Jobs().List(nil)
	must.Error(t, err, must.Sprint("a client without a certificate"))
	plain, err := api.NewClient(&api.Config{Address: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), Token: mgmt.SecretID})
	must.NoError(t, err)
	_, _, err = plain.Jobs().List(nil)
	must.Error(t, err, must.Sprint("plain HTTP"))

	admin, err := api.NewClient(&api.Config{Address: addr, Token: mgmt.SecretID, TLSConfig: tlsCfg})
	must.NoError(t, err)
	_, _, err = admin.ACL().ApplyPolicy("readonly", &api.ACLPolicyRequest{Rules: `namespace "default" {
  policy = "read"
}`}, nil)
	must.NoError(t, err)
	ro, _, err := admin.ACL().CreateToken(&api.ACLTokenRequest{Name: "reader", Type: api.ACLClientToken, Policies: []string{"readonly"}}, nil)
	must.NoError(t, err)
	reader, err := api.NewClient(&api.Config{Address: addr, Token: ro.SecretID, TLSConfig: tlsCfg})
	must.NoError(t, err)
	_, _, err = reader.Jobs().Register(cpuJob("denied"), nil)
	must.ErrorContains(t, err, "Permission denied")

	waitNodes(t, admin, 1, 0)
	_, _, err = admin.Jobs().Register(cpuJob("a"), nil)
	must.NoError(t, err)
	waitEvent(t, admin, "a", api.EventTasksRunning, 1, 2*time.Minute)
	info, _, err := n.Client.Jobs().Info("caravan-a", nil)
	must.NoError(t, err)
	must.Eq(t, "a", info.Meta["caravan_job_id"])
	jobs, _, err := reader.Jobs().List(nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, jobs, must.Sprint("the reader lists the job"))

	_, err = reader.Jobs().Stop("a", false, nil)
	must.ErrorContains(t, err, "Permission denied")
	_, err = admin.Jobs().Stop("a", false, nil)
	must.NoError(t, err)
	agent.WaitFor(t, time.Minute, "Nomad job stopped", func() error {
		info, _, err := n.Client.Jobs().Info("caravan-a", nil)
		if err != nil {
			return err
		}
		if info.Stop == nil || !*info.Stop {
			return errors.New("still running")
		}
		return nil
	})
}

// allowRawExec is the agent configuration that lets jobs use raw_exec,
// which the e2e jobs run with.
const allowRawExec = `
jobs {
  denied_drivers = []
}
`
