//go:build !linux

package redistest

import "os/exec"

// dieWithParent is a no-op where the kernel cannot tie a child's life to its
// parent; Stop, and the tests' cleanups, still stop the server on a normal
// exit.
func dieWithParent(cmd *exec.Cmd) {}
