package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/caravan-sched/caravan/server/config"
	"github.com/caravan-sched/caravan/tlsutil"
)

// tlsCommand is the parent of the tls subcommands.
var tlsCommand = parentCommand{
	synopsis: "Generates a CA and certificates for mutual TLS",
	help: `
Usage: caravan tls <subcommand> [options]

  Makes a certificate authority and the certificates of servers and
  clients signed by it, for the tls block of the agent and the CLI's
  -ca-cert, -client-cert and -client-key, as nomad tls does. Meant for
  tests and small deployments; a larger one uses its own PKI.

  Create a CA:

      $ caravan tls ca create

  Create a server certificate, and one for a client:

      $ caravan tls cert create -server
      $ caravan tls cert create -client

  Please see the individual subcommand help for detailed usage information.`,
}

// tlsCACommand is the parent of tls ca create.
var tlsCACommand = parentCommand{
	synopsis: "Creates a certificate authority",
	help: `
Usage: caravan tls ca <subcommand> [options]

  Creates the certificate authority that signs the certificates of
  caravan tls cert create.

      $ caravan tls ca create`,
}

// tlsCertCommand is the parent of tls cert create.
var tlsCertCommand = parentCommand{
	synopsis: "Creates certificates",
	help: `
Usage: caravan tls cert <subcommand> [options]

  Creates server and client certificates signed by a CA of
  caravan tls ca create.

      $ caravan tls cert create -server`,
}

// Files of caravan tls, in the current directory.
const (
	caCertFile = "caravan-agent-ca.pem"
	caKeyFile  = "caravan-agent-ca-key.pem"
)

// TLSCACreateCommand writes a new CA to the current directory.
type TLSCACreateCommand struct {
	Meta
}

func (c *TLSCACreateCommand) Synopsis() string { return "Creates a certificate authority" }

func (c *TLSCACreateCommand) Help() string {
	return strings.TrimSpace(fmt.Sprintf(`
Usage: caravan tls ca create [options]

  Creates a certificate authority with an ECDSA P-256 key and writes it to
  %s and its key to %s in the current directory. It
  does not overwrite existing files. Keep the key secret: whoever holds it
  can make server certificates of the cluster.

Options:

  -days=<n>
    How long the CA is valid. Default %d.

  -common-name=<name>
    The CA's common name. Default "Caravan Agent CA <serial>".`, caCertFile, caKeyFile, tlsutil.DefaultCADays))
}

func (c *TLSCACreateCommand) Run(args []string) int {
	var opts tlsutil.CAOptions
	flags := c.FlagSet("tls ca create")
	flags.IntVar(&opts.Days, "days", tlsutil.DefaultCADays, "")
	flags.StringVar(&opts.CommonName, "common-name", "", "")
	if !c.parseArgs(flags, args, c.Help(), noArguments) {
		return 1
	}
	if opts.Days < 1 {
		c.Ui.Error(fmt.Sprintf("-days=%d: a CA must be valid for 1 day or more", opts.Days))
		return 1
	}
	cert, key, err := tlsutil.GenerateCA(opts)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating the CA: %v", err))
		return 1
	}
	return c.writePair(caCertFile, cert, caKeyFile, key)
}

// TLSCertCreateCommand writes a server or client certificate signed by a
// CA to the current directory.
type TLSCertCreateCommand struct {
	Meta
}

func (c *TLSCertCreateCommand) Synopsis() string { return "Creates a server or client certificate" }

func (c *TLSCertCreateCommand) Help() string {
	return strings.TrimSpace(fmt.Sprintf(`
Usage: caravan tls cert create -server|-client [options]

  Creates a certificate with an ECDSA P-256 key, signed by the CA, and
  writes it to <region>-server-caravan.pem and <region>-server-caravan-key.pem
  (or -client-) in the current directory. It does not overwrite existing
  files.

  A server certificate names server.<region>.caravan, localhost and
  127.0.0.1, and is valid for both ends of a connection, since servers dial
  each other; the agent's tls block takes it as cert_file and key_file. A
  client certificate names client.<region>.caravan, for the CLI's
  -client-cert and -client-key; it cannot take part in Raft.

Options:

  -server
    Creates a server certificate.

  -client
    Creates a client certificate.

  -region=<region>
    The cluster's region, the agent configuration's region. Default %q.

  -ca=<path>
    The CA certificate. Default %s.

  -key=<path>
    The CA's key. Default %s.

  -days=<n>
    How long the certificate is valid. Default %d.

  -additional-dnsname=<name>
    Another DNS name the certificate is valid for. Repeatable.

  -additional-ipaddress=<ip>
    Another IP address the certificate is valid for. Repeatable.`,
		config.DefaultRegion, caCertFile, caKeyFile, tlsutil.DefaultCertDays))
}

func (c *TLSCertCreateCommand) Run(args []string) int {
	var (
		isServer, isClient bool
		region, caPath     string
		keyPath            string
		days               int
		dnsNames, ips      stringsFlag
	)
	flags := c.FlagSet("tls cert create")
	flags.BoolVar(&isServer, "server", false, "")
	flags.BoolVar(&isClient, "client", false, "")
	flags.StringVar(&region, "region", config.DefaultRegion, "")
	flags.StringVar(&caPath, "ca", caCertFile, "")
	flags.StringVar(&keyPath, "key", caKeyFile, "")
	flags.IntVar(&days, "days", tlsutil.DefaultCertDays, "")
	flags.Var(&dnsNames, "additional-dnsname", "")
	flags.Var(&ips, "additional-ipaddress", "")
	if !c.parseArgs(flags, args, c.Help(), noArguments) {
		return 1
	}
	if isServer == isClient {
		c.usageError("Give exactly one of -server and -client", c.Help())
		return 1
	}
	if err := config.CheckRegion(region); err != nil {
		c.Ui.Error("-" + err.Error())
		return 1
	}
	if days < 1 {
		c.Ui.Error(fmt.Sprintf("-days=%d: a certificate must be valid for 1 day or more", days))
		return 1
	}
	opts := tlsutil.CertOptions{Days: days, DNSNames: append([]string{"localhost"}, dnsNames...), Server: isServer}
	kind := "client"
	opts.Name = tlsutil.ClientName(region)
	if isServer {
		kind = "server"
		opts.Name = tlsutil.ServerName(region)
		opts.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			c.Ui.Error(fmt.Sprintf("-additional-ipaddress=%q is not an IP address", s))
			return 1
		}
		opts.IPAddresses = append(opts.IPAddresses, ip)
	}
	var err error
	if opts.CACert, err = os.ReadFile(caPath); err == nil {
		opts.CAKey, err = os.ReadFile(keyPath)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the CA: %v (create one with caravan tls ca create, or name it with -ca and -key)", err))
		return 1
	}
	cert, key, err := tlsutil.GenerateCert(opts)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating the certificate: %v", err))
		return 1
	}
	base := fmt.Sprintf("%s-%s-caravan", region, kind)
	return c.writePair(base+".pem", cert, base+"-key.pem", key)
}

// writePair writes a certificate (readable by all) and its key (by the
// owner only), refusing to overwrite either.
func (m *Meta) writePair(certPath string, cert []byte, keyPath string, key []byte) int {
	for _, p := range []string{certPath, keyPath} {
		if _, err := os.Stat(p); err == nil {
			m.Ui.Error(fmt.Sprintf("Error: %s exists; remove it or create the files elsewhere", p))
			return 1
		} else if !errors.Is(err, os.ErrNotExist) {
			m.Ui.Error(fmt.Sprintf("Error: %v", err))
			return 1
		}
	}
	if err := writeNew(certPath, cert, 0o644); err != nil {
		m.Ui.Error(fmt.Sprintf("Error writing %s: %v", certPath, err))
		return 1
	}
	m.Ui.Output("==> Certificate saved to " + certPath)
	if err := writeNew(keyPath, key, 0o600); err != nil {
		m.Ui.Error(fmt.Sprintf("Error writing %s: %v", keyPath, err))
		return 1
	}
	m.Ui.Output("==> Key saved to " + keyPath)
	return 0
}

// writeNew writes data to a file that must not exist.
func writeNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
