package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill redis-server if the test binary dies
// without running its cleanups (a panic, a test timeout), so no server
// outlives the tests that started it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
