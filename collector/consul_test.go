package collector

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	consulapi "github.com/hashicorp/consul/api"
	"github.com/shoenig/test/must"
)

// EnvTestReap, set to 1, makes TestConsul_DeadCollector also wait for
// Consul to reap the dead collector, which takes 60 to 90 seconds.
const EnvTestReap = "CARAVAN_TEST_CONSUL_REAP"

// passing returns the passing instances of the collector service tagged
// tag.
func passing(t *testing.T, consul *consulapi.Client, tag string) []*consulapi.ServiceEntry {
	t.Helper()
	entries, _, err := consul.Health().Service(ServiceName, tag, true, nil)
	must.NoError(t, err)
	return entries
}

// waitPassing waits until the service id passes its check.
func waitPassing(t *testing.T, consul *consulapi.Client, id string) {
	t.Helper()
	agent.WaitFor(t, 20*time.Second, "the collector passing its check", func() error {
		for _, e := range passing(t, consul, "") {
			if e.Service.ID == id {
				return nil
			}
		}
		return errors.New("not passing yet")
	})
}

func TestConsul_RegisterAndDeregister(t *testing.T) {
	consul := agent.StartConsul(t)
	tags := []string{"job=j1", "namespace=default", "role=worker"}
	c := TestCollector(t, Config{Consul: consul.Client, Registration: Registration{
		Tags: tags, Meta: map[string]string{"job": "j1"}, CheckInterval: time.Second,
	}})
	host, portStr, err := net.SplitHostPort(c.Addr())
	must.NoError(t, err)
	port, _ := strconv.Atoi(portStr)
	hostname, err := os.Hostname()
	must.NoError(t, err)
	id := ServiceID(hostname, port)
	waitPassing(t, consul.Client, id)

	entries := passing(t, consul.Client, "job=j1")
	must.SliceLen(t, 1, entries, must.Sprint("servers find a job's collectors by its tag"))
	svc := entries[0].Service
	must.Eq(t, id, svc.ID)
	must.Eq(t, ServiceName, svc.Service)
	must.Eq(t, tags, svc.Tags)
	must.Eq(t, host, svc.Address)
	must.Eq(t, port, svc.Port)
	must.Eq(t, map[string]string{"job": "j1", "instance": c.Instance()}, svc.Meta)
	must.SliceEmpty(t, passing(t, consul.Client, "job=j2"))

	checks, err := consul.Client.Agent().ChecksWithFilter(fmt.Sprintf("ServiceID == %q", id))
	must.NoError(t, err)
	must.MapLen(t, 1, checks)
	for _, chk := range checks {
		must.Eq(t, consulapi.HealthPassing, chk.Status)
		must.StrContains(t, chk.Output, "HTTP GET http://"+c.Addr()+"/v1/health: 200 OK")
	}
	// Consul's agent API does not return a check's definition: read what
	// was registered.
	reg, err := c.registration()
	must.NoError(t, err)
	must.Eq(t, "1s", reg.Check.Interval)
	must.Eq(t, "1m0s", reg.Check.DeregisterCriticalServiceAfter)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must.NoError(t, c.Shutdown(ctx))
	services, err := consul.Client.Agent().Services()
	must.NoError(t, err)
	must.MapNotContainsKey(t, services, id, must.Sprint("a collector that stops deregisters"))
	catalog, _, err := consul.Client.Catalog().Service(ServiceName, "", nil)
	must.NoError(t, err)
	must.SliceEmpty(t, catalog)
}

// TestConsul_DeadCollector kills a collector's HTTP API without letting
// it deregister, as SIGKILL would: Consul's check turns critical within a
// few intervals, and Consul reaps the service once it has been critical
// for DeregisterCriticalServiceAfter. Consul raises that to at least one
// minute and reaps every 30 seconds (check_deregister_interval_min and
// check_reap_interval, which its configuration cannot change), so the
// reap itself is checked only with CARAVAN_TEST_CONSUL_REAP=1.
func TestConsul_DeadCollector(t *testing.T) {
	consul := agent.StartConsul(t)
	const id = "caravan-collector-doomed"
	c := TestCollector(t, Config{Consul: consul.Client, Registration: Registration{
		ID: id, Tags: []string{"job=j1"}, CheckInterval: time.Second,
	}})
	waitPassing(t, consul.Client, id)

	// Die: the API stops answering and nothing deregisters.
	c.registered.Store(nil)
	must.NoError(t, c.http.Close())
	start := time.Now()
	agent.WaitFor(t, 20*time.Second, "the check turning critical", func() error {
		checks, _, err := consul.Client.Health().Checks(ServiceName, nil)
		if err != nil {
			return err
		}
		if len(checks) != 1 || checks[0].Status != consulapi.HealthCritical {
			return fmt.Errorf("checks: %v", checks)
		}
		return nil
	})
	t.Logf("critical %v after the collector died", time.Since(start).Round(100*time.Millisecond))
	must.SliceEmpty(t, passing(t, consul.Client, "job=j1"), must.Sprint("servers stop scraping it"))

	t.Run("reaped", func(t *testing.T) {
		if os.Getenv(EnvTestReap) != "1" {
			t.Skipf("Consul reaps a dead collector 60-90s after it turns critical; set %s=1 to wait for it", EnvTestReap)
		}
		agent.WaitFor(t, 2*time.Minute, "Consul reaping the dead collector", func() error {
			services, err := consul.Client.Agent().Services()
			if err != nil {
				return err
			}
			if _, ok := services[id]; ok {
				return errors.New("still registered")
			}
			return nil
		})
		t.Logf("reaped %v after the collector died", time.Since(start).Round(time.Second))
	})
}
