// Package tlsutil is Caravan's mutual TLS, modelled on Nomad's
// helper/tlsutil: it makes the certificate authority and the certificates
// of `caravan tls` (Generate*), and turns an agent's tls block (Config)
// into the tls.Configs of the HTTP API and the Raft transport
// (Configurator), whose certificates and CA reload without a restart.
//
// A server's certificate names ServerName(region), "server.<region>.caravan",
// and a client's "client.<region>.caravan": with VerifyServerHostname a
// server accepts Raft connections only from certificates that name a server
// of its region, and checks the same of the servers it dials.
package tlsutil
