package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill redis-server if the benchmark dies
// without running its cleanups, so no server outlives it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
