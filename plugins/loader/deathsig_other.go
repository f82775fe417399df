//go:build !linux

package loader

import "os/exec"

// dieWithParent does nothing where the kernel cannot tie a child's life to
// its parent's: an agent killed there leaves its plugins running.
func dieWithParent(*exec.Cmd) {}
