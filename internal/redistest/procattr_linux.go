package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill redis-server if the program that started
// it dies without stopping it (a panic, a test timeout, a SIGKILL), so no
// server outlives it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
