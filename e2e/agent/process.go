package agent

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stopTimeout bounds a graceful stop before the process is killed.
const stopTimeout = 15 * time.Second

// process is a child process whose output goes to a log file in the test's
// temporary folder.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	err     error // valid once exited is closed
}

// start runs bin with args and registers its stop with t.Cleanup. When the
// test fails, the tail of the process's log is printed.
func start(t testing.TB, name, bin string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("create %s log: %v", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("last lines of the %s log (%s):\n%s", name, logPath, Tail(logPath, 40))
		}
	})
	return p
}

// stop interrupts the process group, waits for it to exit, and kills it if
// it does not within stopTimeout. It is safe to call more than once.
func (p *process) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// running returns an error once the process has exited.
func (p *process) running() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited: %v; see %s", p.name, p.err, p.logPath)
	default:
		return nil
	}
}

// environ is the test's environment without what breaks the agents here:
// AWS_CA_BUNDLE makes Nomad's client fail at start (see ../shared/TOOLS.md).
func environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_CA_BUNDLE=") {
			out = append(out, kv)
		}
	}
	return out
}

// Tail returns the last n lines of a file, or why it cannot be read.
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	for s := bufio.NewScanner(f); s.Scan(); {
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// binary finds a tool: the env override first, then the PATH, then the
// .tools/bin folder of the repository that `make tools` fills, so that
// plain `go test ./...` finds the agents once it ran.
func binary(t testing.TB, name, env string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if root, err := moduleRoot(); err == nil {
		p := filepath.Join(root, ".tools", "bin", name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Fatalf("%s binary not found in %s, on the PATH or in .tools/bin: run `make tools` and test with `make e2e`", name, env)
	return ""
}

// modulePath is the module whose root holds .tools/bin.
const modulePath = "github.com/caravan-sched/caravan"

// moduleRoot walks up from the working directory to the folder whose
// go.mod declares modulePath (nested modules, such as e2e/fakegpu, are
// passed by).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			for line := range strings.SplitSeq(string(data), "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == modulePath {
					return dir, nil
				}
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// Test ports come from [freePortMin, freePortMax): below the kernel's
// ephemeral range (32768–60999 by default), where the local end of any
// connection a process opens could take a port between FreePorts and the
// test's bind (it did: a server of a test cluster failed with "address
// already in use" while other packages' tests ran), and below the dynamic
// ports Nomad clients give tasks (20000–32000).
const freePortMin, freePortMax = 10000, 20000

// handedOut holds every port FreePorts returned in this test process. A
// test binds its ports some time after it is given them (a Nomad
// cluster's clients only once its server leads), and some never (an
// address kept free so that nothing answers there), so a port is handed
// out once: tests running in parallel never draw the same one.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free when
// it looked (see freePortMin) and that it never returned before in this
// process.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000+10*n {
			t.Fatalf("find %d free ports in [%d, %d): %d found in %d tries", n, freePortMin, freePortMax, len(ports), tries)
		}
		port := freePortMin + rand.IntN(freePortMax-freePortMin)
		if handedOut.ports[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken
		}
		l.Close()
		handedOut.ports[port] = true
		ports = append(ports, port)
	}
	return ports
}

// WaitFor polls check every 100ms until it returns nil, and fails the test
// with check's last error if that takes longer than timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	if err := Poll(timeout, what, check); err != nil {
		t.Fatal(err)
	}
}

// Poll is WaitFor for a goroutine other than the test's, which must not
// call t.Fatal: it returns the timeout as an error.
func Poll(timeout time.Duration, what string, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s: %w", timeout, what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// errNotYet is a check's answer while the awaited state has not come.
var errNotYet = errors.New("not yet")
