package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/collector"
	"github.com/caravan-sched/caravan/collector/client"
	"github.com/caravan-sched/caravan/collector/coord"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/cli"
	consulapi "github.com/hashicorp/consul/api"
	"github.com/shoenig/test/must"
)

// reportSteps reports steps to a collector with the trainers' Go client
// and flushes them.
func reportSteps(t *testing.T, addr, job string, steps ...int64) {
	t.Helper()
	cl, err := client.New(client.Config{Addrs: []string{addr}, FlushInterval: time.Hour})
	must.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range steps {
		cl.Report(structs.Sample{JobID: job, Role: structs.RoleWorker, Step: s, Loss: 0.5, NumPS: 1, NumWorkers: 1})
	}
	must.NoError(t, cl.Close(ctx))
}

// collectorSteps reads the steps a collector holds through its API.
func collectorSteps(t *testing.T, addr string) []int64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/v1/samples?since=0")
	must.NoError(t, err)
	defer resp.Body.Close()
	var page collector.Page
	must.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
	var out []int64
	for _, s := range page.Samples {
		out = append(out, s.Step)
	}
	return out
}

// checkStatus returns the status of a service's check in Consul, "" when
// the service is not registered.
func checkStatus(consul *consulapi.Client, id string) (string, error) {
	checks, _, err := consul.Health().Checks(collector.ServiceName, nil)
	if err != nil {
		return "", err
	}
	for _, c := range checks {
		if c.ServiceID == id {
			return c.Status, nil
		}
	}
	return "", nil
}

func waitCheck(t *testing.T, consul *consulapi.Client, id, status string) {
	t.Helper()
	agent.WaitFor(t, 20*time.Second, fmt.Sprintf("service %s %s", id, status), func() error {
		got, err := checkStatus(consul, id)
		if err != nil {
			return err
		}
		if got != status {
			return fmt.Errorf("check is %q", got)
		}
		return nil
	})
}

func TestCollectorCommand(t *testing.T) {
	consul := agent.StartConsul(t)

	t.Run("serves, registers, and deregisters on a signal", func(t *testing.T) {
		ui := cli.NewMockUi()
		cmd := &CollectorCommand{Meta: newMeta(ui), signals: make(chan os.Signal, 1), started: make(chan *collector.Collector, 1)}
		done := make(chan int, 1)
		go func() {
			done <- cmd.Run([]string{"-consul-addr", consul.HTTPAddr, "-job", "j1", "-role", "worker",
				"-tag", "team=ml", "-check-interval", "1s", "-log-level", "error"})
		}()
		col := awaitStarted(t, "collector", cmd.started, done, ui)
		out := ui.OutputWriter.String()
		must.StrContains(t, out, "==> Caravan collector started")
		must.StrContains(t, out, "HTTP: http://"+col.Addr())
		must.StrContains(t, out, "tags job=j1,role=worker,team=ml")

		reportSteps(t, col.Addr(), "j1", 1, 2, 3)
		must.Eq(t, []int64{1, 2, 3}, collectorSteps(t, col.Addr()))

		id := col.ServiceID()
		waitCheck(t, consul.Client, id, consulapi.HealthPassing)
		entries, _, err := consul.Client.Health().Service(collector.ServiceName, "job=j1", true, nil)
		must.NoError(t, err)
		must.SliceLen(t, 1, entries)
		must.Eq(t, []string{"job=j1", "role=worker", "team=ml"}, entries[0].Service.Tags)
		must.Eq(t, map[string]string{"job": "j1", "role": "worker", "instance": col.Instance()}, entries[0].Service.Meta)

		cmd.signals <- syscall.SIGTERM
		select {
		case code := <-done:
			must.Eq(t, 0, code, must.Sprint(ui.ErrorWriter.String()))
		case <-time.After(15 * time.Second):
			t.Fatal("caravan collector did not stop")
		}
		must.StrContains(t, ui.OutputWriter.String(), "==> Collector stopped")
		services, err := consul.Client.Agent().Services()
		must.NoError(t, err)
		must.MapNotContainsKey(t, services, id, must.Sprint("a stopped collector deregisters"))
	})

	t.Run("a killed process stays registered, critical", func(t *testing.T) {
		bin := agent.BuildCaravan(t)
		const id = "caravan-collector-killed"
		port := agent.FreePorts(t, 1)[0]
		proc := agent.StartCaravanCommand(t, bin, "collector", "collector", "-port", strconv.Itoa(port),
			"-consul-addr", consul.HTTPAddr, "-job", "j2", "-namespace", "ml", "-service-id", id, "-check-interval", "1s")
		addr := "127.0.0.1:" + strconv.Itoa(port)
		agent.WaitFor(t, 10*time.Second, "caravan collector serving", func() error {
			if err := proc.Running(); err != nil {
				return err
			}
			resp, err := http.Get("http://" + addr + "/v1/health")
			if err != nil {
				return err
			}
			resp.Body.Close()
			return nil
		})
		reportSteps(t, addr, "j2", 7)
		must.Eq(t, []int64{7}, collectorSteps(t, addr))
		waitCheck(t, consul.Client, id, consulapi.HealthPassing)
		// -namespace, as the nomad driver's sidecars pass it, tags it.
		services, err := consul.Client.Agent().Services()
		must.NoError(t, err)
		must.SliceContains(t, services[id].Tags, "namespace=ml")

		proc.Kill()
		// Consul notices within a few check intervals; it reaps the service
		// a minute later (collector/README.md).
		waitCheck(t, consul.Client, id, consulapi.HealthCritical)
	})
}

func TestCollectorCommand_UsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"extra"}, "This command takes no arguments"},
		{[]string{"-addr", "127.0.0.1:0", "-port", "1234"}, "Give -addr, or -bind and -port, not both"},
		{[]string{"-tag", "novalue"}, `-tag="novalue" is not key=value`},
		{[]string{"-window", "0"}, "-window=0 must be positive"},
		{[]string{"-log-level", "loud"}, `-log-level="loud" is not a level`},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"-coordinator", "-coordinator-queue", "0"}, "-coordinator-queue=0 must be positive"},
		{[]string{"-addr", "nowhere", "-no-consul"}, `Error starting collector: invalid collector configuration: addr "nowhere"`},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"collector"}, tc.args...)...)
			must.Eq(t, 1, code)
			must.Eq(t, "", out)
			must.StrContains(t, errOut, tc.want)
		})
	}
}

// TestCollectorCommand_Coordinator: -coordinator serves the subtask
// coordinator beside the metrics API, and ends its leases on a signal.
func TestCollectorCommand_Coordinator(t *testing.T) {
	ui := cli.NewMockUi()
	cmd := &CollectorCommand{Meta: newMeta(ui), signals: make(chan os.Signal, 1), started: make(chan *collector.Collector, 1)}
	done := make(chan int, 1)
	go func() { done <- cmd.Run([]string{"-no-consul", "-coordinator", "-log-level", "error"}) }()
	col := awaitStarted(t, "collector", cmd.started, done, ui)
	must.StrContains(t, ui.OutputWriter.String(), "Coordinator: http://"+col.Addr()+"/v1/coord/")

	resp, err := http.Post("http://"+col.Addr()+"/v1/coord/acquire?resource=cpu&holder=j1", "", nil)
	must.NoError(t, err)
	var g coord.AcquireResponse
	must.NoError(t, json.NewDecoder(resp.Body).Decode(&g))
	resp.Body.Close()
	must.True(t, g.Granted)
	// The metrics API is still there.
	reportSteps(t, col.Addr(), "j1", 1)

	cmd.signals <- syscall.SIGTERM
	select {
	case code := <-done:
		must.Eq(t, 0, code, must.Sprint(ui.ErrorWriter.String()))
	case <-time.After(15 * time.Second):
		t.Fatal("caravan collector did not stop")
	}
}
