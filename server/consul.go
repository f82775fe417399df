package server

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	consulapi "github.com/hashicorp/consul/api"
)

// ConsulJoinScheme starts a retry_join entry that names a Consul service,
// "consul://caravan": the HTTP addresses of its healthy instances.
const ConsulJoinScheme = "consul://"

// DefaultServiceName is the Consul service Caravan servers register as.
const DefaultServiceName = "caravan"

// Consul is how a server uses Consul: to advertise itself as a service
// whose health check is its HTTP API, and to find the servers to join
// through retry_join entries "consul://<service>".
type Consul struct {
	Client *consulapi.Client
	// ServiceName is the service the server registers as; default
	// "caravan".
	ServiceName string
	// Advertise registers the server; it is deregistered when it stops.
	Advertise bool
	// CheckInterval is how often Consul checks the server (default 5s);
	// a server critical for DeregisterAfter (default 1m) is removed.
	CheckInterval   time.Duration
	DeregisterAfter time.Duration
}

func (c *Consul) setDefaults() {
	if c.ServiceName == "" {
		c.ServiceName = DefaultServiceName
	}
	if c.CheckInterval == 0 {
		c.CheckInterval = 5 * time.Second
	}
	if c.DeregisterAfter == 0 {
		c.DeregisterAfter = time.Minute
	}
}

// serviceID is the server's service instance in Consul.
func (s *Server) serviceID() string { return s.cfg.Consul.ServiceName + "-" + s.cfg.NodeID }

// advertise registers the server in Consul, with its Raft address and ID
// in the service's meta and a check on GET /v1/agent/self.
func (s *Server) advertise() error {
	c := s.cfg.Consul
	if c == nil || !c.Advertise {
		return nil
	}
	host, portStr, err := net.SplitHostPort(s.httpAddr)
	if err != nil {
		return fmt.Errorf("advertise in Consul: %w", err)
	}
	port, _ := strconv.Atoi(portStr)
	reg := &consulapi.AgentServiceRegistration{
		ID: s.serviceID(), Name: c.ServiceName, Address: host, Port: port,
		Tags: []string{"server"},
		Meta: map[string]string{"node_id": s.cfg.NodeID, "node_name": s.cfg.NodeName, "raft_addr": s.RaftAddr()},
		Check: &consulapi.AgentServiceCheck{
			Name:                           "Caravan HTTP API",
			HTTP:                           "http://" + s.httpAddr + "/v1/agent/self",
			Interval:                       c.CheckInterval.String(),
			Timeout:                        min(c.CheckInterval, 5*time.Second).String(),
			DeregisterCriticalServiceAfter: c.DeregisterAfter.String(),
		},
	}
	if s.cfg.TLS != nil && s.cfg.TLS.HTTP {
		// Consul's checks present no client certificate the API would
		// take: over TLS the check is that the port accepts connections,
		// as Nomad's is when it verifies HTTPS clients.
		reg.Check.HTTP, reg.Check.TCP = "", s.httpAddr
	}
	if err := c.Client.Agent().ServiceRegister(reg); err != nil {
		return fmt.Errorf("register service %q in Consul: %w", c.ServiceName, err)
	}
	s.log.Info("registered in Consul", "service", c.ServiceName, "id", reg.ID)
	return nil
}

// advertiseLoop registers the server in Consul, retrying every
// RetryInterval while Consul cannot be reached.
func (s *Server) advertiseLoop() {
	defer s.wg.Done()
	for {
		err := s.advertise()
		if err == nil {
			return
		}
		s.log.Warn("cannot advertise in Consul; retrying", "error", err)
		select {
		case <-s.shutdownCtx.Done():
			return
		case <-time.After(s.cfg.RetryInterval):
		}
	}
}

// withdraw deregisters the server from Consul.
func (s *Server) withdraw() {
	c := s.cfg.Consul
	if c == nil || !c.Advertise {
		return
	}
	if err := c.Client.Agent().ServiceDeregister(s.serviceID()); err != nil {
		s.log.Warn("failed to deregister from Consul", "error", err)
	}
}

// joinAddrs returns the HTTP addresses of RetryJoin, with each
// "consul://<service>" entry replaced by its passing instances.
func (s *Server) joinAddrs() []string {
	var out []string
	for _, entry := range s.cfg.RetryJoin {
		name, ok := strings.CutPrefix(entry, ConsulJoinScheme)
		if !ok {
			out = append(out, entry)
			continue
		}
		if s.cfg.Consul == nil {
			s.log.Warn("retry_join names a Consul service but the server has no Consul client", "entry", entry)
			continue
		}
		entries, _, err := s.cfg.Consul.Client.Health().Service(name, "", true, nil)
		if err != nil {
			s.log.Warn("cannot list servers in Consul", "service", name, "error", err)
			continue
		}
		for _, e := range entries {
			host := e.Service.Address
			if host == "" {
				host = e.Node.Address
			}
			out = append(out, net.JoinHostPort(host, strconv.Itoa(e.Service.Port)))
		}
	}
	return out
}
