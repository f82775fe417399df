package collector

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	consulapi "github.com/hashicorp/consul/api"
)

// consulTimeout bounds one registration request.
const consulTimeout = 10 * time.Second

// ServiceID returns the default service ID of a collector on host and
// port: caravan-collector-<host>-<port>.
func ServiceID(host string, port int) string {
	return ServiceName + "-" + host + "-" + strconv.Itoa(port)
}

// registration returns the service the collector registers: its
// advertised address, the tags and meta of the configuration, and an HTTP
// check on GET /v1/health that expires the service once it has been
// critical for DeregisterAfter.
func (c *Collector) registration() (*consulapi.AgentServiceRegistration, error) {
	r := c.cfg.Registration
	advertise := r.AdvertiseAddr
	if advertise == "" {
		advertise = c.addr
	}
	host, portStr, err := net.SplitHostPort(advertise)
	if err != nil {
		return nil, fmt.Errorf("advertise address %q: %w", advertise, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("advertise address %q: port: %w", advertise, err)
	}
	checkHost := host
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		// Consul then uses its node's address; its agent, on the same
		// node, checks through loopback.
		host, checkHost = "", "127.0.0.1"
	}
	id := r.ID
	if id == "" {
		hostname, err := os.Hostname()
		if err != nil || hostname == "" {
			hostname = host
		}
		id = ServiceID(hostname, port)
	}
	meta := maps.Clone(r.Meta)
	if meta == nil {
		meta = map[string]string{}
	}
	meta["instance"] = c.instance
	return &consulapi.AgentServiceRegistration{
		ID: id, Name: ServiceName, Address: host, Port: port,
		Tags: slices.Clone(r.Tags), Meta: meta,
		Check: &consulapi.AgentServiceCheck{
			Name:                           "Caravan collector health",
			HTTP:                           "http://" + net.JoinHostPort(checkHost, portStr) + "/v1/health",
			Interval:                       r.CheckInterval.String(),
			Timeout:                        min(r.CheckInterval, DefaultCheckTimeout).String(),
			DeregisterCriticalServiceAfter: r.DeregisterAfter.String(),
		},
	}, nil
}

// registerLoop registers reg in Consul, retrying every RetryInterval while
// Consul cannot be reached, until ctx ends.
func (c *Collector) registerLoop(ctx context.Context, reg *consulapi.AgentServiceRegistration) {
	log := c.log.With("service", reg.Name, "service_id", reg.ID)
	for {
		// Not ctx: a registration cancelled in flight may have been made,
		// and would then never be withdrawn.
		rctx, cancel := context.WithTimeout(context.Background(), consulTimeout)
		err := c.cfg.Consul.Agent().ServiceRegisterOpts(reg, consulapi.ServiceRegisterOpts{}.WithContext(rctx))
		cancel()
		if err == nil {
			c.registered.Store(&reg.ID)
			log.Info("registered in Consul", "tags", reg.Tags)
			return
		}
		log.Warn("cannot register in Consul; retrying", "error", err)
		if !sleep(ctx, c.cfg.Registration.RetryInterval) {
			return
		}
	}
}

// deregister removes the service from Consul if it was registered, giving
// up when ctx ends.
func (c *Collector) deregister(ctx context.Context) error {
	id := c.registered.Swap(nil)
	if id == nil {
		return nil
	}
	if err := c.cfg.Consul.Agent().ServiceDeregisterOpts(*id, (&consulapi.QueryOptions{}).WithContext(ctx)); err != nil {
		return fmt.Errorf("deregister service %q from Consul: %w", *id, err)
	}
	c.log.Info("deregistered from Consul", "service_id", *id)
	return nil
}
