package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/drivers/nomad"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/server/config"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

// createCerts runs caravan tls ca create and cert create -server and
// -client in dir.
func createCerts(t *testing.T, dir string) {
	t.Helper()
	t.Chdir(dir)
	for _, args := range [][]string{{"tls", "ca", "create"}, {"tls", "cert", "create", "-server"}, {"tls", "cert", "create", "-client"}} {
		code, _, errOut := runCLI(t, args...)
		must.Eq(t, 0, code, must.Sprint(errOut))
	}
}

func TestTLSCreate(t *testing.T) {
	dir := t.TempDir()
	createCerts(t, dir)
	for name, mode := range map[string]os.FileMode{
		"caravan-agent-ca.pem": 0o644, "caravan-agent-ca-key.pem": 0o600,
		"global-server-caravan.pem": 0o644, "global-server-caravan-key.pem": 0o600,
		"global-client-caravan.pem": 0o644, "global-client-caravan-key.pem": 0o600,
	} {
		fi, err := os.Stat(filepath.Join(dir, name))
		must.NoError(t, err)
		must.Eq(t, mode, fi.Mode().Perm(), must.Sprint(name))
	}
	pair, err := tls.LoadX509KeyPair("global-server-caravan.pem", "global-server-caravan-key.pem")
	must.NoError(t, err)
	must.Eq(t, []string{"server.global.caravan", "localhost"}, pair.Leaf.DNSNames)
	must.Eq(t, "127.0.0.1", pair.Leaf.IPAddresses[0].String())
	must.SliceContains(t, pair.Leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	client, err := tls.LoadX509KeyPair("global-client-caravan.pem", "global-client-caravan-key.pem")
	must.NoError(t, err)
	must.Eq(t, []string{"client.global.caravan", "localhost"}, client.Leaf.DNSNames)
	must.SliceNotContains(t, client.Leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth)

	code, _, _ := runCLI(t, "tls", "cert", "create", "-server", "-region", "west", "-additional-dnsname", "caravan.example", "-additional-ipaddress", "10.0.0.2")
	must.Eq(t, 0, code)
	west, err := tls.LoadX509KeyPair("west-server-caravan.pem", "west-server-caravan-key.pem")
	must.NoError(t, err)
	must.Eq(t, []string{"server.west.caravan", "localhost", "caravan.example"}, west.Leaf.DNSNames)
	must.Eq(t, 2, len(west.Leaf.IPAddresses))

	cases := []struct {
		args []string
		err  string
	}{
		{[]string{"tls", "ca", "create"}, "caravan-agent-ca.pem exists"},
		{[]string{"tls", "cert", "create", "-server"}, "global-server-caravan.pem exists"},
		{[]string{"tls", "cert", "create"}, "Give exactly one of -server and -client"},
		{[]string{"tls", "cert", "create", "-server", "-client"}, "Give exactly one of -server and -client"},
		{[]string{"tls", "cert", "create", "-server", "-region", "East.1"}, `-region: "East.1" is not a region`},
		{[]string{"tls", "cert", "create", "-client", "-region", "east", "-ca", "missing.pem"}, "Error reading the CA"},
		{[]string{"tls", "cert", "create", "-client", "-region", "east", "-additional-ipaddress", "host"}, `"host" is not an IP address`},
	}
	for _, tc := range cases {
		code, _, errOut := runCLI(t, tc.args...)
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, tc.err)
	}
}

// TestAgent_TLS runs caravan agent with the tls block and the files of
// caravan tls, talks to it with the CLI's TLS flags and environment, and
// reloads its certificate on SIGHUP.
func TestAgent_TLS(t *testing.T) {
	dir := t.TempDir()
	createCerts(t, dir)
	port := agent.FreePorts(t, 1)[0]
	conf := filepath.Join(dir, "agent.hcl")
	must.NoError(t, os.WriteFile(conf, fmt.Appendf(nil, `
ports { http = %d }
tls {
  http      = true
  ca_file   = %q
  cert_file = %q
  key_file  = %q
}
`, port, filepath.Join(dir, "caravan-agent-ca.pem"), filepath.Join(dir, "global-server-caravan.pem"), filepath.Join(dir, "global-server-caravan-key.pem")), 0o644))

	cmd, srv, ui := startAgent(t, "-dev", "-config", conf, "-log-level", "error")
	must.StrContains(t, ui.OutputWriter.String(), "HTTP: https://"+srv.HTTPAddr())
	agent.WaitFor(t, 10*time.Second, "a leader", func() error {
		if !srv.IsLeader() {
			return fmt.Errorf("no leader yet")
		}
		return nil
	})

	addr := "https://" + srv.HTTPAddr()
	flags := []string{"-address", addr, "-ca-cert", "caravan-agent-ca.pem", "-client-cert", "global-client-caravan.pem", "-client-key", "global-client-caravan-key.pem"}
	code, out, errOut := runCLI(t, append([]string{"server", "members"}, flags...)...)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, srv.ID())

	code, _, errOut = runCLI(t, "server", "members", "-address", addr, "-ca-cert", "caravan-agent-ca.pem")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "certificate required")
	code, _, errOut = runCLI(t, "server", "members", "-address", "http://"+srv.HTTPAddr())
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "use an https:// address")

	t.Setenv("CARAVAN_ADDR", addr)
	t.Setenv("CARAVAN_CACERT", "caravan-agent-ca.pem")
	t.Setenv("CARAVAN_CLIENT_CERT", "global-client-caravan.pem")
	t.Setenv("CARAVAN_CLIENT_KEY", "global-client-caravan-key.pem")
	code, _, errOut = runCLI(t, "server", "members")
	must.Eq(t, 0, code, must.Sprint(errOut))

	// A new server certificate of the same CA in place of the old: served
	// after SIGHUP.
	served := func() string {
		conn, err := tls.Dial("tcp", srv.HTTPAddr(), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return err.Error()
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := served()
	must.NoError(t, os.Rename("global-server-caravan.pem", "old.pem"))
	must.NoError(t, os.Rename("global-server-caravan-key.pem", "old-key.pem"))
	code, _, _ = runCLI(t, "tls", "cert", "create", "-server")
	must.Eq(t, 0, code)
	must.Eq(t, before, served())
	cmd.signals <- syscall.SIGHUP
	agent.WaitFor(t, 10*time.Second, "the new certificate served", func() error {
		if after := served(); after == before {
			return fmt.Errorf("still serving %s", after)
		}
		return nil
	})
	code, _, errOut = runCLI(t, "server", "members")
	must.Eq(t, 0, code, must.Sprint(errOut))
}

// TestNomadConsulTLS checks that the ca_file of the nomad and consul
// blocks reaches their API clients, which read it when they are made.
func TestNomadConsulTLS(t *testing.T) {
	cfg := config.Default()
	missing := filepath.Join(t.TempDir(), "missing-ca.pem")
	cfg.Consul.CAFile = missing
	cfg.Consul.AutoAdvertise = new(true)
	_, _, err := consulConfig(cfg)
	must.ErrorContains(t, err, "missing-ca.pem")

	cfg.Nomad.CAFile, cfg.Nomad.CertFile, cfg.Nomad.KeyFile = missing, "/c.pem", "/k.pem"
	nc := nomadConfig(cfg, hclog.NewNullLogger())
	must.Eq(t, missing, nc.CAFile)
	must.Eq(t, "/k.pem", nc.KeyFile)
	_, err = nomad.New(nc)
	must.ErrorContains(t, err, "/c.pem")
	nc.CertFile, nc.KeyFile = "", ""
	_, err = nomad.New(nc)
	must.ErrorContains(t, err, "missing-ca.pem")

	cfg.TLS.HTTP = new(true)
	must.Eq(t, "https://"+cfg.HTTPAddr(), nomadConfig(cfg, hclog.NewNullLogger()).ReportAddrs[0])
}
