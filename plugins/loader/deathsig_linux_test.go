package loader

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"
)

// TestMain lets the test binary act as an agent that starts a plugin,
// prints its PID and waits to be killed (see TestLoader_PluginDiesWithAgent).
func TestMain(m *testing.M) {
	if bin := os.Getenv("CARAVAN_TEST_HOST_PLUGIN"); bin != "" {
		l, err := New(Config{Plugins: []*PluginConfig{{Name: "p", Path: bin}}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(l.external["p"].client.ReattachConfig().Pid)
		select {}
	}
	os.Exit(m.Run())
}

// TestLoader_PluginDiesWithAgent: a plugin does not outlive an agent
// killed with SIGKILL.
func TestLoader_PluginDiesWithAgent(t *testing.T) {
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), "CARAVAN_TEST_HOST_PLUGIN="+BuildPlugin(t, "examples/plugin-random"))
	out, err := host.StdoutPipe()
	must.NoError(t, err)
	must.NoError(t, host.Start())
	t.Cleanup(func() { host.Process.Kill(); host.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	must.NoError(t, err)
	pid, err := strconv.Atoi(line[:len(line)-1])
	must.NoError(t, err)
	must.NoError(t, syscall.Kill(pid, 0), must.Sprint("the plugin runs"))

	must.NoError(t, host.Process.Kill())
	host.Wait()
	must.Wait(t, wait.InitialSuccess(wait.ErrorFunc(func() error {
		if syscall.Kill(pid, 0) == nil {
			return fmt.Errorf("plugin %d still runs", pid)
		}
		return nil
	}), wait.Timeout(10*time.Second), wait.Gap(20*time.Millisecond)))
}
