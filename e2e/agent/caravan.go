package agent

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// BuildCaravan builds the caravan binary of this checkout into a temporary
// folder and returns its path.
func BuildCaravan(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "caravan")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/caravan-sched/caravan/cmd/caravan")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build caravan: %v\n%s", err, out)
	}
	return bin
}

// PreviousRelease is the Caravan release upgrade tests start from, as
// tools/previous-release pins it.
type PreviousRelease struct {
	// Tag is the release's tag (v0.1.0), Commit its full commit.
	Tag, Commit string
	// Bin is its caravan binary, .tools/bin/caravan-previous.
	Bin string
}

// PreviousCaravan returns the previous release and the binary `make
// tools` built of it. It fails the test when tools/previous-release
// cannot be read, when the binary is missing, or when the binary says
// it was built from another commit (tools/previous-release moved on and
// `make tools` has not run since).
func PreviousCaravan(t testing.TB) PreviousRelease {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("previous release: %v", err)
	}
	var r PreviousRelease
	f, err := os.Open(filepath.Join(root, "tools", "previous-release"))
	if err != nil {
		t.Fatalf("previous release: %v", err)
	}
	defer f.Close()
	for s := bufio.NewScanner(f); s.Scan(); {
		if line := strings.TrimSpace(s.Text()); line != "" && !strings.HasPrefix(line, "#") {
			if fs := strings.Fields(line); len(fs) == 2 {
				r.Tag, r.Commit = fs[0], fs[1]
			}
			break
		}
	}
	if len(r.Commit) != 40 {
		t.Fatalf("tools/previous-release names no release: want a line \"<tag> <full commit>\"")
	}
	r.Bin = filepath.Join(root, ".tools", "bin", "caravan-previous")
	out, err := exec.Command(r.Bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("the previous release's caravan (%s %s) at %s: %v: run `make tools` (tools/build.sh previous) to build it%s", r.Tag, r.Commit, r.Bin, err, indent(out))
	}
	if want := "(" + r.Commit[:7] + ")"; !strings.Contains(string(out), want) {
		t.Fatalf("%s says %q, not built from %s (%s): run `make tools` to build the release tools/previous-release names", r.Bin, strings.TrimSpace(string(out)), r.Commit, r.Tag)
	}
	return r
}

// indent returns a command's output on lines of its own, or nothing.
func indent(out []byte) string {
	if s := strings.TrimSpace(string(out)); s != "" {
		return "\n\t" + strings.ReplaceAll(s, "\n", "\n\t")
	}
	return ""
}

// Version returns what `bin version` prints, as the agent's
// /v1/agent/self says it: "Caravan v0.1.0-dev (70b607f)".
func Version(t testing.TB, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	return strings.TrimSpace(string(out))
}

// Caravan is a `caravan` process: an agent, a collector.
type Caravan struct {
	proc *process
}

// StartCaravan runs `caravan agent` with args and stops it when the test
// ends.
func StartCaravan(t testing.TB, bin, name string, args ...string) *Caravan {
	t.Helper()
	return StartCaravanCommand(t, bin, name, append([]string{"agent"}, args...)...)
}

// StartCaravanCommand runs `caravan <args>`, such as `caravan collector`,
// and stops it when the test ends.
func StartCaravanCommand(t testing.TB, bin, name string, args ...string) *Caravan {
	t.Helper()
	return &Caravan{proc: start(t, name, bin, args...)}
}

// Kill ends the agent with SIGKILL, as a crash would, and waits for it.
func (c *Caravan) Kill() {
	_ = syscall.Kill(-c.proc.cmd.Process.Pid, syscall.SIGKILL)
	<-c.proc.exited
}

// Stop interrupts the agent, which leaves the cluster, and waits for it.
func (c *Caravan) Stop() { c.proc.stop() }

// Running returns an error once the agent has exited.
func (c *Caravan) Running() error { return c.proc.running() }

// Log returns what the agent has logged so far.
func (c *Caravan) Log() (string, error) {
	b, err := os.ReadFile(c.proc.logPath)
	return string(b), err
}
