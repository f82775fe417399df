package agent

import (
	"os/exec"
	"path/filepath"
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
