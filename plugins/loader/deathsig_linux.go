package loader

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the plugin when the agent dies, even
// by SIGKILL, so that no plugin process outlives it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
