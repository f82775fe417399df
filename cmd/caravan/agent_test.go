package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/planner/straggler"
	"github.com/caravan-sched/caravan/server"
	"github.com/caravan-sched/caravan/server/config"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/cli"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

func TestNomadConfig(t *testing.T) {
	cfg := config.Default()
	cfg.BindAddr = "10.0.0.1"
	cfg.Server.RetryJoin = []string{"10.0.0.1:4680", "10.0.0.2:4680"}
	cfg.Nomad.CheckpointDir = "/mnt/ckpt"

	t.Setenv("NOMAD_ADDR", "https://nomad.example:4646")
	t.Setenv("NOMAD_TOKEN", "secret")
	nc := nomadConfig(cfg, hclog.NewNullLogger())
	must.Eq(t, "https://nomad.example:4646", nc.Address, must.Sprint("NOMAD_ADDR fills the default address"))
	must.Eq(t, "secret", nc.Token)
	must.Eq(t, "/mnt/ckpt", nc.CheckpointDir)
	must.Eq(t, []string{"http://10.0.0.1:4680", "http://10.0.0.2:4680"}, nc.ReportAddrs,
		must.Sprint("this agent first, retry_join's others after, no duplicate"))

	cfg.Nomad.Address = "http://127.0.0.1:5646"
	cfg.Nomad.ReportAddrs = []string{"http://lb:4680"}
	nc = nomadConfig(cfg, hclog.NewNullLogger())
	must.Eq(t, "http://127.0.0.1:5646", nc.Address, must.Sprint("the configuration wins over NOMAD_ADDR"))
	must.Eq(t, []string{"http://lb:4680"}, nc.ReportAddrs)
	must.Eq(t, "", nc.CoordinatorAddr, must.Sprint("no coordinator unless configured"))
	must.Eq(t, 0, nc.BatchRestartRatio, must.Sprint("the driver's default unless configured"))

	cfg.Nomad.CoordinatorAddr = "127.0.0.1:9190"
	cfg.Nomad.BatchRestartRatio = 2
	nc = nomadConfig(cfg, hclog.NewNullLogger())
	must.Eq(t, "127.0.0.1:9190", nc.CoordinatorAddr)
	must.Eq(t, 2, nc.BatchRestartRatio)
}

// TestAgent_DormWithoutSolver: an agent configured with dorm where GLPK's
// glpsol cannot be found refuses to start and says what to install,
// instead of failing at its first round.
func TestAgent_DormWithoutSolver(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "agent.hcl")
	must.NoError(t, os.WriteFile(conf, []byte(`
scheduler {
  algorithm = "dorm"
  options = { preset = "dorm-1" }
}
`), 0o644))
	t.Setenv("PATH", dir)
	ui := cli.NewMockUi()
	cmd := &AgentCommand{Meta: newMeta(ui), signals: make(chan os.Signal, 1), started: make(chan *server.Server, 1)}
	code := cmd.Run([]string{"-dev", "-config", conf, "-log-level", "error"})
	must.Eq(t, 1, code)
	must.StrContains(t, ui.ErrorWriter.String(), `Error starting agent: scheduler.algorithm "dorm": options of algorithm "dorm": dorm needs GLPK's glpsol: install glpk-utils (make tools)`)
}

// TestStragglers: the scheduler's straggler block turns straggler
// handling on, with its values; off (the default), the server gets none.
func TestStragglers(t *testing.T) {
	cfg := config.Default()
	must.Nil(t, stragglers(cfg.Scheduler.Straggler))
	on := cfg.Merge(&config.Config{Scheduler: &config.Scheduler{Straggler: &config.Straggler{Enabled: new(true), Ratio: 0.4}}})
	must.Eq(t, &straggler.Config{Ratio: 0.4, Window: time.Minute, Reports: 1}, stragglers(on.Scheduler.Straggler))
}

// TestAgent_Banner: the banner says what the agent runs. -dev with the
// nomad driver from a file is a dev server on Nomad, not on the simulated
// cluster; the files loaded, the driver, the Nomad address and the data
// directory are shown.
func TestAgent_Banner(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "x.hcl")
	must.NoError(t, os.WriteFile(conf, []byte(`
driver = "nomad"
nomad {
  address = "http://127.0.0.1:1"
}
`), 0o644))
	ui := cli.NewMockUi()
	cmd := &AgentCommand{Meta: newMeta(ui), signals: make(chan os.Signal, 1), started: make(chan *server.Server, 1)}
	cfg, files := cmd.readConfig([]string{"-dev", "-config", conf})
	must.NotNil(t, cfg, must.Sprint(ui.ErrorWriter.String()))
	must.Eq(t, []string{conf}, files)

	got := banner(cfg, &structs.NomadCluster{Address: "http://127.0.0.1:1"}, "127.0.0.1:4680", "127.0.0.1:4681", "id1")
	must.Eq(t, "==> Loaded configuration from "+conf+"\n"+
		"==> Caravan agent started: dev server\n"+
		"      Driver: nomad (Nomad at http://127.0.0.1:1)\n"+
		"    Data dir: none (state in memory, lost when the agent stops)\n"+
		"        HTTP: http://127.0.0.1:4680\n"+
		"        Raft: 127.0.0.1:4681\n"+
		"        Node: "+cfg.Name+" (id1)", got)
	must.StrNotContains(t, got, "simulated")

	dev, _ := cmd.readConfig([]string{"-dev", "-data-dir", dir})
	must.NotNil(t, dev)
	got = banner(dev, nil, "127.0.0.1:4680", "127.0.0.1:4681", "id2")
	must.StrContains(t, got, "      Driver: sim (simulated cluster "+dev.Sim.Cluster+")\n")
	must.StrContains(t, got, "    Data dir: "+dir+"\n")
	must.StrNotContains(t, got, "Loaded configuration")
}

// TestAgent_DevTypedCluster: -dev-cluster takes caravan sim's typed
// groups; the nodes report their catalog GPU in caravan node status, and
// sia has a job naming a Pollux model profiled on one GPU of each type.
func TestAgent_DevTypedCluster(t *testing.T) {
	ports := agent.FreePorts(t, 2)
	_, srv, ui := startAgent(t, "-dev", "-dev-cluster", "2xt4,1xa100:4", "-dev-speed", "50", "-algorithm", "sia",
		"-http-port", strconv.Itoa(ports[0]), "-raft-port", strconv.Itoa(ports[1]), "-log-level", "error")
	must.StrContains(t, ui.OutputWriter.String(), "Driver: sim (simulated cluster 2xt4,1xa100:4)")
	addr := "http://" + srv.HTTPAddr()

	var lines []string
	agent.WaitFor(t, 10*time.Second, "the three nodes", func() error {
		code, out, errOut := runCLI(t, "node", "status", "-address", addr)
		if code != 0 {
			return errors.New(errOut)
		}
		if lines = strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 {
			return fmt.Errorf("want a header and 3 nodes, got:\n%s", out)
		}
		return nil
	})
	for i, want := range []string{`4/4\s+Tesla T4`, `4/4\s+Tesla T4`, `4/4\s+A100-SXM4-40GB`} {
		must.RegexMatch(t, regexp.MustCompile(`^node-0`+strconv.Itoa(i)+`\s.*\s`+want+`$`), lines[i+1])
	}

	path := filepath.Join(t.TempDir(), "cifar.hcl")
	must.NoError(t, os.WriteFile(path, []byte(`
job "cifar" {
  meta {
    application = "cifar10"
  }
  training {
    architecture      = "allreduce"
    global_batch_size = 128
    steps_per_epoch   = 100
  }
  elastic {
    workers {
      min = 1
      max = 4
    }
  }
  worker {
    driver = "docker"
    config {
      image = "cifar:1"
    }
    resources {
      device "nvidia/gpu" {
        count = 1
      }
    }
  }
}
`), 0o644))
	code, _, errOut := runCLI(t, "job", "run", "-detach", "-address", addr, path)
	must.Eq(t, 0, code, must.Sprint(errOut))
	client, err := api.NewClient(&api.Config{Address: addr})
	must.NoError(t, err)
	agent.WaitFor(t, 20*time.Second, "profiles on both GPU types", func() error {
		smps, _, err := client.Jobs().Samples("cifar", nil)
		if err != nil {
			return err
		}
		types := map[string]bool{}
		for _, s := range smps.Samples {
			types[s.GPUType] = true
		}
		if !types["Tesla T4"] || !types["A100-SXM4-40GB"] {
			return fmt.Errorf("samples of GPU types %v", slices.Sorted(maps.Keys(types)))
		}
		return nil
	})
}

// TestAgent_DevClusterInvalid: a -dev-cluster the simulator cannot build
// stops the agent before it starts, with sim.cluster's reason.
func TestAgent_DevClusterInvalid(t *testing.T) {
	ui := cli.NewMockUi()
	cmd := &AgentCommand{Meta: newMeta(ui), signals: make(chan os.Signal, 1), started: make(chan *server.Server, 1)}
	cfg, _ := cmd.readConfig([]string{"-dev", "-dev-cluster", "2xt4,1xh100"})
	must.Nil(t, cfg)
	must.StrContains(t, ui.ErrorWriter.String(),
		`sim.cluster: cluster "2xt4,1xh100": group "1xh100": "h100" is neither a GPU count nor a GPU type; the types are a100, quad, rtx, t4`)
}

// startAgent runs caravan agent with args until the test ends (SIGTERM
// then), and returns the command, whose signals the test may send, the
// server once it runs, and the agent's output.
func startAgent(t *testing.T, args ...string) (*AgentCommand, *server.Server, *cli.MockUi) {
	t.Helper()
	ui := cli.NewMockUi()
	cmd := &AgentCommand{Meta: newMeta(ui), signals: make(chan os.Signal, 1), started: make(chan *server.Server, 1)}
	done := make(chan int, 1)
	go func() { done <- cmd.Run(args) }()
	srv := awaitStarted(t, "agent", cmd.started, done, ui)
	t.Cleanup(func() {
		cmd.signals <- syscall.SIGTERM
		<-done
	})
	return cmd, srv, ui
}

// awaitStarted returns what a command sends on started once it runs, and
// fails the test if the command exits first (done, with its output in ui)
// or does not start within 10 s; name is the command's, as in "caravan
// agent".
func awaitStarted[T any](t *testing.T, name string, started <-chan T, done <-chan int, ui *cli.MockUi) T {
	t.Helper()
	select {
	case v := <-started:
		return v
	case code := <-done:
		t.Fatalf("caravan %s exited with %d: %s", name, code, ui.ErrorWriter.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("caravan %s did not start", name)
	}
	var none T // not reached: Fatalf ends the test's goroutine
	return none
}
