package config

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestLoadFile_TLS(t *testing.T) {
	path := writeFile(t, t.TempDir(), "agent.hcl", `
region = "eu-west"
tls {
  http = true
  rpc  = true
  ca_file   = "/etc/caravan/caravan-agent-ca.pem"
  cert_file = "/etc/caravan/eu-west-server-caravan.pem"
  key_file  = "/etc/caravan/eu-west-server-caravan-key.pem"
  verify_https_client = false
}
nomad {
  ca_file   = "/etc/nomad/ca.pem"
  cert_file = "/etc/nomad/cli.pem"
  key_file  = "/etc/nomad/cli-key.pem"
}
consul {
  ca_file = "/etc/consul/ca.pem"
}
`)
	c, diags := LoadFile(path)
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	cfg := Default().Merge(c)
	must.NoError(t, cfg.Merge(&Config{DataDir: "/var/lib/caravan"}).Validate())
	must.Eq(t, "eu-west", cfg.Region)
	must.Eq(t, &TLS{
		HTTP: new(true), RPC: new(true),
		CAFile: "/etc/caravan/caravan-agent-ca.pem", CertFile: "/etc/caravan/eu-west-server-caravan.pem", KeyFile: "/etc/caravan/eu-west-server-caravan-key.pem",
		VerifyServerHostname: new(true), VerifyHTTPSClient: new(false),
	}, cfg.TLS)
	must.True(t, cfg.TLS.Enabled())
	must.False(t, Default().TLS.Enabled())
	must.Eq(t, "/etc/nomad/cli-key.pem", cfg.Nomad.KeyFile)
	must.Eq(t, "/etc/consul/ca.pem", cfg.Consul.CAFile)

	// A later file turns TLS off again: false is a real value.
	off := Default().Merge(c).Merge(&Config{TLS: &TLS{HTTP: new(false), RPC: new(false)}})
	must.False(t, off.TLS.Enabled())
	must.Eq(t, "/etc/caravan/caravan-agent-ca.pem", off.TLS.CAFile)
}

func TestValidate_TLS(t *testing.T) {
	base := Default().Merge(&Config{DataDir: "/var/lib/caravan"})
	cases := []struct {
		name string
		o    *Config
		errs []string
	}{
		{"off needs no files", &Config{TLS: &TLS{CAFile: "/ca.pem"}}, nil},
		{"http without files", &Config{TLS: &TLS{HTTP: new(true), CAFile: "/ca.pem"}},
			[]string{"tls.cert_file: http or rpc is on", "tls.key_file: http or rpc is on", "caravan tls cert create -server"}},
		{"rpc without ca", &Config{TLS: &TLS{RPC: new(true), CertFile: "/c.pem", KeyFile: "/k.pem"}},
			[]string{"tls.ca_file: http or rpc is on"}},
		{"bad region", &Config{Region: "Global.One"}, []string{`region: "Global.One" is not a region`}},
		{"nomad cert without key", &Config{Nomad: &Nomad{CertFile: "/c.pem"}}, []string{"nomad.key_file: cert_file is set"}},
		{"consul key without cert", &Config{Consul: &Consul{KeyFile: "/k.pem"}}, []string{"consul.cert_file: key_file is set"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := base.Merge(tc.o).Validate()
			if tc.errs == nil {
				must.NoError(t, err)
				return
			}
			must.Error(t, err)
			for _, e := range tc.errs {
				must.StrContains(t, err.Error(), e)
			}
		})
	}
}
