package agent

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
)

// The fake GPUs a GPU client reports unless ClusterOptions.GPUModels gives
// it another model (see e2e/fakegpu). A job asks for them as
// `device "nvidia/gpu"` or by FakeGPUDevice.
const (
	FakeGPUModel     = "Tesla V100-SXM2-16GB"
	FakeGPUMemoryMiB = 16384
	// FakeGPUDevice is the device group's ID, "<vendor>/<type>/<name>".
	FakeGPUDevice = "nvidia/gpu/" + FakeGPUModel
)

// GPUModel is the model of a client's fake GPUs: the device group's name
// (and its "model" attribute), and each instance's "memory" attribute.
type GPUModel struct {
	// Name is the model, such as "Tesla T4"; empty means FakeGPUModel.
	Name string
	// MemoryMiB is each GPU's memory; zero means FakeGPUMemoryMiB.
	MemoryMiB int64
	// Speed is the model's relative compute speed (the plugin's
	// `speed`); zero means 1.
	Speed float64
}

// Device returns the ID of the device group of the model's GPUs,
// "nvidia/gpu/<Name>".
func (m GPUModel) Device() string { return "nvidia/gpu/" + m.Name }

// orDefault fills in the fields left zero.
func (m GPUModel) orDefault() GPUModel {
	if m.Name == "" {
		m.Name = FakeGPUModel
	}
	if m.MemoryMiB == 0 {
		m.MemoryMiB = FakeGPUMemoryMiB
	}
	if m.Speed == 0 {
		m.Speed = 1
	}
	return m
}

// clusterReadyTimeout bounds the wait for a (re)started cluster. A cold start
// takes about 2 seconds, or up to 10 more when a client's node stays
// "initializing" until its first heartbeat, which clients outside dev mode
// stagger randomly over 10 seconds; the margin is for a loaded machine.
const clusterReadyTimeout = 3 * time.Minute

// ClusterOptions adjust StartNomadCluster. The zero value is one server and
// three clients, of which clients 0 and 1 have two fake GPUs each, of
// FakeGPUModel.
type ClusterOptions struct {
	// Clients is the number of client agents; zero means 3.
	Clients int

	// GPUClients is the number of fake GPUs of each client, by index; an
	// index past its end or a 0 means none. nil means {2, 2}; an empty
	// non-nil slice gives no client GPUs.
	GPUClients []int

	// GPUModels are the models of the GPU clients' fake GPUs, by index;
	// an index past its end or a zero field means FakeGPUModel's. Clients
	// of different models make a mixed fleet.
	GPUModels []GPUModel

	// Consul, when set, is the Consul agent every Nomad agent registers
	// with.
	Consul *Consul
}

// ClusterNode is one client agent of a NomadCluster.
type ClusterNode struct {
	// Index is the client's position, 0 to Clients-1.
	Index int
	// ID is the Nomad node ID, stable across restarts.
	ID string
	// Name is the node name, "e2e-client-<Index>".
	Name string
	// GPUs is the number of fake GPUs the node reports; GPUIDs are their
	// instance IDs, "c<Index>-gpu-<n>".
	GPUs   int
	GPUIDs []string
	// GPUModel is the model of the node's GPUs; zero when it has none.
	GPUModel GPUModel
	// Address is the client agent's HTTP API URL.
	Address string
}

// NomadCluster is one Nomad server and several Nomad clients, each its own
// process with its own data_dir and loopback ports, running raw_exec tasks.
// Its methods must be called from the test's goroutine.
type NomadCluster struct {
	// Address is the server's HTTP API URL.
	Address string
	// Client talks to the server.
	Client *nomadapi.Client
	// Nodes are the clients, by index.
	Nodes []ClusterNode

	t       testing.TB
	bin     string
	server  *nomadAgent
	clients []*nomadAgent
}

// nomadAgent is one agent's configuration and, while it runs, its process.
type nomadAgent struct {
	name    string
	cfgPath string
	proc    *process // nil before the first start
}

// nomadServerConfig is a server-only agent that elects itself. An agent that
// is not in dev mode refuses to advertise the loopback address it binds to
// unless told to.
const nomadServerConfig = `
name      = "e2e-server"
bind_addr = "127.0.0.1"
data_dir  = %q

ports {
  http = %d
  rpc  = %d
  serf = %d
}

advertise {
  http = "127.0.0.1"
  rpc  = "127.0.0.1"
  serf = "127.0.0.1"
}

server {
  enabled          = true
  bootstrap_expect = 1
}

client {
  enabled = false
}

consul {
  address = %q
}
`

// nomadClientConfig is a client-only agent with raw_exec, kept off the cloud
// metadata endpoints as in nomadConfig. It does not listen on its rpc and
// serf ports; they are set only so that no two agents share a default. It
// publishes allocation metrics, without which a (non-dev) Nomad client
// collects no task stats and its allocation stats API lists no task: the
// nomad driver reads tasks' usage there.
const nomadClientConfig = `
name       = %q
bind_addr  = "127.0.0.1"
data_dir   = %q
plugin_dir = %q

ports {
  http = %d
  rpc  = %d
  serf = %d
}

advertise {
  http = "127.0.0.1"
  rpc  = "127.0.0.1"
  serf = "127.0.0.1"
}

client {
  enabled = true
  servers = [%q]

  options = {
    "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"
  }
}

telemetry {
  publish_allocation_metrics = true
  collection_interval        = "1s"
}

plugin "raw_exec" {
  config {
    enabled = true
  }
}

consul {
  address = %q
}
`

// fakeGPUPluginConfig loads e2e/fakegpu (found in plugin_dir).
const fakeGPUPluginConfig = `
plugin "fakegpu" {
  config {
    count      = %d
    id_prefix  = %q
    model      = %q
    memory_mib = %d
    speed      = %g
  }
}
`

// StartNomadCluster starts a Nomad server and opts.Clients clients, and waits
// until the server leads, every client node is ready and connected, and
// every GPU client reports its fake GPUs. Clients with GPUs load the fakegpu
// plugin, found on the PATH or through CARAVAN_FAKEGPU_BIN.
//
// Everything stops when the test ends. Agents are interrupted, which leaves
// their tasks running as a real agent stop does; the cleanup then kills every
// process still using the cluster's folders (raw_exec tasks, Nomad's
// executors and log collectors, device plugins) and unmounts the secrets tmpfs Nomad mounts in each
// task folder when run as root.
func StartNomadCluster(t testing.TB, opts ClusterOptions) *NomadCluster {
	t.Helper()
	n := opts.Clients
	if n == 0 {
		n = 3
	}
	gpus := opts.GPUClients
	if gpus == nil {
		gpus = []int{2, 2}
	}
	bin := binary(t, "nomad", "CARAVAN_NOMAD_BIN")
	var fakegpu string
	if slices.ContainsFunc(gpus, func(g int) bool { return g > 0 }) {
		fakegpu = binary(t, "fakegpu", "CARAVAN_FAKEGPU_BIN")
		if abs, err := filepath.Abs(fakegpu); err == nil {
			fakegpu = abs
		}
	}

	root := t.TempDir()
	// /proc shows resolved paths; the cleanup compares them with root.
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	// Registered before any agent starts, so it runs after they stop and
	// before root is removed.
	t.Cleanup(func() { cleanUpAfterNomad(t, root) })

	ports := FreePorts(t, 4+3*n)
	consulAddr := fmt.Sprintf("127.0.0.1:%d", ports[3]) // nothing listens there
	if opts.Consul != nil {
		consulAddr = opts.Consul.HTTPAddr
	}
	serverRPC := fmt.Sprintf("127.0.0.1:%d", ports[1])

	c := &NomadCluster{Address: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), t: t, bin: bin}
	c.server = &nomadAgent{name: "nomad-server"}
	c.server.cfgPath = writeConfig(t, filepath.Join(root, "server"), fmt.Sprintf(nomadServerConfig,
		filepath.Join(root, "server", "data"), ports[0], ports[1], ports[2], consulAddr))

	for i := range n {
		p := ports[4+3*i:]
		dir := filepath.Join(root, fmt.Sprintf("client-%d", i))
		node := ClusterNode{
			Index:   i,
			Name:    fmt.Sprintf("e2e-client-%d", i),
			Address: fmt.Sprintf("http://127.0.0.1:%d", p[0]),
		}
		pluginDir := filepath.Join(dir, "plugins")
		if err := os.MkdirAll(pluginDir, 0o755); err != nil {
			t.Fatalf("create plugin dir: %v", err)
		}
		cfg := fmt.Sprintf(nomadClientConfig, node.Name, filepath.Join(dir, "data"), pluginDir,
			p[0], p[1], p[2], serverRPC, consulAddr)
		if i < len(gpus) && gpus[i] > 0 {
			node.GPUs = gpus[i]
			if i < len(opts.GPUModels) {
				node.GPUModel = opts.GPUModels[i]
			}
			node.GPUModel = node.GPUModel.orDefault()
			prefix := fmt.Sprintf("c%d-gpu", i)
			for g := range node.GPUs {
				node.GPUIDs = append(node.GPUIDs, fmt.Sprintf("%s-%d", prefix, g))
			}
			// Nomad loads a plugin whose file name matches a plugin block.
			if err := os.Symlink(fakegpu, filepath.Join(pluginDir, "fakegpu")); err != nil {
				t.Fatalf("link the fakegpu plugin: %v", err)
			}
			cfg += fmt.Sprintf(fakeGPUPluginConfig, node.GPUs, prefix, node.GPUModel.Name, node.GPUModel.MemoryMiB, node.GPUModel.Speed)
		}
		c.Nodes = append(c.Nodes, node)
		c.clients = append(c.clients, &nomadAgent{
			name:    "nomad-" + strings.TrimPrefix(node.Name, "e2e-"),
			cfgPath: writeConfig(t, dir, cfg),
		})
	}

	client, err := nomadapi.NewClient(&nomadapi.Config{Address: c.Address})
	if err != nil {
		t.Fatalf("nomad client: %v", err)
	}
	c.Client = client

	start := time.Now()
	c.Start()
	t.Logf("nomad cluster (1 server, %d clients) ready in %v", n, time.Since(start).Round(time.Millisecond))
	return c
}

// writeConfig writes an agent's configuration into dir and returns its path.
func writeConfig(t testing.TB, dir, cfg string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("create agent dir: %v", err)
	}
	path := filepath.Join(dir, "nomad.hcl")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatalf("write nomad config: %v", err)
	}
	return path
}

// Start starts the server and the clients that are not running, with their
// earlier data dirs and ports, and waits as StartNomadCluster does.
func (c *NomadCluster) Start() {
	c.t.Helper()
	c.startAgent(c.server)
	// A client that cannot register (no leader, or no keyring to sign its
	// identity with yet) retries only 15 to 30 seconds later, so clients
	// start once the server can register them.
	c.wait("a nomad leader with a keyring", c.leader, c.server)
	for _, a := range c.clients {
		c.startAgent(a)
	}
	c.wait("every nomad client node ready", c.ready, c.agents()...)
}

// Stop interrupts every agent and waits for them to exit: clients first, in
// parallel, then the server. Tasks keep running, as with a real agent stop,
// and the clients reattach to them when started again.
func (c *NomadCluster) Stop() {
	var wg sync.WaitGroup
	for _, a := range c.clients {
		if a.proc != nil {
			wg.Go(a.proc.stop)
		}
	}
	wg.Wait()
	c.StopServer()
}

// StopServer interrupts the server and waits for it to exit. The clients keep
// running their tasks and retry the server until StartServer.
func (c *NomadCluster) StopServer() {
	if c.server.proc != nil {
		c.server.proc.stop()
	}
}

// StartServer starts the server again, with its earlier data dir and ports,
// hence its state, and waits until it leads and every client has
// reconnected to it.
func (c *NomadCluster) StartServer() {
	c.t.Helper()
	c.startAgent(c.server)
	c.wait("every nomad client node ready", c.ready, c.agents()...)
}

// agents are the server and the clients.
func (c *NomadCluster) agents() []*nomadAgent {
	return append([]*nomadAgent{c.server}, c.clients...)
}

// startAgent starts a, unless it is running.
func (c *NomadCluster) startAgent(a *nomadAgent) {
	c.t.Helper()
	if a.proc != nil && a.proc.running() == nil {
		return
	}
	a.proc = start(c.t, a.name, c.bin, "agent", "-config", a.cfgPath)
}

// wait waits for check to pass, and fails the test at once if one of the
// agents it needs has exited.
func (c *NomadCluster) wait(what string, check func() error, needs ...*nomadAgent) {
	c.t.Helper()
	WaitFor(c.t, clusterReadyTimeout, what, func() error {
		for _, a := range needs {
			if err := a.proc.running(); err != nil {
				c.t.Fatalf("waiting for %s: %v", what, err)
			}
		}
		return check()
	})
}

// leader passes once the server has elected itself and has an active root
// key, without which it cannot register nodes.
func (c *NomadCluster) leader() error {
	if leader, err := c.Client.Status().Leader(); err != nil || leader == "" {
		return fmt.Errorf("no leader (%v): %w", err, errNotYet)
	}
	keys, _, err := c.Client.Keyring().List(nil)
	if err != nil {
		return fmt.Errorf("list root keys (%v): %w", err, errNotYet)
	}
	for _, k := range keys {
		if k.State == nomadapi.RootKeyStateActive {
			return nil
		}
	}
	return fmt.Errorf("no active root key among %d: %w", len(keys), errNotYet)
}

// ready passes once the server has a leader and, for every client, the node
// is ready, the server reaches the client over its connection (which a
// restarted server learns only when the client reconnects), and it reports
// its fake GPUs as healthy. It fills in the nodes' IDs.
func (c *NomadCluster) ready() error {
	if err := c.leader(); err != nil {
		return err
	}
	stubs, _, err := c.Client.Nodes().List(nil)
	if err != nil {
		return err
	}
	byName := map[string]*nomadapi.NodeListStub{}
	for _, s := range stubs {
		byName[s.Name] = s
	}
	for i := range c.Nodes {
		node := &c.Nodes[i]
		s := byName[node.Name]
		if s == nil {
			return fmt.Errorf("node %s has not registered: %w", node.Name, errNotYet)
		}
		if s.Status != nomadapi.NodeStatusReady {
			return fmt.Errorf("node %s is %s: %w", node.Name, s.Status, errNotYet)
		}
		node.ID = s.ID
		if _, err := c.Client.Nodes().Stats(s.ID, nil); err != nil {
			return fmt.Errorf("node %s not reachable through the server (%v): %w", node.Name, err, errNotYet)
		}
		if node.GPUs == 0 {
			continue
		}
		info, _, err := c.Client.Nodes().Info(s.ID, nil)
		if err != nil {
			return err
		}
		if healthy := healthyInstances(info, node.GPUModel.Device()); healthy != node.GPUs {
			return fmt.Errorf("node %s reports %d of %d healthy %s: %w",
				node.Name, healthy, node.GPUs, node.GPUModel.Device(), errNotYet)
		}
	}
	return nil
}

// healthyInstances counts the healthy instances of the device group with
// the given "<vendor>/<type>/<name>" ID on node.
func healthyInstances(node *nomadapi.Node, id string) int {
	if node.NodeResources == nil {
		return 0
	}
	n := 0
	for _, g := range node.NodeResources.Devices {
		if g.ID() != id {
			continue
		}
		for _, d := range g.Instances {
			if d.Healthy {
				n++
			}
		}
	}
	return n
}

// cleanUpAfterNomad removes what stopped Nomad clients leave under dir: the
// task processes, executors and plugins that outlive an agent (executors run
// in their own session, so killing the agent's process group misses them),
// and the tmpfs mounts of task secrets folders, which would stop the test
// from removing dir.
func cleanUpAfterNomad(t testing.TB, dir string) {
	t.Helper()
	if n := killProcessesUsing(dir); n > 0 {
		t.Logf("killed %d leftover processes of the nomad cluster", n)
	}
	if err := unmountUnder(dir); err != nil {
		t.Errorf("unmount nomad task folders: %v", err)
	}
}

// killProcessesUsing SIGKILLs every other process whose working directory,
// command line or an open file lies under dir, and returns how many it
// signalled. It reads /proc, so it does nothing off Linux.
func killProcessesUsing(dir string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	killed := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if usesDir(pid, dir) && syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	return killed
}

// usesDir reports whether process pid works in, was started with, or has a
// file open under dir.
func usesDir(pid int, dir string) bool {
	under := func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	proc := "/proc/" + strconv.Itoa(pid)
	if cwd, err := os.Readlink(proc + "/cwd"); err == nil && under(cwd) {
		return true
	}
	if cmdline, err := os.ReadFile(proc + "/cmdline"); err == nil && bytes.Contains(cmdline, []byte(dir+"/")) {
		return true
	}
	fds, _ := os.ReadDir(proc + "/fd")
	for _, fd := range fds {
		if target, err := os.Readlink(proc + "/fd/" + fd.Name()); err == nil && under(target) {
			return true
		}
	}
	return false
}

// unmountUnder lazily unmounts every mount point under dir, deepest first.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	for s := bufio.NewScanner(f); s.Scan(); {
		// The fifth field is the mount point, with spaces escaped as \040.
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		p := strings.ReplaceAll(fields[4], `\040`, " ")
		if strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
